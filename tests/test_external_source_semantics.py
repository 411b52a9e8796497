"""external_source (api.md §11): copy semantics, push mode, declared dtype/ndim/layout, errors."""
import threading
import time

import numpy as np
import pytest

from penstock import Pipeline, fn, ops, pipeline_def, types


def _pipe(graph, batch_size=2, **kw):
    kw.setdefault("num_threads", 2)

    @pipeline_def(batch_size=batch_size, device_id=None, **kw)
    def p():
        out = graph()
        return out if isinstance(out, tuple) else (out,)

    return p()


# ---- copy semantics ------------------------------------------------------------------------

class _Refiller:
    """A loader that refills one buffer on every call (a common pattern)."""

    def __init__(self, as_list):
        self.buf = np.zeros((2, 3), np.int32)
        self.as_list = as_list

    def __call__(self, i):
        self.buf[...] = i
        return [self.buf[0], self.buf[1]] if self.as_list else self.buf


@pytest.mark.parametrize("as_list", [False, True])
def test_reused_buffer_is_copied(as_list):
    src = _Refiller(as_list)
    pipe = _pipe(lambda: fn.external_source(source=src), prefetch_queue_depth=2)
    for it in range(4):
        (out,) = pipe.run()
        np.testing.assert_array_equal(out.as_array(), np.full((2, 3), it, np.int32))


def test_pass_through_output_unchanged_after_run():
    src = _Refiller(False)
    pipe = _pipe(lambda: fn.external_source(source=src), prefetch_queue_depth=1)
    (out,) = pipe.run()
    src.buf[...] = 99  # the user's buffer changes after run() returned
    np.testing.assert_array_equal(out.as_array(), np.zeros((2, 3), np.int32))


def test_no_copy_uses_the_source_memory():
    buf = np.arange(6, dtype=np.int32).reshape(2, 3)
    pipe = _pipe(lambda: fn.external_source(source=lambda: buf, no_copy=True), prefetch_queue_depth=1)
    (out,) = pipe.run()
    assert np.shares_memory(out.as_array(), buf)
    pipe2 = _pipe(lambda: fn.external_source(source=lambda: buf), prefetch_queue_depth=1)
    (out2,) = pipe2.run()
    assert not np.shares_memory(out2.as_array(), buf)
    np.testing.assert_array_equal(out2.as_array(), buf)


def test_feed_input_copies_before_returning():
    pipe = _pipe(lambda: fn.external_source(name="in"), prefetch_queue_depth=1)
    buf = np.ones((2, 2), np.uint8)
    pipe.feed_input("in", buf)
    buf[...] = 7
    np.testing.assert_array_equal(pipe.run()[0].as_array(), np.ones((2, 2), np.uint8))


def test_list_of_samples_packed_natively_ragged_and_strided():
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    samples = [base[:, ::2], base[1:3], np.float32(5) * np.ones((1, 1), np.float32)]
    pipe = _pipe(lambda: fn.external_source(source=lambda: samples), batch_size=3)
    (out,) = pipe.run()
    for i, s in enumerate(samples):
        np.testing.assert_array_equal(out.at(i), s)


def test_large_samples_pack_exactly():
    rng = np.random.default_rng(0)
    samples = [rng.integers(0, 255, (375, 500, 3), dtype=np.uint8) for _ in range(4)]
    pipe = _pipe(lambda: fn.external_source(source=lambda: samples, layout="HWC"), batch_size=4)
    (out,) = pipe.run()
    assert out.layout() == "HWC"
    for i, s in enumerate(samples):
        np.testing.assert_array_equal(out.at(i), s)


# ---- declared dtype / ndim / layout --------------------------------------------------------

def test_declared_dtype_checked_every_batch():
    def src(i):
        return [np.zeros(2, np.float32 if i == 0 else np.int32)] * 2
    pipe = _pipe(lambda: fn.external_source(source=src, dtype=types.FLOAT), prefetch_queue_depth=1)
    assert pipe.run()[0].dtype == types.FLOAT
    with pytest.raises(RuntimeError, match="external_source.*FLOAT.*INT32"):
        pipe.run()


def test_declared_ndim_and_layout_checked():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros((2, 2), np.uint8)] * 2, ndim=3))
    with pytest.raises(RuntimeError, match="3 dimensions"):
        pipe.run()
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros((2, 2), np.uint8)] * 2, layout="HWC"))
    with pytest.raises(RuntimeError, match="layout 'HWC'"):
        pipe.run()


def test_layout_length_differs_from_ndim_at_build():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(2)] * 2, layout="HW", ndim=3))
    with pytest.raises(ValueError, match="layout 'HW'.*ndim=3"):
        pipe.build()


def test_per_output_dtype_list():
    def src(si):
        return np.zeros(1, np.uint8), np.zeros(1, np.int32)
    pipe = _pipe(lambda: tuple(fn.external_source(source=src, num_outputs=2, batch=False,
                                                  dtype=[types.UINT8, types.INT32])))
    a, b = pipe.run()
    assert (a.dtype, b.dtype) == (types.UINT8, types.INT32)


# ---- errors from the user's source ---------------------------------------------------------

def test_batch_source_error_wrapped_with_operator_and_iteration():
    def src(i):
        if i == 1:
            raise ValueError("boom")
        return [np.zeros(1)] * 2
    pipe = _pipe(lambda: fn.external_source(source=src, name="my_src"), prefetch_queue_depth=1)
    pipe.run()
    with pytest.raises(ValueError) as info:
        pipe.run()
    msg = str(info.value)
    assert "my_src" in msg and "iteration 1" in msg and "boom" in msg
    cause = info.value.__cause__
    assert type(cause) is ValueError and str(cause) == "boom"
    assert cause.__traceback__ is not None
    assert cause.__traceback__.tb_next is not None  # reaches the user's frame


def test_per_sample_error_names_the_sample():
    class MyErr(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    def src(si):
        if si.idx_in_batch == 1:
            raise MyErr(1, 2)
        return np.zeros(1)
    pipe = _pipe(lambda: fn.external_source(source=src, batch=False, name="ps"), batch_size=3)
    with pytest.raises(RuntimeError, match=r"'ps'.*iteration 0.*sample 1") as info:
        pipe.run()
    assert isinstance(info.value.__cause__, MyErr)


@pytest.mark.parametrize("bad", [[np.zeros(2, np.uint8), np.zeros(2, np.int32)],
                                 [np.zeros(2, np.uint8), np.zeros((2, 1), np.uint8)]])
def test_mixed_samples_name_the_source(bad):
    pipe = _pipe(lambda: fn.external_source(source=lambda: bad, name="mixed"))
    with pytest.raises(RuntimeError, match=r"'mixed'.*sample 1"):
        pipe.run()


# ---- push mode -----------------------------------------------------------------------------

def test_blocking_run_waits_for_feed_from_another_thread():
    pipe = _pipe(lambda: fn.external_source(name="in", blocking=True), prefetch_queue_depth=2)
    pipe.build()

    def feeder():
        for i in range(3):
            time.sleep(0.2)
            pipe.feed_input("in", np.full((2, 1), i, np.int32))
    t = threading.Thread(target=feeder)
    t.start()
    got = [int(pipe.run()[0].at(0)[0]) for _ in range(3)]
    t.join()
    assert got == [0, 1, 2]


def test_blocking_feed_then_run_in_one_thread_with_prefetch():
    pipe = _pipe(lambda: fn.external_source(name="in", blocking=True), prefetch_queue_depth=2)
    for i in range(4):
        pipe.feed_input("in", np.full((2, 1), i, np.int32))
        assert int(pipe.run()[0].at(0)[0]) == i


def test_non_blocking_without_data_raises():
    pipe = _pipe(lambda: fn.external_source(name="in", blocking=False), prefetch_queue_depth=1)
    with pytest.raises(RuntimeError, match="No data was fed"):
        pipe.run()


# ---- ops API -------------------------------------------------------------------------------

# DALI's classes and words: RuntimeError for what describes the data, ValueError for the rest
@pytest.mark.parametrize("arg, error", [({"layout": "HW"}, RuntimeError), ({"dtype": types.UINT8}, RuntimeError),
                                        ({"blocking": True}, ValueError), ({"no_copy": True}, ValueError)])
def test_ops_argument_in_init_and_call_rejected(arg, error):
    es = ops.ExternalSource(**arg)
    with pytest.raises(error, match=f"``{list(arg)[0]}`` already specified in constructor"):
        es(**arg)


def test_ops_source_in_init_and_call_rejected():
    es = ops.ExternalSource(source=lambda: [np.zeros(1)] * 2)
    with pytest.raises(RuntimeError, match="``source`` already specified in constructor"):
        es(source=lambda: [np.zeros(1)] * 2)


def test_ops_name_may_be_given_again_at_call():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(ops.ExternalSource(source=lambda: [np.zeros(1)] * 2, name="a")(name="b"))
    assert pipe.run()[0].shape() == [(1,), (1,)]


def test_feed_input_layout_that_does_not_fit_is_dropped_with_warning():
    pipe = _pipe(lambda: fn.external_source(name="in"), prefetch_queue_depth=1)
    pipe.feed_input("in", [np.zeros(5, np.uint8)] * 2, layout="HWC")
    with pytest.warns(UserWarning, match="layout 'HWC'"):
        (out,) = pipe.run()
    assert out.layout() == ""
