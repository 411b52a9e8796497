"""An iteration's failure belongs to that iteration: with prefetching, every iteration completed before
a failing one is handed out first, the failing one raises when its outputs are asked for, and the
pipeline goes on with the next (beyond DALI 2.4, whose run() for iteration N raises the error of a
source called for iteration N + 1, and N is lost)."""
import numpy as np
import pytest

from penstock import fn, pipeline_def
from penstock.pipeline import experimental

FAILING = 2  # the iteration that fails
N = 5


def _source(iteration):
    if iteration == FAILING:
        raise ValueError(f"no data for iteration {iteration}")
    return [np.full(2, iteration, np.int32)] * 2


def _function(x):
    if int(x[0]) == FAILING:
        raise ValueError(f"cannot process iteration {int(x[0])}")
    return x * 10


def _runs(pipe, scale=1):
    """Each run()'s first sample, or the error it raised."""
    got = []
    for _ in range(N):
        try:
            got.append(int(pipe.run()[0].at(0)[0]) // scale)
        except Exception as e:  # noqa: BLE001 - what each run gives is checked
            got.append(e)
    return got


def _check(got, error=ValueError):
    assert [g for k, g in enumerate(got) if k != FAILING] == [k for k in range(N) if k != FAILING]
    assert isinstance(got[FAILING], error) and f"iteration {FAILING}" in str(got[FAILING])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_source_failing_loses_no_iteration(depth):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=depth)
    def pipe():
        return fn.external_source(source=_source)

    _check(_runs(pipe()))


def _sample(info):
    if info.iteration == FAILING:
        raise ValueError(f"no sample for iteration {info.iteration}")
    return np.full(2, info.iteration, np.int32)


def test_a_parallel_source_failing_loses_no_iteration():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=2, py_num_workers=2)
    def pipe():
        return fn.external_source(source=_sample, batch=False, parallel=True)

    _check(_runs(pipe()))


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_an_operator_failing_loses_no_iteration(depth):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=depth)
    def pipe():
        return fn.python_function(fn.external_source(source=lambda i: [np.full(2, i, np.int32)] * 2),
                                  function=_function, batch_processing=False)

    _check(_runs(pipe(), scale=10), RuntimeError)  # the function's error, wrapped as DALI does


def test_a_failure_in_schedule_run_ahead_is_raised_by_its_outputs():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        return fn.external_source(source=_source)

    p = pipe()
    for _ in range(FAILING + 1):
        p.schedule_run()  # schedules up to the failing iteration: nothing raised here
    for k in range(FAILING):
        assert int(p.outputs()[0].at(0)[0]) == k
    with pytest.raises(ValueError, match=f"no data for iteration {FAILING}"):
        p.outputs()


def test_an_iteration_not_fed_fails_alone():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(name="x")

    p = pipe()
    p.feed_input("x", [np.int32([0])])
    p.feed_input("x", [np.int32([1])])
    assert int(p.run()[0].at(0)[0]) == 0  # schedules iterations 0 and 1
    assert int(p.run()[0].at(0)[0]) == 1  # schedules iteration 2: nothing fed for it
    p.feed_input("x", [np.int32([3])])
    with pytest.raises(IndexError, match="No data was fed with feed_input"):
        p.run()  # schedules iteration 3 (fed), hands out 2
    assert int(p.run()[0].at(0)[0]) == 3


def test_debug_mode_hands_out_the_iterations_around_a_failure():
    @experimental.pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def pipe():
        return fn.external_source(source=_source)

    _check(_runs(pipe()))
