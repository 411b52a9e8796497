"""Mixed decoders with decoder processes beside the in-process one (_cuda._decode_process): parts of
each batch decode in child processes and reach the output through CUDA IPC; the result equals the
CPU decoder's, also after a child died. Needs CuPy, nvImageCodec and a CUDA device."""
import os
import signal
import time
import warnings

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, pipeline_def, types  # noqa: E402
from penstock._cuda import _decode_process  # noqa: E402
from penstock.operators import _image_decode_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]


def _jpegs(count):
    from test_gpu_operators import _jpegs as jpegs_and_a_png
    return jpegs_and_a_png(count)[:count]


@pytest.fixture
def processes(monkeypatch):
    """Two decoder processes from a pipeline's first batch on; the children made, and the parts
    they decoded (samples written)."""
    monkeypatch.setenv(_decode_process.ENV_PROCESSES, "2")
    monkeypatch.setattr(_image_decode_mixed, "PROCESSES_AFTER_BATCHES", 0)
    made, written = [], []
    init, decode = _decode_process.DecoderProcess.__init__, _decode_process.DecoderProcess.decode

    def spy_init(self, *args, **kw):
        init(self, *args, **kw)
        made.append(self)

    def spy_decode(self, *args):
        decoded, seconds = decode(self, *args)
        written.append(int(decoded.sum()))
        return decoded, seconds
    monkeypatch.setattr(_decode_process.DecoderProcess, "__init__", spy_init)
    monkeypatch.setattr(_decode_process.DecoderProcess, "decode", spy_decode)
    return made, written


def _pipe(device, batches, batch_size):
    on = {"device": device, **({"jpeg_fancy_upsampling": True} if device == "mixed" else {})}

    @pipeline_def(batch_size=batch_size, num_threads=4, device_id=0, seed=11, prefetch_queue_depth=2)
    def pipe():
        jpegs = fn.external_source(source=lambda info: batches[info.iteration % len(batches)], batch_info=True)
        return (fn.decoders.image(jpegs, **on), fn.decoders.image_random_crop(jpegs, **on, seed=3),
                fn.decoders.image(jpegs, output_type=types.BGR, dtype=types.FLOAT, **on))
    return pipe()


def _host(outputs):
    return [[np.asarray(o.as_cpu().at(i)) for i in range(len(o))] for o in outputs]


def _assert_alike(cpu, mixed):
    for c_out, g_out in zip(cpu, mixed):
        for c, g in zip(c_out, g_out):
            assert c.shape == g.shape and c.dtype == g.dtype
            diff = np.abs(c.astype(np.float64) - g.astype(np.float64)) * (255 if c.dtype.kind == "f" else 1)
            assert diff.mean() < 1.0 and diff.max() <= 12


def _run_until_the_processes_decode(pipe, made, written, extra):
    """Iterations (each on the host) until every decoder process started and they wrote samples,
    then ``extra`` more."""
    outs, deadline = [], time.monotonic() + 90
    while not made or not all(p.usable for p in made) or sum(written) == 0:
        assert time.monotonic() < deadline, "the decoder processes never took a part"
        outs.append(_host(pipe.run()))
    for _ in range(extra):
        outs.append(_host(pipe.run()))
    return outs


def test_parts_decoded_in_processes_match_the_cpu_decoder(processes):
    made, written = processes
    data = _jpegs(12)
    batches = [[data[(i + k) % 12] for k in range(10)] for i in range(5)]
    mixed = _pipe("mixed", batches, 10)
    outs = _run_until_the_processes_decode(mixed, made, written, extra=6)
    assert len(made) == 6  # two per decoder operator
    before = sum(written)
    cpu = _pipe("cpu", batches, 10)
    for got in outs:
        _assert_alike(_host(cpu.run()), got)
    assert sum(written) == before  # the CPU pipeline has none
    pids = [p.proc.pid for p in made]
    del mixed
    import gc
    gc.collect()
    for pid in pids:  # the children end with the pipeline
        deadline = time.monotonic() + 20
        while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
            assert time.monotonic() < deadline, f"decoder process {pid} outlived its pipeline"
            time.sleep(0.1)


def test_a_killed_decoder_process_leaves_its_share_to_the_others_with_a_warning(processes):
    made, written = processes
    data = _jpegs(8)
    batches = [data]
    mixed = _pipe("mixed", batches, 8)
    before = _run_until_the_processes_decode(mixed, made, written, extra=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for p in made:
            os.kill(p.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(p.usable for p in made):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        got = [_host(mixed.run()) for _ in range(4)]
    assert any("a decoder process failed" in str(w.message) for w in caught)
    cpu = _pipe("cpu", batches, 8)
    for _ in before:  # the same iterations' random crops
        cpu.run()
    for g in got:
        _assert_alike(_host(cpu.run()), g)
