"""Parallel external source (api.md §11): worker processes, shared memory, errors, cleanup."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import traceback
import time
import types as pytypes

import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, pickling, types
from penstock.pipeline import Pipeline

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pipe(graph, batch_size=4, **kw):
    kw.setdefault("num_threads", 2)
    kw.setdefault("py_num_workers", 2)

    @pipeline_def(batch_size=batch_size, device_id=None, **kw)
    def p():
        out = graph()
        return out if isinstance(out, tuple) else (out,)

    return p()


def _vals(tl):
    return [tl.at(i).tolist() for i in range(len(tl))]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_dead(pids, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def sample_cb(si):
    """Per-sample source, a pure function of the index; ends the epoch after 10 samples."""
    if si.idx_in_epoch >= 10:
        raise StopIteration
    return np.full((si.idx_in_epoch % 3 + 1, 2), si.idx_in_epoch, np.int32), np.array([si.epoch_idx], np.int64)


def batch_cb(info):
    return [np.full(3, info.iteration * 10 + k + info.epoch_idx * 1000, np.int16) for k in range(4)]


def _expected_sample(i):
    return np.full((i % 3 + 1, 2), i, np.int32)


def _epoch(pipe):
    got = []
    try:
        while True:
            got.append(pipe.run())
    except StopIteration:
        pipe.reset()
    return got


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_per_sample_matches_serial_over_epochs(method):
    par = _pipe(lambda: tuple(fn.external_source(sample_cb, num_outputs=2, batch=False, parallel=True,
                                                 dtype=[types.INT32, types.INT64])),
                py_start_method=method)
    ser = _pipe(lambda: tuple(fn.external_source(sample_cb, num_outputs=2, batch=False)))
    for epoch in range(2):
        a, b = _epoch(par), _epoch(ser)
        assert len(a) == len(b) == 2  # samples 8, 9 make an incomplete batch: dropped
        for (pa, pl), (sa, sl) in zip(a, b):
            assert _vals(pa) == _vals(sa) and _vals(pl) == [[epoch]] * 4 == _vals(sl)
        for i, (pa, _) in enumerate(a):
            for j in range(4):
                np.testing.assert_array_equal(pa.at(j), _expected_sample(4 * i + j))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_batch_callable_with_batch_info(method):
    pipe = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True, prefetch_queue_depth=3),
                 py_start_method=method)
    for it in range(5):
        (out,) = pipe.run()
        assert _vals(out) == [[it * 10 + k] * 3 for k in range(4)]


def _gen():
    for i in range(3):
        yield [np.array([i, k], np.int32) for k in range(2)]


@pytest.mark.parametrize("cycle, expected", [(None, [0, 1, 2, "S", "S", "S"]),
                                             (True, [0, 1, 2, 0, 1, 2, 0]),
                                             ("raise", [0, 1, 2, "S", 0, 1, 2, "S", 0])])
def test_generator_function_cycle(cycle, expected):
    pipe = _pipe(lambda: fn.external_source(_gen, cycle=cycle, parallel=True, prefetch_queue_depth=2),
                 batch_size=2)
    seq = []
    for _ in range(len(expected)):
        try:
            seq.append(int(pipe.run()[0].at(0)[0]))
        except StopIteration:
            seq.append("S")
            pipe.reset()
    assert seq == expected


def test_ops_parallel_defaults_to_per_sample():
    es = ops.ExternalSource(source=lambda si: np.array([si.idx_in_batch], np.int32), parallel=True)
    pipe = _pipe(lambda: es(), py_start_method="spawn")
    assert _vals(pipe.run()[0]) == [[0], [1], [2], [3]]


# ---- DALI's rejections ---------------------------------------------------------------------

def test_rejections():
    with pytest.raises(TypeError, match="exactly one argument"):
        fn.external_source(lambda: [np.zeros(1)], parallel=True)
    with pytest.raises(TypeError, match="batch mode"):
        fn.external_source(_gen, batch=False, parallel=True)
    with pytest.raises(TypeError, match="batch mode"):
        fn.external_source([np.zeros(1)], batch=False, parallel=True)
    with pytest.raises(ValueError, match="no_copy=False"):
        fn.external_source(batch_cb, parallel=True, no_copy=False)
    pipe = _pipe(lambda: fn.external_source(batch_cb, parallel=True, batch_info=True), py_num_workers=0)
    with pytest.raises(RuntimeError, match="py_num_workers"):
        pipe.build()


# ---- shared memory -------------------------------------------------------------------------

def big_cb(si):
    return np.full((si.iteration + 1) * 50_000, si.idx_in_batch, np.uint8)


@pytest.mark.parametrize("workers", [1, 2])  # the worker grows the region / the pipeline places two parts
def test_slots_grow_on_demand_and_statistics(workers):
    pipe = _pipe(lambda: fn.external_source(big_cb, batch=False, parallel=True, bytes_per_sample_hint=1000),
                 py_num_workers=workers, batch_size=2)
    assert pipe.external_source_shm_statistics() == {"capacities": [], "per_sample_capacities": []}
    for it in range(3):
        (out,) = pipe.run()
        for j in range(2):
            np.testing.assert_array_equal(out.at(j), np.full((it + 1) * 50_000, j, np.uint8))
    stats = pipe.external_source_shm_statistics()
    assert stats["capacities"] and max(stats["capacities"]) >= 2 * 150_000
    assert all(c >= p for c, p in zip(stats["capacities"], stats["per_sample_capacities"]))
    assert all(p * 2 == c for c, p in zip(stats["capacities"], stats["per_sample_capacities"]))


def _in_shared_memory(tl):
    """Whether the batch's buffer lies inside one of this process's external-source shm mappings."""
    start = tl.data_ptr()
    end = start + tl._buf.nbytes
    with open("/proc/self/maps") as f:
        spans = [[int(x, 16) for x in line.split()[0].split("-")] for line in f
                 if "penstock-external-source" in line]
    return any(lo <= start and end <= hi for lo, hi in spans)


def two_output_cb(si):
    """Sizes differ per sample, so the parts of a batch that two workers make differ in size too."""
    return (np.full((si.idx_in_batch + 1) * 1000 + 7, si.idx_in_epoch % 251, np.uint8),
            np.full((2, si.idx_in_batch + 1), si.idx_in_epoch, np.float64))


def test_one_copy_from_worker_array_to_batch(monkeypatch):
    from penstock import _engine
    calls = []
    for name in ("gather", "copy"):  # copies made in this process (the workers are other processes)
        real = getattr(_engine, name)
        monkeypatch.setattr(_engine, name, lambda *a, _real=real, _name=name: (calls.append(_name), _real(*a))[1])
    pipe = _pipe(lambda: tuple(fn.external_source(two_output_cb, num_outputs=2, batch=False, parallel=True)),
                 batch_size=5, py_num_workers=2, prefetch_queue_depth=1)
    per_batch = sum((j + 1) * 1000 + 7 + 2 * (j + 1) * 8 for j in range(5))  # bytes of both outputs
    for it in range(4):
        data, floats = pipe.run()
        for j in range(5):
            i = it * 5 + j
            np.testing.assert_array_equal(data.at(j), np.full((j + 1) * 1000 + 7, i % 251, np.uint8))
            np.testing.assert_array_equal(floats.at(j), np.full((2, j + 1), i, np.float64))
        # both workers' parts landed at their final offsets of one packed buffer in shared memory
        assert data._is_packed() and floats._is_packed()
        assert _in_shared_memory(data) and _in_shared_memory(floats)
    assert calls == []  # this process copied nothing
    pool = pipe._py_pool
    assert pool.copied_samples == 20
    # the one copy: each worker's arrays into the region, for the 4 batches and the one computed ahead
    assert pool.copied_bytes in (4 * per_batch, 5 * per_batch)


def iteration_cb(si):
    return np.full(10_000, si.iteration, np.int32)


def test_region_reused_only_after_the_batch_is_freed():
    import gc
    pipe = _pipe(lambda: fn.external_source(iteration_cb, batch=False, parallel=True), py_num_workers=2,
                 prefetch_queue_depth=1)
    held = [pipe.run()[0] for _ in range(4)]
    view = held[1].as_array()
    regions = len(pipe.external_source_shm_statistics()["capacities"])
    for it, tl in enumerate(held):
        assert _vals(tl)[0][:2] == [it, it]
    del held
    gc.collect()
    for _ in range(6):
        pipe.run()
    assert len(pipe.external_source_shm_statistics()["capacities"]) == regions  # freed regions reused
    np.testing.assert_array_equal(view, np.full((4, 10_000), 1, np.int32))  # a live view is never reused
    pipe._shutdown()
    np.testing.assert_array_equal(view, np.full((4, 10_000), 1, np.int32))  # nor unmapped


def test_epochs_with_dropped_parts_reuse_their_regions():
    # StopIteration in one part of a batch drops the other part unwritten, and a new epoch
    # discards batches computed ahead: their regions come back, none is leaked
    pipe = _pipe(lambda: tuple(fn.external_source(sample_cb, num_outputs=2, batch=False, parallel=True,
                                                  prefetch_queue_depth=2)))
    counts = []
    for _ in range(6):
        batches = _epoch(pipe)
        assert [int(b[0].at(0)[0, 0]) for b in batches] == [0, 4]
        counts.append(len(pipe.external_source_shm_statistics()["capacities"]))
    assert counts[-1] == counts[1]


def test_no_descriptor_or_thread_outlives_the_pipeline():
    import gc
    def receivers():
        return len([t for t in threading.enumerate() if t.name == "penstock-es-receiver"])
    gc.collect()
    fds, threads = len(os.listdir("/proc/self/fd")), receivers()
    pipe = _pipe(lambda: fn.external_source(big_cb, batch=False, parallel=True), prefetch_queue_depth=2)
    for _ in range(3):
        assert _in_shared_memory(pipe.run()[0])
    del pipe
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds
    assert receivers() == threads


# ---- errors --------------------------------------------------------------------------------

def failing_cb(si):
    if si.iteration == 1 and si.idx_in_batch == 2:
        raise KeyError("no such sample")
    return np.zeros(1, np.uint8)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_exception_reaches_run_with_traceback(method):
    pipe = _pipe(lambda: fn.external_source(failing_cb, batch=False, parallel=True, name="src"),
                 py_start_method=method, prefetch_queue_depth=1)
    pipe.run()
    with pytest.raises(KeyError) as info:
        pipe.run()
    msg = str(info.value)
    assert "'src'" in msg and "iteration 1" in msg and "sample 2" in msg
    shown = "".join(traceback.format_exception(info.value))
    assert "Traceback in the worker process" in shown and 'in failing_cb\n    raise KeyError' in shown
    assert isinstance(info.value.__cause__, KeyError)


def mixed_cb(si):
    return np.zeros(2, np.uint8 if si.idx_in_batch < 2 else np.int32)


def test_mixed_dtypes_across_workers_name_the_source():
    pipe = _pipe(lambda: fn.external_source(mixed_cb, batch=False, parallel=True, name="mix"))
    with pytest.raises(RuntimeError, match="'mix'"):
        pipe.run()


def slow_cb(si):
    time.sleep(0.05)
    return np.zeros(4, np.uint8)


def test_killed_worker_reported_quickly_and_nothing_hangs():
    pipe = _pipe(lambda: fn.external_source(slow_cb, batch=False, parallel=True))
    pipe.run()
    pids = pipe._py_pool.pids()
    os.kill(pids[0], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="worker process .* killed by signal 9"):
        for _ in range(10):
            pipe.run()
    assert time.monotonic() - start < 5
    assert _wait_dead(pids)
    with pytest.raises(RuntimeError, match="shut down"):  # later runs fail at once, never hang
        pipe.run()


def dying_cb(si):
    if si.iteration == 1:
        sys.stderr.write("dying_cb: the disk went away\n")
        sys.stderr.flush()
        os._exit(3)
    return np.zeros(4, np.uint8)


def crashing_cb(si):
    if si.iteration == 1:
        import ctypes
        ctypes.string_at(0)  # SIGSEGV
    return np.zeros(4, np.uint8)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_dead_workers_stderr_is_in_the_error(method, capfd):
    """A worker that ends itself or crashes: the error quotes what it printed, and faulthandler's
    stacks of a fatal signal; its output still reaches this process's standard error."""
    pipe = _pipe(lambda: fn.external_source(dying_cb, batch=False, parallel=True), py_start_method=method)
    with pytest.raises(RuntimeError, match="exited with code 3") as info:
        for _ in range(4):
            pipe.run()
    assert "its last output on standard error:\ndying_cb: the disk went away" in str(info.value)
    assert "dying_cb: the disk went away" in capfd.readouterr().err

    pipe = _pipe(lambda: fn.external_source(crashing_cb, batch=False, parallel=True), py_start_method=method)
    with pytest.raises(RuntimeError, match="killed by signal 11") as info:
        for _ in range(4):
            pipe.run()
    assert "Segmentation fault" in str(info.value) and "in crashing_cb" in str(info.value)


def failing_loads(blob):
    raise ValueError("the sources cannot be unpickled here")


def test_a_worker_failing_at_start_names_the_cause():
    pipe = _pipe(lambda: fn.external_source(slow_cb, batch=False, parallel=True), py_start_method="spawn",
                 py_callback_pickler=pytypes.SimpleNamespace(dumps=pickling.dumps, loads=failing_loads))
    with pytest.raises(RuntimeError, match="exited with code 1") as info:
        pipe.run()
    assert "ValueError: the sources cannot be unpickled here" in str(info.value)
    assert "Traceback" in str(info.value)


def test_workers_end_with_pipeline_gc_mid_epoch():
    import gc
    pipe = _pipe(lambda: fn.external_source(slow_cb, batch=False, parallel=True))
    pipe.run()
    pids = pipe._py_pool.pids()
    assert all(_alive(p) for p in pids)
    del pipe
    gc.collect()
    assert _wait_dead(pids)


def test_shm_segments_are_anonymous():
    pipe = _pipe(lambda: fn.external_source(big_cb, batch=False, parallel=True))
    before = set(os.listdir("/dev/shm"))
    pipe.run()
    assert set(os.listdir("/dev/shm")) == before  # nothing named that could leak
    pids = pipe._py_pool.pids()
    pipe._shutdown()
    assert _wait_dead(pids)


def test_sigint_in_parent_leaves_no_worker():
    script = textwrap.dedent(f"""
        import signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored
        sys.path.insert(0, {os.path.join(_ROOT, 'core')!r})
        import numpy as np
        from penstock import fn, pipeline_def

        def cb(si):
            time.sleep(0.02)
            return np.zeros(8, np.uint8)

        @pipeline_def(batch_size=4, num_threads=1, device_id=None, py_num_workers=2)
        def p():
            return fn.external_source(cb, batch=False, parallel=True)

        pipe = p()
        pipe.build()
        print(*pipe._py_pool.pids(), flush=True)
        while True:
            pipe.run()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pids = [int(x) for x in proc.stdout.readline().split()]
        assert len(pids) == 2
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()  # a failed test leaves no endless loop behind
    assert b"KeyboardInterrupt" in err
    assert _wait_dead(pids)


# ---- the workers live as long as the pipeline's process, not the thread that built it --------

@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pipeline_built_in_a_thread_that_exits(method):
    """Servers and frameworks build pipelines in helper threads (here one that also runs the first
    iteration, so it ends after the workers are up): the workers outlive the thread."""
    pipe = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True), py_start_method=method)
    first = []
    builder = threading.Thread(target=lambda: first.append(pipe.run()))
    builder.start()
    builder.join()
    pids = pipe._py_pool.pids()
    outs = first + [pipe.run() for _ in range(3)]
    for it, (out,) in enumerate(outs):
        assert _vals(out) == [[it * 10 + k] * 3 for k in range(4)]
    assert all(_alive(p) for p in pids)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_end_when_the_parent_process_is_killed(method, tmp_path):
    """kill -9 of the pipeline's process ends its workers, also while they run a source that does not
    return and while a process forked from it after the workers started lives on."""
    script = tmp_path / "parent.py"  # a file: spawned workers import the source from it
    script.write_text(textwrap.dedent(f"""
        import os, sys, threading, time
        sys.path.insert(0, {os.path.join(_ROOT, 'core')!r})
        import numpy as np
        from penstock import fn, pipeline_def

        def cb(iteration):
            if iteration >= 1:
                time.sleep(3600)  # both workers are inside the source when the parent dies
            return np.zeros((4, 8), np.uint8)

        @pipeline_def(batch_size=4, num_threads=1, device_id=None, py_num_workers=2,
                      py_start_method={method!r}, prefetch_queue_depth=1)
        def p():
            return fn.external_source(cb, parallel=True, prefetch_queue_depth=2)

        if __name__ == "__main__":
            pipe = p()
            builder = threading.Thread(target=pipe.run)  # builds the pipeline, runs iteration 0
            builder.start()
            builder.join()
            child = os.fork()
            if child == 0:  # a process forked after the workers, which outlives the parent
                time.sleep(120)
                os._exit(0)
            print(*pipe._py_pool.pids(), child, flush=True)
            time.sleep(3600)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    *pids, child = [int(x) for x in proc.stdout.readline().split()] or [0]
    try:
        assert len(pids) == 2, proc.stderr.read().decode()[-2000:]
        assert all(_alive(p) for p in pids)
        proc.kill()
        proc.wait(30)
        assert _wait_dead(pids, timeout=30)
    finally:
        for pid in [proc.pid, child, *pids]:
            if pid and _alive(pid):
                os.kill(pid, signal.SIGKILL)


# ---- start_py_workers, fork after CUDA ------------------------------------------------------

def test_start_py_workers_before_build():
    pipe = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True))
    pipe.start_py_workers()
    pids = pipe._py_pool.pids()
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    pipe.build()
    assert pipe._py_pool.pids() == pids
    assert _vals(pipe.run()[0])[0] == [0] * 3


_TORCH_WITH_CONTEXT = pytypes.SimpleNamespace(cuda=pytypes.SimpleNamespace(is_initialized=lambda: True))
_CUPY_WITH_CONTEXT = pytypes.SimpleNamespace(
    get_default_memory_pool=lambda: pytypes.SimpleNamespace(total_bytes=lambda: 512))


@pytest.mark.parametrize("module, fake", [("torch", _TORCH_WITH_CONTEXT), ("cupy", _CUPY_WITH_CONTEXT)])
def test_fork_after_cuda_context_is_an_error(monkeypatch, module, fake):
    monkeypatch.setitem(sys.modules, module, fake)
    pipe = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True))
    with pytest.raises(RuntimeError, match="start_py_workers.*spawn"):
        pipe.start_py_workers()
    spawn = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True), py_start_method="spawn")
    spawn.start_py_workers()  # spawn is fine
    assert _vals(spawn.run()[0])[1] == [1] * 3


def _cuda_device() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, driver or device
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_device(), reason="needs a CUDA device")
def test_fork_after_a_real_cuda_context_is_an_error():
    # a fresh interpreter holding a CUDA context (made through the driver API): fork is refused
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(_ROOT, 'core')!r})
        import ctypes
        import numpy as np
        libcuda = ctypes.CDLL("libcuda.so.1")
        assert libcuda.cuInit(0) == 0
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p(0)
        assert libcuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
        assert libcuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
        assert libcuda.cuCtxSetCurrent(ctx) == 0
        from penstock import fn, pipeline_def

        def cb(si):
            return np.zeros(1)

        @pipeline_def(batch_size=2, num_threads=1, device_id=None, py_num_workers=1)
        def p():
            return fn.external_source(cb, batch=False, parallel=True)
        try:
            p().start_py_workers()
        except RuntimeError as e:
            print("REFUSED", e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "REFUSED" in out.stdout and "start_py_workers" in out.stdout, out.stderr


# ---- pickling for spawn --------------------------------------------------------------------

def test_local_function_and_lambda_reach_spawned_workers():
    offset = 5

    def local_cb(si):
        return np.array([si.idx_in_epoch + offset], np.int32)
    pipe = _pipe(lambda: fn.external_source(local_cb, batch=False, parallel=True), py_start_method="spawn")
    assert _vals(pipe.run()[0]) == [[5], [6], [7], [8]]
    pipe = _pipe(lambda: fn.external_source(lambda i: [np.array([i], np.int8)] * 4, parallel=True),
                 py_start_method="spawn")
    pipe.run()
    assert _vals(pipe.run()[0]) == [[1]] * 4


def test_pickle_by_value_global_function_reaches_spawned_workers():
    mod = pytypes.ModuleType("penstock_test_unimportable")
    exec("import numpy as np\nK = 11\ndef cb(si):\n    return np.array([si.idx_in_batch * K], np.int32)\n",
         mod.__dict__)
    sys.modules[mod.__name__] = mod  # importable here, not in a spawned worker
    try:
        pickling.pickle_by_value(mod.cb)
        pipe = _pipe(lambda: fn.external_source(mod.cb, batch=False, parallel=True), py_start_method="spawn")
        pipe.start_py_workers()
    finally:
        del sys.modules[mod.__name__]
    assert _vals(pipe.run()[0]) == [[0], [11], [22], [33]]


class _CountingPickler:
    """A py_callback_pickler object: counts its use, delegates to penstock.pickling."""
    dumped = 0

    def dumps(self, obj, **kw):
        type(self).dumped += 1
        assert kw == {"protocol": 4}
        return pickling.dumps(obj, **kw)

    def loads(self, data, **kw):
        return pickling.loads(data, **kw)


def test_custom_pickler_tuple_with_kwargs():
    pipe = _pipe(lambda: fn.external_source(batch_cb, batch_info=True, parallel=True),
                 py_start_method="spawn", py_callback_pickler=(_CountingPickler(), {"protocol": 4}, {}))
    assert _vals(pipe.run()[0])[3] == [3] * 3
    assert _CountingPickler.dumped == 1


@pytest.mark.parametrize("name", ["dill", "cloudpickle"])
def test_third_party_picklers(name):
    mod = pytest.importorskip(name)
    scale = 3
    pipe = _pipe(lambda: fn.external_source(lambda si: np.array([si.idx_in_batch * scale]), batch=False,
                                            parallel=True), py_start_method="spawn", py_callback_pickler=mod)
    assert _vals(pipe.run()[0]) == [[0], [3], [6], [9]]


def test_plain_pickle_cannot_send_a_lambda():
    import pickle
    pipe = _pipe(lambda: fn.external_source(lambda si: np.zeros(1), batch=False, parallel=True),
                 py_start_method="spawn", py_callback_pickler=pickle)
    with pytest.raises(RuntimeError, match="could not be pickled"):
        pipe.build()


# ---- prefetching ---------------------------------------------------------------------------

class _LoggingSource:
    def __init__(self, path):
        self.path = path

    def __call__(self, info):
        with open(self.path, "a") as f:
            f.write(f"{info.iteration}\n")
        return [np.array([info.iteration], np.int32)] * 2


@pytest.mark.parametrize("depth", [1, 3])
def test_source_prefetch_queue_depth(depth, tmp_path):
    log = tmp_path / "calls.txt"
    pipe = _pipe(lambda: fn.external_source(_LoggingSource(str(log)), batch_info=True, parallel=True,
                                            prefetch_queue_depth=depth),
                 batch_size=2, prefetch_queue_depth=1)
    assert _vals(pipe.run()[0]) == [[0], [0]]

    def called():
        return sorted(int(x) for x in log.read_text().split()) if log.exists() else []
    end = time.monotonic() + 5
    while called() != list(range(depth + 1)) and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.2)
    assert called() == list(range(depth + 1))  # the batch asked for and `depth` ahead of it


def test_example_runs(tmp_path):
    root = tmp_path / "jpegs"
    sys.path.insert(0, os.path.join(_ROOT, "examples"))
    try:
        from make_sample_data import make_dataset
    finally:
        sys.path.pop(0)
    make_dataset(str(root), classes=2, per_class=5, size=(48, 64))
    res = subprocess.run([sys.executable, os.path.join(_ROOT, "examples", "parallel_external_source.py"),
                          "--root", str(root), "--batch-size", "4"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.path.join(_ROOT, "core")))
    assert res.returncode == 0, res.stderr
    # 10 images, batch 4: two full batches per epoch in both pipelines
    assert "train: 2 batches, 8 images" in res.stdout and "val: 2 batches, 8 images" in res.stdout
    assert "last labels [0, 1, 1, 1]" in res.stdout  # files 4..7: the 5th of class 0, then class 1
    assert "first image (48, 64, 3) uint8" in res.stdout
