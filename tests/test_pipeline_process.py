"""Pipelines whose iterations run in a process of their own (pipeline/_process.py): the same batches
as in the user's process, errors that name the operator and the file, no hang when the process
dies, and a consumer that holds the GIL does not hold the pipeline up."""
import os
import signal
import sys
import time

import numpy as np
import pytest

from penstock import _cuda, fn, pipeline_def, types
from penstock.pipeline import Pipeline
from penstock.pipeline._process import ENV, ProcessExecutor

from _util import write_smooth_jpegs


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return write_smooth_jpegs(tmp_path_factory.mktemp("photos"), 6, lambda i, c: (120 + 16 * i, 160 + 8 * c))


def train_pipe(root: str, device: str = "cpu", batch: int = 4, threads: int = 2, **kw) -> Pipeline:
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if device != "cpu" else None, seed=7, **kw)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if device != "cpu" else "cpu")
        images = fn.random_resized_crop(images, size=(48, 40))
        images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(), dtype=types.FLOAT,
                                          mean=[120.0] * 3, std=[60.0] * 3)
        return images, labels
    return pipe()


def host_batches(pipe: Pipeline, count: int) -> list:
    """``count`` iterations' outputs as numpy arrays, with the samples' source infos."""
    batches = []
    for _ in range(count):
        images, labels = pipe.run()
        batches.append((images.as_cpu().as_array(), labels.as_array(), [images.source_info(i) for i in range(4)]))
    return batches


def test_the_batches_are_the_ones_the_users_process_makes(photos, monkeypatch):
    monkeypatch.setenv(ENV, "off")
    here = host_batches(train_pipe(photos), 5)
    monkeypatch.setenv(ENV, "on")
    pipe = train_pipe(photos)
    pipe.build()
    assert isinstance(pipe._executor, ProcessExecutor)
    assert pipe.reader_meta("Reader")["epoch_size"] == 12
    elsewhere = host_batches(pipe, 5)
    for (a, la, sa), (b, lb, sb) in zip(here, elsewhere):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
        assert sa == sb and all(s.endswith(".jpg") for s in sa)
    stats = pipe.executor_statistics()
    assert stats["decoders.image#1"]["runs"] >= 5


def test_the_process_ends_with_the_pipeline(photos, monkeypatch):
    monkeypatch.setenv(ENV, "on")
    pipe = train_pipe(photos)
    pipe.run()
    child = pipe._executor.proc
    del pipe
    assert child.wait(10) == 0


def test_a_failing_sample_names_the_operator_and_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "on")
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"not a jpeg" * 20)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        return fn.decoders.image(jpegs)
    p = pipe()
    p.build()
    assert isinstance(p._executor, ProcessExecutor)
    with pytest.raises(RuntimeError, match=r"decoders\.image[\s\S]*broken\.jpg"):
        p.run()


def test_a_dead_process_fails_the_run_instead_of_hanging(photos, monkeypatch):
    monkeypatch.setenv(ENV, "on")
    pipe = train_pipe(photos)
    pipe.run()
    pipe._executor.proc.send_signal(signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="process"):
        for _ in range(3):
            pipe.run()
    assert time.monotonic() - start < 10


def test_what_needs_the_users_process_stays_in_it(monkeypatch):
    monkeypatch.setenv(ENV, "on")

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def fed():
        return fn.external_source(source=lambda: [np.zeros(3, np.uint8)] * 2, batch=True) + 1
    p = fed()
    with pytest.warns(RuntimeWarning, match=f"{ENV}=on, but the pipeline runs in this process: its inputs are fed"):
        p.build()
    assert not isinstance(p._executor, ProcessExecutor)
    np.testing.assert_array_equal(p.run()[0].as_array(), np.ones((2, 3)))


def test_by_default_the_pipeline_runs_in_the_users_process(photos, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    pipe = train_pipe(photos)
    pipe.build()
    assert not isinstance(pipe._executor, ProcessExecutor)


def test_the_profiler_keeps_a_pipeline_in_the_users_process(photos, monkeypatch):
    from penstock import profiler
    monkeypatch.setenv(ENV, "on")
    result = profiler.profile(train_pipe(photos), batches=2, warmup=1)
    assert result is not None
    built = train_pipe(photos)
    built.build()
    with pytest.raises(ValueError, match=ENV):
        profiler.profile(built, batches=1, warmup=0)


@pytest.mark.parametrize("where", ["off", "on"])
def test_a_consumer_that_holds_the_gil_holds_up_only_a_pipeline_in_its_own_process(photos, monkeypatch, where):
    """The consumer schedules two batches, then runs Python that never lets another thread take
    the GIL (a switch interval of minutes) for a few of the pipeline's periods: in the user's process
    the pipeline's threads wait for it, in a process of its own the batches are made meanwhile."""
    monkeypatch.setenv(ENV, where)
    pipe = train_pipe(photos, batch=8, threads=1)
    pipe.schedule_run()  # warm: the first iterations
    while not pipe.empty():
        pipe.outputs()
    pipe.schedule_run()
    period = time.perf_counter()
    pipe.outputs()
    period = time.perf_counter() - period
    pipe.schedule_run()
    pipe.schedule_run()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(300.0)
    try:
        end = time.perf_counter() + max(0.5, 6 * period)
        while time.perf_counter() < end:
            pass
    finally:
        sys.setswitchinterval(interval)
    start = time.perf_counter()
    for _ in range(2):
        pipe.outputs()
    fetched = time.perf_counter() - start
    if where == "on":
        assert fetched < 0.5 * period + 0.05, (fetched, period)
    else:
        assert fetched > 0.5 * period, (fetched, period)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
def test_gpu_batches_come_through_cuda_ipc_and_stay_the_users(photos, monkeypatch):
    monkeypatch.setenv(ENV, "off")
    here = host_batches(train_pipe(photos, "gpu"), 6)
    monkeypatch.setenv(ENV, "on")
    pipe = train_pipe(photos, "gpu")
    pipe.build()
    assert isinstance(pipe._executor, ProcessExecutor)
    kept = [pipe.run() for _ in range(6)]  # more than the process's slots: each batch is the user's own
    for (a, la, sa), (images, labels) in zip(here, kept):
        assert images.stream is pipe.output_stream()
        # the mixed decoder's split between the host and the GPU follows measured rates, and their
        # IDCTs differ by a level or two: close, not equal, where a sample went the other way
        difference = np.abs(a - images.as_cpu().as_array())
        assert difference.max() <= 12 / 60 and difference.mean() < 1 / 60  # as GPU against host decoding
        np.testing.assert_array_equal(la, labels.as_array())
        assert sa == [images.source_info(i) for i in range(4)]
    child = pipe._executor.proc
    del pipe, kept
    assert child.wait(10) == 0
