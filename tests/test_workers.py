import concurrent.futures.thread
import gc
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from penstock import _workers
from penstock._workers import Workers, host_cores

CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")


def _ended(threads, timeout=5.0) -> bool:
    for t in threads:
        t.join(timeout)
    return not any(t.is_alive() for t in threads)


def test_calls_run_in_order_and_report_their_errors():
    workers = Workers(1, "test-workers")
    seen = []
    futures = [workers.submit(seen.append, i) for i in range(5)]
    failing = workers.submit(int, "not a number")
    assert [f.result(5) for f in futures] == [None] * 5
    assert seen == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="not a number"):
        failing.result(5)
    workers.close()
    assert _ended(workers.threads)


def test_close_cancels_what_has_not_started_and_ends_after_the_running_call():
    workers = Workers(2, "test-workers")
    started, release = threading.Barrier(3), threading.Event()

    def call():
        started.wait(5)
        return release.wait(5)

    running = [workers.submit(call) for _ in range(2)]
    pending = [workers.submit(lambda: "ran") for _ in range(3)]
    started.wait(5)  # both threads are inside a call
    workers.close()
    with pytest.raises(RuntimeError, match="closed"):
        workers.submit(int, "1")
    release.set()
    assert [f.result(5) for f in running] == [True, True]
    assert _ended(workers.threads)
    assert all(f.cancelled() for f in pending)


def test_dropped_without_close_its_threads_end():
    workers = Workers(2, "test-workers")
    threads = workers.threads
    del workers
    gc.collect()
    assert _ended(threads)


def test_usable_by_a_thread_inside_a_thread_pools_submit():
    # The garbage collector may close a pipeline's workers inside ThreadPoolExecutor.submit, which
    # holds a module-wide lock; a fresh-clone CI run hung when closing waited on it.
    lock = concurrent.futures.thread._global_shutdown_lock
    results = []

    def inside_the_lock():
        with lock:
            workers = Workers(1, "test-workers")
            results.append(workers.submit(abs, -3).result(5))
            workers.close()
            results.append(_ended(workers.threads))

    t = threading.Thread(target=inside_the_lock, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and results == [3, True]


def test_at_exit_the_running_call_finishes(tmp_path):
    marker = tmp_path / "finished"
    script = textwrap.dedent(f"""
        import time
        from penstock._workers import Workers
        def slow():
            time.sleep(0.3)
            open({str(marker)!r}, "w").close()
        workers = Workers(1, "test-workers")
        workers.submit(slow)
        time.sleep(0.1)  # it is running when the interpreter exits
    """)
    env = dict(os.environ, PYTHONPATH=CORE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert marker.exists()


@pytest.mark.parametrize("cpus,allowed,local_ranks,want", [
    (64, 64, None, 64),   # one process: every core
    (64, 64, "4", 16),    # torchrun's 4 ranks on the host: a quarter each
    (64, 64, "3", 21),
    (8, 8, "16", 1),      # more ranks than cores: one each
    (64, 16, "4", 16),    # a launcher bound the rank to 16 cores: those, not a quarter of them
])
def test_host_cores_split_among_the_local_ranks(monkeypatch, cpus, allowed, local_ranks, want):
    monkeypatch.setattr(_workers.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(_workers.os, "sched_getaffinity", lambda pid: set(range(allowed)))
    if local_ranks is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_ranks)
    assert host_cores() == want


def test_mixed_decoders_size_their_threads_from_the_ranks_share_of_the_host(monkeypatch):
    from penstock.operators import _image_decode_mixed as mixed
    monkeypatch.setattr(_workers.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(_workers.os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    # num_threads as given up to the rank's 16 cores (12 host-decoding, 16 threads for nvJPEG's CUDA
    # decoder's Huffman decoding where a hw_decoder_load puts it beside the hardware engines) ...
    assert [mixed._decoder_thread_budget(n) for n in (4, 16, 64)] == [4, 16, 16]
    assert mixed._host_threads(mixed._decoder_thread_budget(64)) == 12
    assert mixed._codec_threads(mixed._decoder_thread_budget(64), engines_alone=False) == 16
    monkeypatch.delenv("LOCAL_WORLD_SIZE")  # ... and one process alone on the host: 48 and 64
    budget = mixed._decoder_thread_budget(64)
    assert (mixed._host_threads(budget), mixed._codec_threads(budget, engines_alone=False)) == (48, 64)
    assert mixed._codec_threads(1, engines_alone=False) == 2
    assert mixed._host_threads(1) == 1
    # the hardware engines alone (the default): the 2 threads that keep them fed, however many cores
    assert {mixed._codec_threads(n, engines_alone=True) for n in (1, 16, 64)} == {2}
