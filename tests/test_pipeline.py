"""Pipeline: constructor, graph definition styles, the run API (api.md §2-§4)."""
import gc
import threading
import time
import warnings

import numpy as np
import pytest

import penstock
from penstock import Pipeline, fn, ops, pipeline_def, types
from penstock.types import DALIDataType as T


def _src(i):
    return [np.array([i, k], np.int32) for k in range(2)]


@pipeline_def(batch_size=2, num_threads=2, device_id=None)
def simple_pipe():
    return fn.external_source(source=_src) * 2


def _limited(n):
    def src(i):
        if i >= n:
            raise StopIteration
        return _src(i)
    return src


# ---- §2 constructor ----------------------------------------------------------------------------

def test_defaults():
    p = Pipeline()
    assert p.max_batch_size is None and p.num_threads is None and p.seed is None
    assert p.device_id is None and p.prefetch_queue_depth == 2 and p.exec_dynamic is True
    assert p.exec_pipelined is True and p.exec_async is True and p.exec_separated is False
    assert p.set_affinity is False and p.max_streams == -1 and p.default_cuda_stream_priority == 0
    assert p.py_num_workers == 1 and p.py_start_method == "fork"
    assert p.enable_memory_stats is False
    assert p.cpu_queue_size == 2 and p.gpu_queue_size == 2


def test_positional_1x_form_and_sentinels():
    p = Pipeline(8, 3, None, 42)
    assert (p.max_batch_size, p.num_threads, p.device_id, p.seed) == (8, 3, None, 42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = Pipeline(-1, -1, None, -1)
    # as DALI 2.4 keeps them: -1 for the batch size and threads (refused at build), None for the seed
    assert q.max_batch_size == -1 and q.num_threads == -1 and q.seed is None
    with pytest.raises(ValueError, match=r"Invalid batch size: -1. Please set a positive integer."):
        q.build()


def test_negative_seed_warns():
    with pytest.warns(DeprecationWarning):
        p = Pipeline(batch_size=1, num_threads=1, seed=-5)
    assert p.seed is None


def test_batch_size_property_deprecated():
    p = Pipeline(batch_size=4, num_threads=1)
    with pytest.warns(DeprecationWarning):
        assert p.batch_size == 4
    assert p.max_batch_size == 4


def test_prefetch_queue_depth_forms():
    p = Pipeline(batch_size=1, num_threads=1, prefetch_queue_depth={"cpu_size": 3, "gpu_size": 2})
    assert p.exec_separated and p.cpu_queue_size == 3 and p.gpu_queue_size == 2
    assert p.exec_dynamic is False
    assert p.prefetch_queue_depth == {"cpu_size": 3, "gpu_size": 2}
    with pytest.raises(TypeError):
        Pipeline(batch_size=1, prefetch_queue_depth=2.0)
    with pytest.raises(TypeError):
        Pipeline(batch_size=1, prefetch_queue_depth="2")


def test_exec_dynamic_derivation():
    assert Pipeline(exec_pipelined=False).exec_dynamic is False
    assert Pipeline(exec_async=False).exec_dynamic is False
    assert Pipeline(exec_dynamic=False).exec_dynamic is False
    with pytest.warns(DeprecationWarning):
        assert Pipeline(experimental_exec_dynamic=False).exec_dynamic is False


def test_stream_policy_and_concurrency_defaults():
    p = Pipeline()
    assert p.stream_policy == penstock.StreamPolicy.PER_BACKEND
    assert p.concurrency == penstock.OperatorConcurrency.BACKEND


def test_py_start_method_checks():
    with pytest.raises(ValueError):
        Pipeline(py_start_method="thread")
    with pytest.raises(ValueError):
        Pipeline(py_start_method="fork", py_callback_pickler=object())


def test_output_spec_checks():
    with pytest.raises(ValueError):
        Pipeline(output_dtype=T.NO_TYPE)
    with pytest.raises(ValueError):
        Pipeline(output_ndim=-1)


def test_build_needs_batch_size_and_threads():
    p = simple_pipe(batch_size=None)
    with pytest.raises(ValueError):
        p.build()
    p = simple_pipe(num_threads=None)
    with pytest.raises(ValueError):
        p.build()
    p = simple_pipe(num_threads=0)
    with pytest.raises(ValueError):
        p.run()


def test_cpu_only_device_id_stays_none():
    p = simple_pipe()
    p.build()
    assert p.device_id is None
    p = simple_pipe(device_id=types.CPU_ONLY_DEVICE_ID)
    assert p.device_id is None


def test_num_outputs():
    assert simple_pipe().num_outputs == 1


# ---- §3 defining the graph ---------------------------------------------------------------------

def test_pipeline_def_bare_and_with_args():
    @pipeline_def
    def bare():
        return fn.external_source(source=_src)

    p = bare(batch_size=2, num_threads=1, device_id=None)
    assert p.max_batch_size == 2
    (out,) = p.run()
    assert out.at(1).tolist() == [0, 1]
    assert bare._is_pipeline_def is True


def test_pipeline_def_call_overrides():
    p = simple_pipe(batch_size=3, seed=11, prefetch_queue_depth=1)
    assert p.max_batch_size == 3 and p.seed == 11 and p.prefetch_queue_depth == 1
    q = simple_pipe()
    assert q.max_batch_size == 2 and q.seed is None


def test_pipeline_def_function_args():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p(scale, offset=0):
        return fn.external_source(source=_src) * scale + offset

    (out,) = p(3, offset=1, seed=4).run()
    assert out.at(1).tolist() == [1, 4]


def test_function_param_shadows_ctor_arg():
    with pytest.warns(Warning):
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def p(max_streams):
            return fn.external_source(source=_src) * max_streams

    pipe = p(max_streams=5)
    (out,) = pipe.run()
    assert out.at(1).tolist() == [0, 5]
    assert pipe.max_streams == -1


def test_kwargs_graph_function_rejected_when_the_pipeline_is_created():
    """Decorating is fine (DALI's own test modules do it at import); creating the pipeline raises."""
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p(**kwargs):
        return None

    with pytest.raises(TypeError, match="kwargs"):
        p()


def test_current_pipeline():
    seen = []

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        seen.append(Pipeline.current())
        return fn.external_source(source=lambda: [np.zeros(1)])

    pipe = p()
    assert seen == [pipe]
    assert Pipeline.current() is None
    with pipe:
        assert Pipeline.current() is pipe
    assert Pipeline.current() is None
    Pipeline.push_current(pipe)
    assert Pipeline.current() is pipe
    Pipeline.pop_current()
    assert Pipeline.current() is None


def test_define_graph_subclass_with_iter_setup():
    class MyPipe(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)
            self.inp = ops.ExternalSource()
            self.cast = ops.Cast(dtype=T.FLOAT)
            self.n = 0

        def define_graph(self):
            self.x = self.inp()
            return [self.cast(self.x)]

        def iter_setup(self):
            self.feed_input(self.x, [np.array([self.n], np.int32)] * 2)
            self.n += 1

    pipe = MyPipe()
    pipe.build()
    for i in range(3):
        (out,) = pipe.run()
        assert out.dtype == T.FLOAT and out.at(0).tolist() == [float(i)]


def test_with_pipe_set_outputs():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=_src)
        pipe.set_outputs(x, x + 1)
    a, b = pipe.run()
    assert a.at(1).tolist() == [0, 1] and b.at(1).tolist() == [1, 2]


def test_a_graph_without_outputs_is_not_implemented():
    # DALI 2.4: a graph function that returns nothing leaves define_graph() to define the graph
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return None

    with pytest.raises(NotImplementedError):
        p().num_outputs


def test_constant_outputs():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return np.array([1, 2, 3], np.int32), 5

    a, b = p().run()
    assert a.at(1).tolist() == [1, 2, 3] and len(a) == 2
    assert b.at(0).tolist() == 5 and b.dtype == T.INT32


def test_list_of_nodes_output_rejected():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [np.zeros(1)])
        return [x, x]

    with pytest.raises(Exception):
        p().run()


def test_datanode_bool_and_iter_raise():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [np.zeros(1)])
        with pytest.raises(TypeError):
            bool(x)
        with pytest.raises(TypeError):
            iter(x)
        return x

    p()


def test_datanode_attributes():
    holder = {}

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [np.zeros(1)], name="inp")
        holder["x"] = x
        return x

    p()
    x = holder["x"]
    assert x.device == "cpu" and x.name and "DataNode" in repr(x)
    assert penstock.pipeline.DataNode is penstock.DataNode


# ---- §4 run API --------------------------------------------------------------------------------

def test_run_returns_tuple_of_tensorlists():
    out = simple_pipe().run()
    assert isinstance(out, tuple) and len(out) == 1
    assert isinstance(out[0], penstock.tensors.TensorListCPU)
    assert out[0].at(1).tolist() == [0, 2]


def test_schedule_outputs_api():
    p = simple_pipe()
    p.schedule_run()
    out = p.outputs()
    assert isinstance(out, tuple) and out[0].at(0).tolist() == [0, 0]
    p.schedule_run()
    out = p.share_outputs()
    assert out[0].at(1).tolist() == [2, 2]
    p.release_outputs()


@pytest.mark.parametrize("second", ["schedule_run", "share_outputs", "release_outputs", "outputs"])
def test_mixing_run_with_scheduled_raises(second):
    p = simple_pipe()
    p.run()
    with pytest.raises(RuntimeError, match="Mixing pipeline API type"):
        getattr(p, second)()


def test_mixing_scheduled_with_run_raises():
    p = simple_pipe()
    p.schedule_run()
    with pytest.raises(RuntimeError, match="Mixing pipeline API type"):
        p.run()


def test_enable_api_check_false():
    p = simple_pipe()
    p.enable_api_check(False)
    p.run()
    p.schedule_run()
    p.outputs()


def test_stop_iteration_then_reset():
    p2 = pipeline_def(batch_size=2, num_threads=1, device_id=None)(
        lambda: fn.external_source(source=_limited(3)))()
    for epoch in range(2):
        got = []
        with pytest.raises(StopIteration):
            for _ in range(10):
                got.append(p2.run()[0].at(0).tolist()[0])
        assert got == [0, 1, 2]
        with pytest.raises(StopIteration):
            p2.run()
        p2.reset()


def test_empty():
    p = pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=2)(
        lambda: fn.external_source(source=_limited(3)))()
    assert p.empty()
    p.schedule_run()
    assert not p.empty()
    p.outputs()
    p.outputs()
    assert p.empty()


def test_output_dtype_and_ndim_checks():
    p = simple_pipe(output_dtype=T.INT32, output_ndim=1)
    p.run()
    p = simple_pipe(output_dtype=T.FLOAT)
    with pytest.raises(RuntimeError):
        p.run()
    p = simple_pipe(output_ndim=[2])
    with pytest.raises(RuntimeError):
        p.run()
    p = simple_pipe(output_dtype=[None])
    p.run()


def test_output_dtype_method():
    p = simple_pipe()
    assert p.output_dtype() == [T.INT32] or p.output_dtype() == [None]
    p = pipeline_def(batch_size=1, num_threads=1, device_id=None)(
        lambda: fn.cast(fn.external_source(source=lambda: [np.zeros(1)]), dtype=T.UINT16))()
    assert p.output_dtype() in ([T.UINT16], [None])


def test_pruning_and_preserve():
    calls = {"pruned": 0, "kept": 0}

    def counting(key):
        def src():
            calls[key] += 1
            return [np.zeros(1, np.float32)]
        return src

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def p():
        fn.external_source(source=counting("pruned"))  # unused: pruned, never called
        x = fn.external_source(source=lambda: [np.ones(1, np.float32)])
        fn.copy(fn.external_source(source=counting("kept")), preserve=True)
        return x

    pipe = p()
    pipe.run()
    pipe.run()
    assert calls == {"pruned": 0, "kept": 2}


def test_duplicate_names_raise():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        a = fn.external_source(source=lambda: [np.zeros(1)], name="dup")
        b = fn.external_source(source=lambda: [np.zeros(1)], name="dup")
        return a, b

    with pytest.raises(RuntimeError):
        p().run()


def test_operator_error_names_operator_and_pipeline_stays_usable():
    def src(i):
        n = 5 if i == 1 else 6
        return [np.arange(n, dtype=np.int32)]

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def p():
        return fn.reshape(fn.external_source(source=src), shape=[2, 3], name="my_reshape")

    pipe = p()
    (out,) = pipe.run()
    assert out.shape() == [(2, 3)]
    with pytest.raises(Exception, match="my_reshape"):
        pipe.run()
    (out,) = pipe.run()
    np.testing.assert_array_equal(out.at(0), np.arange(6).reshape(2, 3))


def _pipeline_threads():
    return {t for t in threading.enumerate() if t is not threading.main_thread()}


def test_deleting_pipeline_stops_threads():
    before = _pipeline_threads()
    p = simple_pipe(num_threads=3)
    p.run()
    p.run()
    del p
    gc.collect()
    deadline = time.time() + 5
    while time.time() < deadline and {t for t in _pipeline_threads() - before if t.is_alive()}:
        time.sleep(0.02)
        gc.collect()  # an iteration still in flight may hold the pipeline during the first collect
    assert not {t for t in _pipeline_threads() - before if t.is_alive()}


def test_serialize_round_trip(tmp_path):
    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=17)
    def p():
        u = fn.random.uniform(range=[0, 10], shape=[4], seed=3)
        n = fn.random.normal(shape=[2])
        return fn.cast(u * 2 + 1, dtype=T.INT32), fn.transpose(fn.reshape(n, shape=[1, 2]), perm=[1, 0])

    a = p()
    data = a.serialize()
    assert isinstance(data, bytes)
    b = Pipeline.deserialize(data)
    for _ in range(3):
        ra, rb = a.run(), b.run()
        for x, y in zip(ra, rb):
            np.testing.assert_array_equal(x.as_array(), y.as_array())
    fname = tmp_path / "p.bin"
    p().serialize(filename=str(fname))
    c = Pipeline.deserialize(filename=str(fname), batch_size=2)
    assert c.max_batch_size == 2
    assert len(c.run()[0]) == 2
    with pytest.raises(ValueError):
        Pipeline.deserialize(data, filename=str(fname))


def test_serialize_reader(tmp_path):
    for i in range(4):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
    files = [str(tmp_path / f"{i}.bin") for i in range(4)]

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        data, label = fn.readers.file(files=files, name="R")
        return data, label

    b = Pipeline.deserialize(p().serialize())
    assert b.epoch_size("R") == 4
    labels = b.run()[1]
    assert [labels.at(i).tolist() for i in range(3)] == [[0], [1], [2]]


def test_save_graph_to_dot_file(tmp_path):
    f = tmp_path / "g.dot"
    simple_pipe().save_graph_to_dot_file(str(f))
    text = f.read_text()
    assert "digraph" in text


def test_build_idempotent():
    p = simple_pipe()
    p.build()
    p.build()
    assert p.run()[0].at(0).tolist() == [0, 0]


def test_reset_mid_epoch_is_noop():
    p = simple_pipe()
    p.run()
    p.reset()
    assert p.run()[0].at(0).tolist() == [2, 0]  # iteration 1 (times 2), not a restart


def test_reader_continues_across_reset(tmp_path):
    files = []
    for i in range(5):
        (tmp_path / f"{i}.bin").write_bytes(b"x")
        files.append(str(tmp_path / f"{i}.bin"))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        _, label = fn.readers.file(files=files)
        return label, fn.external_source(source=_limited(2))

    pipe = p()
    seq = []
    for _ in range(6):
        try:
            seq.append(pipe.run()[0].as_array().ravel().tolist())
        except StopIteration:
            seq.append("S")
            pipe.reset()
    # readers never rewind: the stream goes on where it stopped (api.md §4.3)
    assert seq == [[0, 1], [2, 3], "S", [4, 0], [1, 2], "S"]


def test_outputs_without_schedule_raises_stop_iteration():
    p = simple_pipe()
    with pytest.raises(StopIteration):
        p.outputs()


def test_input_feed_count():
    p = pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=2)(
        lambda: fn.external_source(name="x"))()
    assert p.input_feed_count("x") == 2
    p.feed_input("x", [np.zeros(1)])
    assert p.input_feed_count("x") == 2  # DALI 2.4's answer: the prefetch depth, whatever is queued
    p.run()
    assert p.input_feed_count("x") == 2


def _push_pipe(**kw):
    return pipeline_def(batch_size=1, num_threads=1, device_id=None, **kw)(
        lambda: fn.external_source(name="x"))()


def test_run_inputs_with_separated_queues():
    p = _push_pipe(prefetch_queue_depth={"cpu_size": 1, "gpu_size": 1})
    assert p.run(x=[np.array([3.0])])[0].at(0).tolist() == [3.0]
    p = _push_pipe(prefetch_queue_depth={"cpu_size": 2, "gpu_size": 1})
    with pytest.raises(RuntimeError):
        p.run(x=[np.zeros(1)])


def test_separated_queues_reject_exec_dynamic():
    with pytest.raises(ValueError):
        Pipeline(batch_size=1, prefetch_queue_depth={"cpu_size": 2, "gpu_size": 1}, exec_dynamic=True)


def test_current_is_thread_local_and_nests():
    a, b = _push_pipe(), _push_pipe()
    seen = []
    with a:
        t = threading.Thread(target=lambda: seen.append(Pipeline.current()))
        t.start()
        t.join()
        with b:
            assert Pipeline.current() is b
        assert Pipeline.current() is a
    assert seen == [None]


def test_seeds_follow_creation_order():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
    def p1():
        return fn.random.uniform(shape=[4])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
    def p2():
        return fn.random.uniform(shape=[4]), fn.random.normal(shape=[2])

    np.testing.assert_array_equal(p1().run()[0].as_array(), p2().run()[0].as_array())


def test_reader_shuffle_follows_pipeline_seed(tmp_path):
    files = []
    for i in range(12):
        (tmp_path / f"{i}.bin").write_bytes(b"x")
        files.append(str(tmp_path / f"{i}.bin"))

    def labels(seed):
        @pipeline_def(batch_size=6, num_threads=1, device_id=None, seed=seed)
        def p():
            _, label = fn.readers.file(files=files, random_shuffle=True, initial_fill=6)
            return label

        pipe = p()
        return [pipe.run()[0].as_array().ravel().tolist() for _ in range(3)]

    assert labels(1) == labels(1)
    assert labels(1) != labels(2)


@pytest.mark.parametrize("exec_async", [True, False])
def test_pipeline_without_outputs_does_not_run(exec_async):
    # as in DALI 2.4: an empty set of outputs is no graph (define_graph() is asked, and the base has none)
    p = pipeline_def(batch_size=2, num_threads=1, device_id=None, exec_async=exec_async)(lambda: ())()
    with pytest.raises(NotImplementedError):
        p.run()


def test_feed_input_forms():
    from penstock.tensors import TensorCPU, TensorListCPU

    def fed(data, layout=None):
        p = pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)(
            lambda: fn.external_source(name="x"))()
        p.feed_input("x", data, layout=layout)
        return p.run()[0]

    out = fed([TensorCPU(np.zeros(2, np.float32)), TensorCPU(np.ones(2, np.float32))])
    assert out.shape() == [(2,), (2,)] and out.at(1).tolist() == [1.0, 1.0]
    out = fed(TensorListCPU(np.arange(4, dtype=np.int32).reshape(2, 2), layout="X"))
    assert out.layout() == "X" and out.at(1).tolist() == [2, 3]
    out = fed(np.zeros((2, 2, 3), np.uint8), layout="HW")
    assert out.layout() == "HW" and out.shape() == [(2, 3), (2, 3)]


def test_output_layout_check():
    def make(**kw):
        return pipeline_def(batch_size=1, num_threads=1, device_id=None, **kw)(
            lambda: fn.external_source(source=lambda: [np.zeros((2, 2), np.uint8)], layout="HW"))()

    make(output_layout="HW").run()
    with pytest.raises(RuntimeError):
        make(output_layout="WH").run()


def test_deprecated_stream_args_warn():
    with pytest.warns(DeprecationWarning):
        Pipeline(batch_size=1, max_streams=2)
    with pytest.warns(DeprecationWarning):
        Pipeline(batch_size=1, default_cuda_stream_priority=1)


def test_enable_memory_stats_reports_buffer_sizes_per_output():
    samples = [np.zeros((3, 4), np.float32), np.zeros((1, 2), np.float32)]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_memory_stats=True)
    def p():
        x = fn.external_source(source=lambda: samples)
        return x * 2, fn.cast(x, dtype=types.UINT8)

    pipe = p()
    pipe.run()
    stats = pipe.executor_statistics()
    real = (12 + 2) * 4
    for name, want in (("arithmetic#1", real), ("cast#1", real // 4)):
        entry = stats[name]
        assert entry["real_memory_size"] == [want] and entry["max_real_memory_size"] == [want]
        assert entry["reserved_memory_size"][0] >= want
    plain = p(enable_memory_stats=False)
    plain.run()
    assert all("real_memory_size" not in v for v in plain.executor_statistics().values())


def test_set_affinity_is_not_silently_ignored():
    with pytest.raises(NotImplementedError, match="set_affinity"):
        Pipeline(batch_size=1, num_threads=1, device_id=None, set_affinity=True)


def test_ops_compose_chains_operators():
    from penstock import ops
    compose = ops.Compose([ops.Cast(dtype=types.FLOAT), ops.Compose([ops.Normalize(mean=1.0, stddev=2.0)])])
    assert ops.Compose([compose]) is compose

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(lambda: [np.arange(4, dtype=np.uint8), np.full(4, 5, np.uint8)], batch=True)
        return compose(x)
    out, = pipe().run()
    assert out.dtype == types.FLOAT
    np.testing.assert_allclose(out.at(0), (np.arange(4) - 1) / 2)
    with pytest.raises(ValueError, match="at least one operator"):
        ops.Compose([])


def test_output_stream_and_constant_nodes():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return (types.ConstantNode("cpu", [1, 2, 3], types.FLOAT, None, None),
                types.ConstantNode(None, np.arange(4, dtype=np.int16).reshape(2, 2), None, None, "XY"),
                types.ConstantNode("cpu", 5, None, (2,), None))
    p = pipe()
    assert p.output_stream() is None  # no GPU operators: no stream
    floats, shorts, fives = p.run()
    assert floats.dtype == types.FLOAT and floats.at(1).tolist() == [1, 2, 3]
    assert shorts.dtype == types.INT16 and shorts.layout() == "XY" and shorts.at(0).tolist() == [[0, 1], [2, 3]]
    assert fives.dtype == types.INT32 and fives.at(0).tolist() == [5, 5]  # DALI's types for these values
