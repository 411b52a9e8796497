"""One pipeline driven from several threads (a training loop and a prefetch thread): every call of
run()/outputs()/share_outputs() gets a distinct, whole iteration, in the order the calls are
served, none lost or repeated, and every thread returns."""
import threading
import time

import numpy as np
import pytest

from penstock import _checkpoint, fn, pipeline_def

BATCH = 4
CALLS = 60  # per thread
_JOIN_S = 120  # generous: only a hang gets here


def batch_source(iteration):
    time.sleep(0.001)  # lets the other thread in while this one is inside the source
    return [np.full(2, iteration * BATCH + k, np.int64) for k in range(BATCH)]


def sample_source(si):
    time.sleep(0.001)
    return np.full(2, si.idx_in_epoch, np.int64)


def _pipe(parallel: bool, **kw):
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, py_num_workers=2, **kw)
    def p():
        if parallel:
            return fn.external_source(sample_source, batch=False, parallel=True)
        return fn.external_source(batch_source)
    return p()


def _first_samples(out):
    """The iteration an output batch belongs to, after checking the batch is whole."""
    values = [int(out.at(k)[0]) for k in range(len(out))]
    assert len(values) == BATCH and values == list(range(values[0], values[0] + BATCH)), values
    assert values[0] % BATCH == 0
    return values[0] // BATCH


def _drive(pipe, call, threads=2, calls=CALLS):
    """``call(pipe)`` ``calls`` times in each of ``threads`` threads; returns the iterations each
    thread received, in the order it received them."""
    got = [[] for _ in range(threads)]
    errors = []
    start = threading.Barrier(threads)

    def loop(k):
        start.wait()
        try:
            for _ in range(calls):
                got[k].append(_first_samples(call(pipe)[0]))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    workers = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(_JOIN_S)
    assert not any(t.is_alive() for t in workers), "a thread never returned"
    assert not errors, errors
    return got


def _check_distinct_in_order(got, total):
    everything = sorted(i for g in got for i in g)
    assert everything == list(range(total))  # none lost, none twice
    for g in got:  # each thread sees the iterations in the order they were made
        assert g == sorted(g)


def _run(pipe):
    return pipe.run()


def _schedule_then_outputs(pipe):
    pipe.schedule_run()
    return pipe.outputs()


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("call", [_run, _schedule_then_outputs], ids=["run", "schedule_run+outputs"])
def test_two_threads_get_distinct_whole_iterations_in_order(parallel, call):
    pipe = _pipe(parallel)
    got = _drive(pipe, call)
    _check_distinct_in_order(got, 2 * CALLS)
    assert pipe._owed >= 0
    assert _first_samples(call(pipe)[0]) == 2 * CALLS  # the pipeline goes on where they stopped


def test_share_and_release_outputs_from_two_threads():
    pipe = _pipe(False, exec_dynamic=True)

    def share(p):
        p.schedule_run()
        out = p.share_outputs()
        p.release_outputs()
        return out

    _check_distinct_in_order(_drive(pipe, share), 2 * CALLS)


def test_four_threads_and_an_epoch_end():
    """Every batch of the epoch reaches exactly one call; every call after the last gets
    StopIteration."""
    data = [[np.full(2, i * BATCH + k, np.int64) for k in range(BATCH)] for i in range(10)]

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None)
    def p():
        return fn.external_source(data, cycle=False)

    pipe = p()
    got, stops, lock = [], [], threading.Lock()

    def loop():
        for _ in range(5):
            try:
                out = _first_samples(pipe.run()[0])
            except StopIteration:
                with lock:
                    stops.append(1)
                continue
            with lock:
                got.append(out)

    workers = [threading.Thread(target=loop, daemon=True) for _ in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(_JOIN_S)
    assert not any(t.is_alive() for t in workers)
    assert sorted(got) == list(range(10)) and len(stops) == 10


def test_checkpoint_from_another_thread_is_whole():
    """checkpoint() waits for a run() in progress: it never describes half an iteration."""
    pipe = _pipe(False, enable_checkpointing=True)
    stop = threading.Event()
    seen = []

    def runner():
        while not stop.is_set():
            seen.append(_first_samples(pipe.run()[0]))

    t = threading.Thread(target=runner, daemon=True)
    t.start()
    try:
        cpts = []
        while len(seen) < 20:
            cpts.append(pipe.checkpoint())
    finally:
        stop.set()
        t.join(_JOIN_S)
    assert not t.is_alive()
    # each checkpoint restores to the batch after those consumed when it was taken
    for cpt in cpts[::max(1, len(cpts) // 8)]:
        consumed = _checkpoint.parse(cpt)["iter"]
        assert 0 <= consumed <= len(seen)
        assert _first_samples(_pipe(False, checkpoint=cpt).run()[0]) == consumed


def test_a_source_calling_run_of_its_own_pipeline_is_an_error():
    """run() inside the pipeline's own source (same thread) would wait for itself."""
    holder = {}

    def source(iteration):
        if iteration == 1:
            holder["pipe"].run()
        return [np.zeros(1, np.int64)] * BATCH

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def p():
        return fn.external_source(source)

    pipe = holder["pipe"] = p()
    pipe.run()
    with pytest.raises(RuntimeError, match="inside this pipeline's own"):
        pipe.run()
