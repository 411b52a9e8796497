"""Faults while a pipeline runs: each ends in a clear error or a clean stop within seconds (never
a hang), and a new pipeline can be built and run in the same process afterwards."""
import contextlib
import errno
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest
from PIL import Image

from penstock import _engine, fn, pipeline_def
from penstock.plugin.pytorch import DALIGenericIterator

CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")


@contextlib.contextmanager
def within(seconds: float):
    """Fails the test (instead of hanging it) when the block takes longer than ``seconds``."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _images(tmp_path, n):
    paths = []
    for i in range(n):
        p = str(tmp_path / f"img{i:03d}.jpg")
        Image.fromarray(np.full((8, 8, 3), i * 15 % 256, np.uint8)).save(p)
        paths.append(p)
    return paths


def _pipe(paths, batch=2):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        jpegs, labels = fn.readers.file(files=paths, name="Reader")
        return fn.resize(fn.decoders.image(jpegs), size=(4, 4)), labels

    return p()


def _runs_again(paths):
    """A new pipeline over the given (healthy) files builds and runs."""
    pipe = _pipe(paths)
    images, labels = pipe.run()
    assert len(images) == 2 and np.asarray(images.at(0)).shape == (4, 4, 3)


def _run_until_error(pipe, runs=10):
    with within(10), pytest.raises(RuntimeError) as info:
        for _ in range(runs):
            pipe.run()
    return str(info.value)


@pytest.mark.parametrize("fault", ["deleted", "directory"])
def test_file_gone_mid_epoch(tmp_path, fault):
    paths = _images(tmp_path, 8)
    pipe = _pipe(paths)
    pipe.run()  # reading has started (and prefetched ahead)
    os.remove(paths[6])
    if fault == "directory":
        os.mkdir(paths[6])
    text = _run_until_error(pipe)
    assert "readers.file" in text and "img006.jpg" in text
    del pipe
    _runs_again(paths[:6])


def test_fifo_is_an_error_not_a_hang(tmp_path):
    paths = _images(tmp_path, 4)
    os.remove(paths[1])
    os.mkfifo(paths[1])  # opening it for reading would block until a writer comes
    text = _run_until_error(_pipe(paths))
    assert "img001.jpg" in text and "not a regular file" in text
    _runs_again(paths[2:])


def test_injected_io_failure(tmp_path, monkeypatch):
    paths = _images(tmp_path, 8)
    real = _engine.read_files_later  # the reader reads ahead on its native thread
    calls = []

    class FailedRead:
        def result(self):
            raise OSError(errno.EIO, "Input/output error (injected)")

    def failing(background, pool, files, indices):
        calls.append(len(indices))
        return FailedRead() if len(calls) == 3 else real(background, pool, files, indices)

    monkeypatch.setattr(_engine, "read_files_later", failing)
    text = _run_until_error(_pipe(paths))
    assert "readers.file" in text and "Input/output error (injected)" in text
    monkeypatch.undo()
    _runs_again(paths)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads_of(pipe) -> list:
    """The threads a pipeline started: its stage workers and its readers' read-ahead threads."""
    readers = [op for stage in pipe._executor.stages for op in stage if getattr(op, "_io", None) is not None]
    return list(pipe._executor._threads) + [t for op in readers for t in op._io.threads]


def test_exception_in_training_loop_while_prefetching(tmp_path):
    # The pipeline's own threads and its collection are checked, not the process's thread count:
    # pipelines of earlier tests in the same process may start or end threads meanwhile.
    paths = _images(tmp_path, 16)
    gc.collect()
    fds = _open_fds()
    seen: dict = {}

    def train():
        pipe = _pipe(paths)
        loader = DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader")
        seen["pipe"] = weakref.ref(pipe)
        for step, batch in enumerate(loader):
            assert batch[0]["data"].shape == (2, 4, 4, 3)
            if step == 2:
                seen["threads"] = _threads_of(pipe)
                raise FloatingPointError("loss is nan")

    with within(10):
        try:
            train()
        except FloatingPointError:
            pass
        else:
            raise AssertionError("the training loop's exception was lost")
        deadline = time.monotonic() + 5
        while (seen["pipe"]() is not None or any(t.is_alive() for t in seen["threads"])) \
                and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
    assert seen["pipe"]() is None, "the dropped iterator kept its pipeline alive"
    assert len(seen["threads"]) >= 2  # stage workers and the reader's read-ahead
    alive = [t.name for t in seen["threads"] if t.is_alive()]
    assert not alive, f"the dropped iterator left threads running: {alive}"
    assert _open_fds() <= fds, "the dropped iterator left files open"
    _runs_again(paths)


def _script(body: str, timeout: float = 60) -> str:
    env = dict(os.environ, PYTHONPATH=CORE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # the interrupt tests need Python's own SIGINT handler, which a child started with SIGINT ignored
    # (as `make test &` starts the suite from a script) would not install
    body = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n" + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", body], env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


_SLOW_PIPE = """
    import os, signal, threading, time
    import numpy as np
    from penstock import fn, pipeline_def

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def slow():
        x = fn.external_source(source=lambda: [np.full((512, 512, 3), 7, np.uint8)] * 4, layout="HWC")
        for _ in range(6):
            x = fn.gaussian_blur(x, window_size=15)
        return x

    def interrupt_after(seconds):
        sent = []
        def fire():
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Timer(seconds, fire).start()
        return sent
"""


def test_sigint_during_run():
    out = _script(_SLOW_PIPE + """
    pipe = slow()
    pipe.run()
    sent = interrupt_after(0.3)
    try:
        while True:
            pipe.run()
    except KeyboardInterrupt:
        print("stopped after", round(time.monotonic() - sent[0], 2), flush=True)
    del pipe
    assert len(slow().run()[0]) == 4
    print("done", flush=True)
    """)
    assert "done" in out
    assert float(out.split("stopped after")[1].split()[0]) < 3


def test_sigint_during_pytorch_iterator():
    out = _script(_SLOW_PIPE + """
    from penstock.plugin.pytorch import DALIGenericIterator
    loader = DALIGenericIterator(slow(), ["x"], size=10 ** 6)
    sent = interrupt_after(0.5)
    try:
        for batch in loader:
            assert batch[0]["x"].shape == (4, 512, 512, 3)
    except KeyboardInterrupt:
        print("stopped after", round(time.monotonic() - sent[0], 2), flush=True)
    del loader, batch
    loader = DALIGenericIterator(slow(), ["x"], size=8)
    assert sum(b[0]["x"].shape[0] for b in loader) == 8
    print("done", flush=True)
    """)
    assert "done" in out
    assert float(out.split("stopped after")[1].split()[0]) < 3
