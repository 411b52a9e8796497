"""fn.external_source (api.md §11)."""
import functools

import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, types


def _pipe(graph, batch_size=2, **kw):
    kw.setdefault("num_threads", 2)

    @pipeline_def(batch_size=batch_size, device_id=None, **kw)
    def p():
        out = graph()
        return out if isinstance(out, tuple) else (out,)

    return p()


def _vals(tl):
    return [tl.at(i).tolist() for i in range(len(tl))]


def _sequence(pipe, steps):
    seq = []
    for _ in range(steps):
        try:
            (out,) = pipe.run()
            seq.append(int(out.at(0)[0]))
        except StopIteration:
            seq.append("S")
            pipe.reset()
    return seq


# ---- callables -----------------------------------------------------------------------------

def test_callable_batch_gets_iteration_index():
    calls = []

    def src(i):
        calls.append(i)
        return [np.array([i, k], np.int32) for k in range(2)]

    pipe = _pipe(lambda: fn.external_source(source=src), prefetch_queue_depth=1)
    for it in range(3):
        (out,) = pipe.run()
        assert _vals(out) == [[it, 0], [it, 1]]
    assert calls == [0, 1, 2]


def test_callable_no_arg():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.array([7], np.uint8)] * 2))
    (out,) = pipe.run()
    assert _vals(out) == [[7], [7]] and out.dtype == types.UINT8


def test_callable_batch_info():
    infos = []

    def src(info):
        infos.append(info)
        return np.full((2, 1), info.iteration, np.int32)

    pipe = _pipe(lambda: fn.external_source(source=src, batch_info=True), prefetch_queue_depth=1)
    pipe.run()
    pipe.run()
    assert all(isinstance(b, types.BatchInfo) for b in infos)
    assert [(b.iteration, b.epoch_idx) for b in infos] == [(0, 0), (1, 0)]


def test_callable_object():
    class Src:
        def __call__(self, i):
            return [np.array([i * 10], np.int64)] * 3

    pipe = _pipe(lambda: fn.external_source(source=Src()), batch_size=3, prefetch_queue_depth=1)
    pipe.run()
    (out,) = pipe.run()
    assert _vals(out) == [[10]] * 3 and out.dtype == types.INT64


def test_per_sample_sample_info():
    infos = []

    def src(si):
        infos.append(si)
        return np.array([si.idx_in_epoch, si.idx_in_batch, si.iteration, si.epoch_idx], np.int32)

    pipe = _pipe(lambda: fn.external_source(source=src, batch=False), batch_size=3,
                 prefetch_queue_depth=1)
    (a,) = pipe.run()
    (b,) = pipe.run()
    assert _vals(a) == [[0, 0, 0, 0], [1, 1, 0, 0], [2, 2, 0, 0]]
    assert _vals(b) == [[3, 0, 1, 0], [4, 1, 1, 0], [5, 2, 1, 0]]
    assert all(isinstance(s, types.SampleInfo) for s in infos)


def test_per_sample_stop_discards_partial_batch():
    log = []

    def src(si):
        log.append((si.idx_in_epoch, si.epoch_idx))
        if si.idx_in_epoch >= 5:
            raise StopIteration
        return np.array([si.idx_in_epoch], np.int32)

    pipe = _pipe(lambda: fn.external_source(source=src, batch=False), batch_size=2)
    for epoch in range(2):
        got = []
        with pytest.raises(StopIteration):
            for _ in range(10):
                (out,) = pipe.run()
                got.append(_vals(out))
        assert got == [[[0], [1]], [[2], [3]]]
        pipe.reset()
    # the discarded sample 4 was produced (then dropped) in both epochs
    assert (4, 0) in log and (4, 1) in log


def test_epoch_idx_and_restart_after_reset():
    def src(info):
        if info.iteration >= 2:
            raise StopIteration
        return [np.array([info.iteration, info.epoch_idx], np.int32)] * 2

    pipe = _pipe(lambda: fn.external_source(source=src, batch_info=True))
    for epoch in range(3):
        outs = []
        with pytest.raises(StopIteration):
            while True:
                (o,) = pipe.run()
                outs.append(o.at(0).tolist())
        assert outs == [[0, epoch], [1, epoch]]
        pipe.reset()


def test_stop_iteration_repeats_without_reset():
    def src(i):
        if i >= 1:
            raise StopIteration
        return [np.zeros(1, np.uint8)] * 2

    pipe = _pipe(lambda: fn.external_source(source=src))
    pipe.run()
    with pytest.raises(StopIteration):
        pipe.run()
    with pytest.raises(StopIteration):
        pipe.run()


# ---- iterables / generators ------------------------------------------------------------------

def _batches(n):
    return [[np.array([i], np.int32)] * 2 for i in range(n)]


def test_iterable_consumed_once():
    data = _batches(3)
    pipe = _pipe(lambda: fn.external_source(source=data))
    assert _sequence(pipe, 6) == [0, 1, 2, "S", "S", "S"]


def test_iterator_object_consumed_once():
    pipe = _pipe(lambda: fn.external_source(source=iter(_batches(2))))
    assert _sequence(pipe, 4) == [0, 1, "S", "S"]


def test_iterable_cycle_true():
    pipe = _pipe(lambda: fn.external_source(source=_batches(3), cycle=True))
    assert _sequence(pipe, 8) == [0, 1, 2, 0, 1, 2, 0, 1]


def _gen():
    for i in range(3):
        yield [np.array([i], np.int32)] * 2


@pytest.mark.parametrize("cycle, expected", [
    (None, [0, 1, 2, "S", "S", "S", "S", "S"]),
    (False, [0, 1, 2, "S", "S", "S", "S", "S"]),
    ("no", [0, 1, 2, "S", "S", "S", "S", "S"]),
    (True, [0, 1, 2, 0, 1, 2, 0, 1]),
    ("quiet", [0, 1, 2, 0, 1, 2, 0, 1]),
    ("raise", [0, 1, 2, "S", 0, 1, 2, "S"]),
])
def test_generator_function_cycle(cycle, expected):
    pipe = _pipe(lambda: fn.external_source(source=_gen, cycle=cycle))
    assert _sequence(pipe, 8) == expected


def test_generator_partial_and_callable_generator_object():
    pipe = _pipe(lambda: fn.external_source(source=functools.partial(_gen), cycle="raise"))
    assert _sequence(pipe, 5) == [0, 1, 2, "S", 0]

    class G:
        def __call__(self):
            yield from _gen()

    pipe = _pipe(lambda: fn.external_source(source=G(), cycle=True))
    assert _sequence(pipe, 4) == [0, 1, 2, 0]


def test_generator_object_cannot_cycle():
    with pytest.raises(TypeError):
        _pipe(lambda: fn.external_source(source=_gen(), cycle=True))


def test_cycle_with_callable_rejected():
    with pytest.raises(ValueError):
        _pipe(lambda: fn.external_source(source=lambda: _batches(1)[0], cycle=True))


def test_callable_with_two_args_rejected():
    with pytest.raises(TypeError):
        _pipe(lambda: fn.external_source(source=lambda a, b: None))


# ---- prefetching -----------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 2, 3])
def test_prefetch_calls_source_depth_times(depth):
    calls = []

    def src(i):
        calls.append(i)
        return [np.array([i], np.int32)] * 2

    pipe = _pipe(lambda: fn.external_source(source=src), prefetch_queue_depth=depth)
    (out,) = pipe.run()
    assert out.at(0).tolist() == [0]
    assert calls == list(range(depth))
    (out,) = pipe.run()
    assert out.at(0).tolist() == [1]
    assert calls == list(range(depth + 1))


# ---- outputs, types, layouts -----------------------------------------------------------------

def test_num_outputs():
    def src():
        return [np.array([1], np.int32)] * 2, [np.array([2.5], np.float32)] * 2

    pipe = _pipe(lambda: tuple(fn.external_source(source=src, num_outputs=2)))
    a, b = pipe.run()
    assert _vals(a) == [[1], [1]] and _vals(b) == [[2.5], [2.5]]
    assert a.dtype == types.INT32 and b.dtype == types.FLOAT


def test_num_outputs_returns_list():
    holder = {}

    def g():
        outs = fn.external_source(source=lambda: ([np.zeros(1)] * 2, [np.zeros(1)] * 2), num_outputs=2)
        holder["outs"] = outs
        return tuple(outs)

    _pipe(g)
    assert isinstance(holder["outs"], list) and len(holder["outs"]) == 2


def test_num_outputs_errors():
    with pytest.raises(ValueError):
        _pipe(lambda: fn.external_source(num_outputs=2))
    with pytest.raises(ValueError):
        _pipe(lambda: tuple(fn.external_source(source=lambda: ([], []), num_outputs=2, name="x")))


def test_array_source_and_layout():
    pipe = _pipe(lambda: fn.external_source(source=lambda: np.zeros((2, 3, 4, 3), np.uint8), layout="HWC"))
    (out,) = pipe.run()
    assert out.shape() == [(3, 4, 3)] * 2 and out.layout() == "HWC"


def test_ragged_batch():
    data = [np.arange(3, dtype=np.int16), np.arange(5, dtype=np.int16)]
    pipe = _pipe(lambda: fn.external_source(source=lambda: data))
    (out,) = pipe.run()
    assert out.shape() == [(3,), (5,)]
    np.testing.assert_array_equal(out.at(1), data[1])


def test_variable_batch_size():
    def src(i):
        return [np.array([i], np.int32)] * (i % 3 + 1)

    pipe = _pipe(lambda: fn.external_source(source=src), batch_size=3)
    assert [len(pipe.run()[0]) for _ in range(4)] == [1, 2, 3, 1]


def test_batch_larger_than_max_rejected():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(1)] * 3), batch_size=2)
    with pytest.raises(Exception):
        pipe.run()


def test_dtype_and_ndim_validated():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(2, np.float32)] * 2,
                                            dtype=types.FLOAT, ndim=1))
    (out,) = pipe.run()
    assert out.dtype == types.FLOAT
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(2, np.float32)] * 2,
                                            dtype=types.INT32))
    with pytest.raises(Exception):
        pipe.run()
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(2, np.float32)] * 2, ndim=2))
    with pytest.raises(Exception):
        pipe.run()


def test_tensorlist_source():
    from penstock.tensors import TensorListCPU
    tl = TensorListCPU(np.arange(6, dtype=np.int32).reshape(2, 3))
    pipe = _pipe(lambda: fn.external_source(source=lambda: tl))
    (out,) = pipe.run()
    np.testing.assert_array_equal(out.as_array(), np.arange(6).reshape(2, 3))


def test_source_exception_propagates():
    def src():
        raise ValueError("boom from source")

    pipe = _pipe(lambda: fn.external_source(source=src))
    with pytest.raises(Exception, match="boom from source"):
        pipe.run()


def test_prefetch_queue_depth_needs_parallel():
    with pytest.raises(ValueError):
        _pipe(lambda: fn.external_source(source=lambda: [np.zeros(1)] * 2, prefetch_queue_depth=2))


# ---- push mode -------------------------------------------------------------------------------

def test_feed_input():
    pipe = _pipe(lambda: fn.external_source(name="in") * 2, prefetch_queue_depth=1)
    pipe.feed_input("in", [np.array([1, 2], np.int32), np.array([3], np.int32)])
    (out,) = pipe.run()
    assert _vals(out) == [[2, 4], [6]]
    pipe.feed_input("in", np.array([[5], [6]], np.int32))
    (out,) = pipe.run()
    assert _vals(out) == [[10], [12]]


def test_feed_input_queue():
    pipe = _pipe(lambda: fn.external_source(name="in"), prefetch_queue_depth=2)
    # run() schedules one iteration ahead of the one it returns: feed depth + runs - 1 batches
    for i in range(4):
        pipe.feed_input("in", [np.array([i], np.int32)] * 2)
    assert [int(pipe.run()[0].at(0)[0]) for _ in range(3)] == [0, 1, 2]


def test_feed_input_by_node():
    holder = {}

    def g():
        holder["es"] = fn.external_source(name="in")
        return holder["es"]

    pipe = _pipe(g, prefetch_queue_depth=1)
    pipe.feed_input(holder["es"], [np.array([9], np.uint8)] * 2)
    assert _vals(pipe.run()[0]) == [[9], [9]]


def test_feed_without_data_errors():
    pipe = _pipe(lambda: fn.external_source(name="in"), prefetch_queue_depth=1)
    with pytest.raises(Exception):
        pipe.run()


def test_repeat_last():
    pipe = _pipe(lambda: fn.external_source(name="in", repeat_last=True), prefetch_queue_depth=1)
    pipe.feed_input("in", [np.array([1], np.int32)] * 2)
    assert _vals(pipe.run()[0]) == [[1], [1]]
    assert _vals(pipe.run()[0]) == [[1], [1]]
    pipe.feed_input("in", [np.array([2], np.int32)] * 2)
    assert _vals(pipe.run()[0]) == [[2], [2]]


def test_repeat_last_with_source_rejected():
    with pytest.raises(ValueError):
        _pipe(lambda: fn.external_source(source=lambda: [np.zeros(1)] * 2, repeat_last=True))


def test_feed_input_with_source_rejected():
    pipe = _pipe(lambda: fn.external_source(source=lambda: [np.zeros(1)] * 2, name="in"))
    with pytest.raises(RuntimeError):
        pipe.feed_input("in", [np.zeros(1)] * 2)


def test_run_with_inputs():
    pipe = _pipe(lambda: fn.external_source(name="x") + 1, prefetch_queue_depth=1)
    (out,) = pipe.run(x=[np.array([1], np.int32), np.array([2], np.int32)])
    assert _vals(out) == [[2], [3]]
    pipe = _pipe(lambda: fn.external_source(name="x") + 1, exec_pipelined=False)
    (out,) = pipe.run(x=np.array([[4], [5]], np.int32))
    assert _vals(out) == [[5], [6]]


def test_run_with_inputs_needs_depth_one():
    pipe = _pipe(lambda: fn.external_source(name="x"), prefetch_queue_depth=2)
    with pytest.raises(RuntimeError):
        pipe.run(x=[np.zeros(1)] * 2)


# ---- ops API -------------------------------------------------------------------------------

def test_ops_external_source():
    es = ops.ExternalSource(source=lambda i: [np.array([i], np.int32)] * 2)
    pipe = _pipe(lambda: es(), prefetch_queue_depth=1)
    pipe.run()
    assert _vals(pipe.run()[0]) == [[1], [1]]


def test_ops_external_source_arg_twice_rejected():
    es = ops.ExternalSource(layout="HW")
    with pytest.raises(RuntimeError, match="``layout`` already specified in constructor"):  # DALI's words and class
        _pipe(lambda: es(layout="HW"))


@pytest.mark.parametrize("cycle, expected", [
    (None, [0, 1, 2, "S", "S", "S"]),
    (True, [0, 1, 2, 0, 1, 2]),
    ("raise", [0, 1, 2, "S", 0, 1]),
])
def test_list_source_cycle(cycle, expected):
    pipe = _pipe(lambda: fn.external_source(source=_batches(3), cycle=cycle))
    assert _sequence(pipe, 6) == expected


def test_per_sample_num_outputs():
    def src(si):
        return np.array([si.idx_in_batch], np.int32), np.array([si.idx_in_batch * 2.0], np.float32)

    pipe = _pipe(lambda: tuple(fn.external_source(source=src, num_outputs=2, batch=False)), batch_size=3)
    a, b = pipe.run()
    assert _vals(a) == [[0], [1], [2]] and _vals(b) == [[0.0], [2.0], [4.0]]


def test_per_sample_epochs_with_prefetch():
    def src(si):
        if si.idx_in_epoch >= 4:
            raise StopIteration
        return np.array([si.idx_in_epoch, si.epoch_idx], np.int32)

    pipe = _pipe(lambda: fn.external_source(source=src, batch=False), batch_size=2)
    for epoch in range(3):
        got = []
        with pytest.raises(StopIteration):
            while True:
                got.append(_vals(pipe.run()[0]))
        assert got == [[[0, epoch], [1, epoch]], [[2, epoch], [3, epoch]]]
        pipe.reset()


def test_per_sample_iterable():
    data = [np.array([i], np.int32) for i in range(5)]
    pipe = _pipe(lambda: fn.external_source(source=data, batch=False), batch_size=2)
    assert _vals(pipe.run()[0]) == [[0], [1]]
    assert _vals(pipe.run()[0]) == [[2], [3]]
    # sample 4's batch is incomplete: discarded, end of data
    with pytest.raises(StopIteration):
        pipe.run()


def test_per_sample_generator_function_cycle():
    def gen():
        for i in range(3):
            yield np.array([i], np.int32)

    pipe = _pipe(lambda: fn.external_source(source=gen, batch=False, cycle=True), batch_size=2)
    got = [_vals(pipe.run()[0]) for _ in range(3)]
    assert got == [[[0], [1]], [[2], [0]], [[1], [2]]]


def test_no_prefetch_when_not_pipelined():
    calls = []

    def src(i):
        calls.append(i)
        return [np.array([i], np.int32)] * 2

    pipe = _pipe(lambda: fn.external_source(source=src), exec_pipelined=False, prefetch_queue_depth=3)
    pipe.run()
    assert calls == [0]
    pipe.run()
    assert calls == [0, 1]


def test_prefetch_with_separated_queues_uses_max():
    calls = []

    def src(i):
        calls.append(i)
        return [np.array([i], np.int32)] * 2

    pipe = _pipe(lambda: fn.external_source(source=src),
                 prefetch_queue_depth={"cpu_size": 3, "gpu_size": 2})
    pipe.run()
    assert calls == [0, 1, 2]
