"""Executor modes: every combination must produce identical outputs; interpreter exit must not hang."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from penstock import fn, pipeline_def, types

CONFIGS = [
    dict(exec_async=False, exec_pipelined=False, prefetch_queue_depth=1),
    dict(exec_async=False, exec_pipelined=True, prefetch_queue_depth=2),
    dict(exec_async=True, exec_pipelined=False, prefetch_queue_depth=1),
    dict(exec_async=True, exec_pipelined=True, prefetch_queue_depth=1),
    dict(exec_async=True, exec_pipelined=True, prefetch_queue_depth=2),
    dict(exec_async=True, exec_pipelined=True, prefetch_queue_depth=4),
    dict(exec_async=True, exec_pipelined=True, prefetch_queue_depth={"cpu_size": 2, "gpu_size": 1}),
    dict(exec_async=True, exec_pipelined=True, prefetch_queue_depth={"cpu_size": 3, "gpu_size": 3}),
]


def _files(tmp_path, n):
    out = []
    for i in range(n):
        p = tmp_path / f"{i}.bin"
        p.write_bytes(bytes(range(i + 1)))
        out.append(str(p))
    return out


def _make(files, limit=None, **cfg):
    def src(i):
        if limit is not None and i >= limit:
            raise StopIteration
        return [np.full((2, 3), i * 10 + k, np.float32) for k in range(3)]

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=99, **cfg)
    def p():
        data, label = fn.readers.file(files=files, random_shuffle=True, initial_fill=4)
        x = fn.external_source(source=src)
        noise = fn.random.normal(shape=[2, 3])
        y = fn.cast(x * 2 + noise, dtype=types.INT16)
        z = fn.transpose(fn.reshape(x, shape=[3, 2]), perm=[1, 0])
        return data, label, y, z, fn.random.coin_flip(probability=0.7)

    return p()


def _collect(pipe, iters):
    res = []
    for _ in range(iters):
        try:
            outs = pipe.run()
        except StopIteration:
            res.append("STOP")
            break
        res.append([[o.at(i).tolist() for i in range(len(o))] for o in outs])
    return res


def test_all_configs_identical(tmp_path):
    files = _files(tmp_path, 7)
    ref = _collect(_make(files, **CONFIGS[0]), 6)
    assert len(ref) == 6
    for cfg in CONFIGS[1:]:
        assert _collect(_make(files, **cfg), 6) == ref, cfg


def test_all_configs_identical_with_end_of_data(tmp_path):
    files = _files(tmp_path, 5)
    ref = _collect(_make(files, limit=4, **CONFIGS[0]), 10)
    assert ref[-1] == "STOP" and len(ref) == 5
    for cfg in CONFIGS[1:]:
        assert _collect(_make(files, limit=4, **cfg), 10) == ref, cfg


@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_epochs_after_reset(cfg, tmp_path):
    files = _files(tmp_path, 3)
    pipe = _make(files, limit=2, **cfg)
    for _ in range(3):
        got = _collect(pipe, 5)
        assert len(got) == 3 and got[-1] == "STOP"
        # z: each (2,3) sample of constant value 10*iteration + sample, reshaped and transposed
        assert got[0][3][0] == np.zeros((2, 3)).tolist()
        assert got[1][3][1][0][0] == 11.0
        pipe.reset()


def test_schedule_api_matches_run(tmp_path):
    files = _files(tmp_path, 4)
    ref = _collect(_make(files, **CONFIGS[4]), 4)
    pipe = _make(files, **CONFIGS[4])
    got = []
    pipe.schedule_run()
    for _ in range(4):
        outs = pipe.share_outputs()
        got.append([[o.at(i).tolist() for i in range(len(o))] for o in outs])
        pipe.release_outputs()
        pipe.schedule_run()
    assert got == ref


def _assert_exits_cleanly(script: str) -> None:
    """Runs ``script`` in a fresh interpreter: it must print 'done' and exit, not hang."""
    core = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
    env = dict(os.environ, PYTHONPATH=core + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout


def test_interpreter_exit_does_not_hang(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        from penstock import fn, pipeline_def

        @pipeline_def(batch_size=4, num_threads=3, device_id=None, prefetch_queue_depth=3)
        def p():
            x = fn.external_source(source=lambda i: [np.full(1000, i, np.float32)] * 4)
            return fn.random.normal(shape=[1000]) + x

        pipes = [p() for _ in range(3)]
        for pipe in pipes:
            pipe.run()
        print("done", flush=True)
        # leave the pipelines running, with iterations in flight
    """)
    _assert_exits_cleanly(script)


def test_interpreter_exit_with_unconsumed_prefetch(tmp_path):
    script = textwrap.dedent("""
        import time
        import numpy as np
        from penstock import fn, pipeline_def

        def slow(i):
            time.sleep(0.05)
            return [np.zeros(10, np.float32)] * 2

        @pipeline_def(batch_size=2, num_threads=2, device_id=None, prefetch_queue_depth=4)
        def p():
            return fn.external_source(source=slow) * 2

        pipe = p()
        pipe.run()
        print("done", flush=True)
    """)
    _assert_exits_cleanly(script)


def test_a_bad_value_at_run_time_is_both_a_runtime_error_and_a_value_error():
    # DALI reports some argument errors found at run time as ValueError, most as RuntimeError
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        data = fn.external_source(source=lambda: [np.zeros((2, 3), np.float32)] * 2, batch=True)
        return fn.transpose(data, perm=[0, 0])

    pipe = p()
    with pytest.raises(ValueError, match=r"transpose.*perm \[0, 0\]") as info:
        pipe.run()
    assert isinstance(info.value, RuntimeError)


def test_the_executor_measures_the_share_of_its_time_the_consumer_waits_for_batches():
    import time

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3, prefetch_queue_depth=2)
    def slow():  # 20 ms a batch
        return fn.python_function(fn.random.uniform(shape=[4]), function=lambda x: (time.sleep(0.01), x)[1])

    def share_after(pause_s: float) -> float:
        pipe = slow()
        pipe.build()
        for _ in range(30):
            pipe.run()
            time.sleep(pause_s)
        share = pipe._executor.starved_share()
        del pipe
        return share

    assert share_after(0.0) > 0.6  # a consumer that takes batches back to back waits for each
    assert share_after(0.06) < 0.2  # one slower than the pipeline finds them ready
