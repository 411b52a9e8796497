"""The engine's thread pools name their workers, so that a pool's CPU time shows apart from its
process's other threads (top, py-spy, /proc, the benchmarks' per-thread counts)."""
import os

from penstock import _engine, fn, pipeline_def


def _thread_names() -> list[str]:
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:  # a thread that ended meanwhile
            pass
    return names


def test_a_pools_workers_carry_its_name_cut_to_the_systems_limit():
    before = _thread_names().count("penstock-test-p")
    pool = _engine.ThreadPool(3, "penstock-test-pool")  # 18 characters: the OS keeps 15
    unnamed = _engine.ThreadPool(2)
    assert _thread_names().count("penstock-test-p") == before + 2  # the caller is the third thread
    assert pool.num_threads == 3 and unnamed.num_threads == 2
    del pool, unnamed
    assert _thread_names().count("penstock-test-p") == before  # joined with the pool


def test_a_pipelines_workers_are_named_penstock_work():
    @pipeline_def(batch_size=4, num_threads=3, device_id=None)
    def pipe():
        return fn.random.uniform(range=(0.0, 1.0), shape=[2])
    before = _thread_names().count("penstock-work")
    p = pipe()
    p.build()
    out, = p.run()
    assert len(out) == 4
    assert _thread_names().count("penstock-work") == before + 2
