"""python_function / dl_tensor_python_function on the CPU (operators/python_function.py)."""
import threading
import time

import numpy as np
import pytest

from penstock import Pipeline, fn, ops, pipeline_def, types
from penstock.tensors import TensorCPU


def _const(d):
    return lambda: d


def _ragged(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (2 + i, 3 + (i % 2), 3), dtype=np.uint8) for i in range(n)]


def _run(graph, inputs, **pipe_kw):
    kw = dict(batch_size=len(inputs[0]), num_threads=2, device_id=None)
    kw.update(pipe_kw)

    @pipeline_def(**kw)
    def p():
        srcs = [fn.external_source(source=_const(d)) for d in inputs]
        out = graph(*srcs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    return p().run()


def _samples(tl):
    return [tl.at(i) for i in range(len(tl))]


def test_per_sample_output_type_and_shape_follow_the_function():
    data = _ragged()
    (out,) = _run(lambda x: fn.python_function(x, function=lambda s: s.astype(np.float64).sum(axis=2).T), [data])
    assert out.dtype == types.FLOAT64 and out.layout() == ""
    for got, s in zip(_samples(out), data):
        np.testing.assert_array_equal(got, s.astype(np.float64).sum(axis=2).T)


def test_several_outputs_and_output_layouts():
    a, b = _ragged(seed=1), _ragged(seed=2)

    def swap_and_mean(x, y):
        return y.copy(), x.astype(np.float32).mean(axis=(0, 1)), np.int16(x.shape[0])

    o1, o2, o3 = _run(lambda x, y: tuple(fn.python_function(x, y, function=swap_and_mean, num_outputs=3,
                                                            output_layouts=["HWC", "C"])), [a, b])
    assert (o1.layout(), o2.layout(), o3.layout()) == ("HWC", "C", "")
    assert (o1.dtype, o2.dtype, o3.dtype) == (types.UINT8, types.FLOAT, types.INT16)
    for i in range(4):
        np.testing.assert_array_equal(o1.at(i), b[i])
        np.testing.assert_allclose(o2.at(i), a[i].astype(np.float32).mean(axis=(0, 1)), rtol=1e-6)
        assert o3.at(i).shape == () and o3.at(i) == a[i].shape[0]


def test_one_layout_string_applies_to_every_output():
    # DALI 2.4: a string is every output's layout, a list the first outputs'
    data = _ragged()
    o1, o2 = _run(lambda x: tuple(fn.python_function(x, function=lambda s: (s, s // 2), num_outputs=2,
                                                     output_layouts="HWC")), [data])
    assert o1.layout() == "HWC" and o2.layout() == "HWC"
    o1, o2 = _run(lambda x: tuple(fn.python_function(x, function=lambda s: (s, s[..., 0]), num_outputs=2,
                                                     output_layouts=["HWC"])), [data])
    assert o1.layout() == "HWC" and o2.layout() == ""


def test_zero_outputs_runs_every_sample_and_is_never_pruned():
    data = _ragged()
    seen = []

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, exec_async=False, exec_pipelined=False)
    def p():
        x = fn.external_source(source=_const(data))
        assert fn.python_function(x, function=lambda s: seen.append(int(s.sum())), num_outputs=0) is None
        return x

    pipe = p()
    for _ in range(3):
        pipe.run()
    assert seen == [int(s.sum()) for s in data] * 3


def test_batch_processing_gets_lists_and_may_return_a_list_or_one_array():
    a, b = _ragged(seed=3), _ragged(seed=4)
    calls = []

    def per_batch(xs, ys):
        calls.append((type(xs), len(xs), len(ys)))
        return [x[::-1] for x in xs], np.stack([np.float32(y.max()) for y in ys])

    o1, o2 = _run(lambda x, y: tuple(fn.python_function(x, y, function=per_batch, num_outputs=2,
                                                        batch_processing=True)), [a, b])
    assert calls == [(list, 4, 4)] * len(calls) and calls
    for i in range(4):
        np.testing.assert_array_equal(o1.at(i), a[i][::-1])
        assert o2.at(i).shape == () and o2.at(i) == b[i].max()


def test_no_inputs_per_sample_and_per_batch():
    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        per_sample = fn.python_function(function=lambda: np.arange(4, dtype=np.int32))
        per_batch = fn.python_function(function=lambda: [np.full((k,), k, np.int64) for k in range(3)],
                                       batch_processing=True)
        return per_sample, per_batch

    s, b = p().run()
    assert len(s) == 3 and all((s.at(i) == np.arange(4)).all() for i in range(3))
    assert [b.at(k).tolist() for k in range(3)] == [[], [1], [2, 2]]


def test_inputs_are_read_only_views():
    def in_place(s):
        s[0] = 0
        return s

    with pytest.raises(RuntimeError, match="read-only"):
        _run(lambda x: fn.python_function(x, function=in_place), [_ragged()])


def test_returned_arrays_are_copied_so_the_function_may_reuse_them():
    scratch = np.zeros((2, 2), np.int32)
    counter = iter(range(100))

    def reuse():
        scratch[...] = next(counter)
        return [scratch] * 2

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=2)
    def p():
        return fn.python_function(function=reuse, batch_processing=True)

    pipe = p()
    first, second = pipe.run()[0], pipe.run()[0]
    assert (first.at(0) == 0).all() and (second.at(1) == 1).all()


def test_exception_reaches_run_with_message_and_the_functions_traceback():
    def fails_on_big(s):
        if s.shape[0] > 3:
            raise ValueError("sample too tall")
        return s

    with pytest.raises(RuntimeError) as info:
        _run(lambda x: fn.python_function(x, function=fails_on_big), [_ragged()])
    msg = str(info.value)
    assert "python_function" in msg and "sample 2" in msg and "ValueError: sample too tall" in msg
    assert "in fails_on_big" in msg and 'raise ValueError("sample too tall")' in msg
    assert isinstance(info.value.__cause__.__cause__, ValueError)


def test_exception_in_batch_mode_and_pipeline_keeps_reporting():
    def broken(xs):
        return [1 / 0 for _ in xs]

    with pytest.raises(RuntimeError, match="ZeroDivisionError: division by zero") as info:
        _run(lambda x: fn.python_function(x, function=broken, batch_processing=True), [_ragged()])
    assert "in <listcomp>" in str(info.value) or "in broken" in str(info.value)


@pytest.mark.parametrize("fn_, k, msg", [  # DALI's words
    (lambda s: s, 2, "must be a tuple"),
    (lambda s: (s, s, s), 2, "Unexpected number of outputs from Pythonfunction operator - got 3, expected 2"),
    (lambda s: None, 1, "returned 0 outputs and 1 were expected"),
    (lambda s: (s, s), 1, "num_outputs=1"),
    (lambda s: s, 0, "num_outputs=0"),
])
def test_wrong_number_of_outputs(fn_, k, msg):
    with pytest.raises(RuntimeError, match=msg):
        _run(lambda x: (fn.python_function(x, function=fn_, num_outputs=k), x)[k != 1], [_ragged()])


def test_samples_of_an_output_must_share_type_and_rank():
    def mixed(s):
        return s if s.shape[0] % 2 else s.astype(np.float32)

    with pytest.raises(RuntimeError, match="output 0, sample 1 is uint8"):
        _run(lambda x: fn.python_function(x, function=mixed), [_ragged()])


def test_layout_must_fit_the_returned_rank():
    with pytest.raises(RuntimeError, match="output_layouts gives 'HW' for output 0"):
        _run(lambda x: fn.python_function(x, function=lambda s: s, output_layouts="HW"), [_ragged()])


def test_a_returned_penstock_tensor_keeps_its_layout():
    (out,) = _run(lambda x: fn.python_function(x, function=lambda s: TensorCPU(s, "HWC")), [_ragged()])
    assert out.layout() == "HWC"


def test_needs_a_current_pipeline():
    with pytest.raises(RuntimeError, match="Current Pipeline not set!.*pipeline is current"):
        fn.python_function(function=lambda: np.zeros(1))
    op = ops.PythonFunction(function=lambda: np.zeros(1))
    with pytest.raises(RuntimeError, match="Current Pipeline not set!"):
        op()


def test_multiple_input_sets_and_bad_arguments_are_rejected():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=_const(_ragged(2)))
        with pytest.raises(TypeError, match="Python Operators do not support Multiple Input Sets"):
            fn.python_function([x, x], function=lambda s: s)
        with pytest.raises(TypeError, match="'function' must be a callable"):
            fn.python_function(x, function=3)
        with pytest.raises(ValueError, match="num_outputs"):
            fn.python_function(x, function=lambda s: s, num_outputs=-1)
        with pytest.raises(TypeError, match="output_layouts"):
            fn.python_function(x, function=lambda s: s, output_layouts=[1])
        with pytest.raises(RuntimeError, match=r"The length of the ``output_layouts`` \(=2\) is greater than the "
                                               r"number of outputs \(=1\)"):
            fn.python_function(x, function=lambda s: s, output_layouts=["HW", "HWC"])


def test_not_serializable():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="data")
        pipe.set_outputs(fn.python_function(x, function=lambda s: s))
    with pytest.raises(RuntimeError, match="python_function .* cannot be serialized"):
        pipe.serialize()


def test_ops_classes_in_a_pipeline_subclass():
    data = _ragged()

    class P(Pipeline):
        def __init__(self):
            super().__init__(batch_size=4, num_threads=2, device_id=None)
            self.src = ops.ExternalSource(source=_const(data))
            self.double = ops.PythonFunction(function=lambda s: s.astype(np.int32) * 2)
            self.flip = ops.DLTensorPythonFunction(
                function=lambda caps: [np.from_dlpack(TensorCPU(c))[::-1].copy().__dlpack__() for c in caps])

        def define_graph(self):
            x = self.src()
            return self.double(x), self.flip(x)

    doubled, flipped = P().run()
    for i in range(4):
        np.testing.assert_array_equal(doubled.at(i), data[i].astype(np.int32) * 2)
        np.testing.assert_array_equal(flipped.at(i), data[i][::-1])


def test_dl_tensor_function_gets_capsules_per_batch_by_default():
    kinds = []

    def per_batch(caps):
        kinds.append((type(caps).__name__, type(caps[0]).__name__))
        return [c for c in caps]  # capsules straight back

    (out,) = _run(lambda x: fn.dl_tensor_python_function(x, function=per_batch), [_ragged()])
    assert kinds[0] == ("list", "PyCapsule")
    for got, s in zip(_samples(out), _ragged()):
        np.testing.assert_array_equal(got, s)

    seen = []
    _run(lambda x: fn.dl_tensor_python_function(x, function=lambda c: seen.append(type(c).__name__) or c,
                                                batch_processing=False), [_ragged()])
    assert set(seen) == {"PyCapsule"} and len(seen) >= 4


def test_the_pipeline_is_current_inside_the_function():
    inside = []

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.python_function(function=lambda: inside.append(Pipeline.current()) or np.zeros(1))

    pipe = p()
    pipe.run()
    assert inside and all(c is pipe for c in inside)


def test_calls_are_serial_in_sample_order_off_the_calling_thread():
    data = _ragged(8)

    def recorder(calls):  # one list per pipeline: the first one keeps prefetching in the background
        def record(s):
            calls.append((threading.current_thread().name, int(s.sum())))
            return s
        return record

    async_calls, sync_calls = [], []

    @pipeline_def(batch_size=8, num_threads=2, device_id=None)
    def p():
        return fn.python_function(fn.external_source(source=_const(data)), function=recorder(async_calls))

    p().run()
    assert [v for _, v in async_calls[:8]] == [int(s.sum()) for s in data]
    assert threading.main_thread().name not in {t for t, _ in async_calls}

    @pipeline_def(batch_size=8, num_threads=2, device_id=None, exec_async=False, exec_pipelined=False)
    def q():
        return fn.python_function(fn.external_source(source=_const(data)), function=recorder(sync_calls))

    q().run()
    assert {t for t, _ in sync_calls} == {threading.main_thread().name}  # DALI's synchronous mode


def test_python_operators_get_their_own_pipelined_worker():
    from penstock._executor import _pipelined_groups

    class Native:
        runs_python = False

    class Py:
        runs_python = True

    a, b, c, d, e = Native(), Native(), Py(), Py(), Native()
    g = Native()
    assert _pipelined_groups([[a, b, c, d, e], [g]]) == [[a, b], [c, d], [e], [g]]
    assert _pipelined_groups([[c], [a]]) == [[c], [a]]


def test_gpu_device_without_a_gpu_fails_at_build_with_the_standard_error():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.python_function(function=lambda: np.zeros(1), device="gpu")

    with pytest.raises(RuntimeError, match="GPU"):
        p().build()


def test_error_names_the_file_of_the_failing_sample(tmp_path):
    for name, size in (("a.bin", 3), ("b.bin", 5), ("c.bin", 2)):
        (tmp_path / name).write_bytes(bytes(range(size)))

    def refuse_five(data):
        if data.size == 5:
            raise ValueError("five bytes are not allowed")
        return data

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(files=[str(tmp_path / n) for n in ("a.bin", "b.bin", "c.bin")])
        return fn.python_function(data, function=refuse_five)

    with pytest.raises(RuntimeError, match=r"sample 1 \(source: '.*b\.bin'\)"):
        p().run()


def test_outputs_feed_native_operators():
    data = _ragged()

    def pipeline_graph(x):
        y = fn.python_function(x, function=lambda s: s.astype(np.float32) / 2, output_layouts="HWC")
        return fn.transpose(y + 1, perm=[2, 0, 1])

    (out,) = _run(pipeline_graph, [data])
    assert out.layout() == "CHW"
    for got, s in zip(_samples(out), data):
        np.testing.assert_allclose(got, (s.astype(np.float32) / 2 + 1).transpose(2, 0, 1))


def test_python_operators_of_the_process_run_one_at_a_time():
    active, overlaps = [], []

    def guarded(s):
        active.append(1)
        if len(active) > 1:
            overlaps.append(True)
        time.sleep(0.002)  # releases the GIL: another operator's call could start here
        active.pop()
        return s

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, prefetch_queue_depth=3)
    def p():
        x = fn.external_source(source=_const(_ragged()))
        y = fn.python_function(x, function=guarded)
        return fn.python_function(y + 1, function=guarded)  # a native op between: two workers

    pipes = [p(), p()]
    results = []

    def drive(pipe):
        for _ in range(4):
            results.append(pipe.run())

    threads = [threading.Thread(target=drive, args=(q,)) for q in pipes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and not overlaps
