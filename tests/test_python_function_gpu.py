"""Python operators with device="gpu": CuPy arrays, a cupy.ElementwiseKernel as the function,
DLPack capsules, torch CUDA tensors, on the pipeline's stream. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cp.is_available(), reason="needs a CUDA device")]

from penstock import fn, ops, pipeline_def, types  # noqa: E402


def _data(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (4 + i, 5, 3), dtype=np.uint8) for i in range(n)]


def _const(batch):
    return lambda: batch  # no parameters: a source with one (even defaulted) receives the batch info


def _run_gpu(graph, *inputs, **pipe_kw):
    @pipeline_def(batch_size=len(inputs[0]), num_threads=2, device_id=0, **pipe_kw)
    def p():
        srcs = [fn.external_source(source=_const(d)).gpu() for d in inputs]
        out = graph(*srcs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    return [o.as_cpu() for o in p().run()]


def test_cupy_arrays_in_and_out_per_sample():
    data = _data()
    kinds = []

    def f(x):
        kinds.append(type(x))
        return cp.ascontiguousarray(x.astype(cp.float32).mean(axis=2).T)

    (out,) = _run_gpu(lambda x: fn.python_function(x, function=f, device="gpu"), data)
    assert set(kinds) == {cp.ndarray} and out.dtype == types.FLOAT
    for i, s in enumerate(data):
        np.testing.assert_allclose(out.at(i), s.astype(np.float32).mean(axis=2).T, rtol=1e-6)


def test_batch_processing_two_outputs_and_layouts():
    a, b = _data(seed=1), _data(seed=2)

    def f(xs, ys):
        return [y.copy() for y in ys], cp.stack([x.max() for x in xs])

    o1, o2 = _run_gpu(lambda x, y: fn.python_function(x, y, function=f, num_outputs=2, batch_processing=True,
                                                      output_layouts=["HWC"], device="gpu"), a, b)
    assert o1.layout() == "HWC" and o2.layout() == ""
    for i in range(4):
        np.testing.assert_array_equal(o1.at(i), b[i])
        assert o2.at(i) == a[i].max()


def test_elementwise_kernel_as_the_function():
    mix = cp.ElementwiseKernel("uint8 x, uint8 y", "uint8 z", "z = (i % 3) ? x : y", "mix_channels_test")
    a, b = _data(seed=3), _data(seed=4)
    (out,) = _run_gpu(lambda x, y: fn.python_function(x, y, function=mix, device="gpu"), a, b)
    for i in range(4):
        ref = a[i].copy()
        ref[..., 0] = b[i][..., 0]
        np.testing.assert_array_equal(out.at(i), ref)


def test_the_function_runs_on_the_pipelines_stream():
    seen = []

    def f(x):
        seen.append((cp.cuda.get_current_stream().ptr, ops.PythonFunction.current_stream().ptr))
        return x + 1

    data = _data()
    (out,) = _run_gpu(lambda x: fn.python_function(x, function=f, device="gpu"), data)
    assert seen and all(cur == pipe != 0 for cur, pipe in seen)
    for i in range(4):
        np.testing.assert_array_equal(out.at(i), data[i] + 1)
    with pytest.raises(RuntimeError, match="current_stream"):
        ops.PythonFunction.current_stream()


def test_dl_tensor_function_synchronizes_and_takes_capsules():
    data = _data()

    def wrapper(caps):
        arrays = [cp.from_dlpack(c) for c in caps]
        result = [a[::-1].copy() for a in arrays]
        cp.cuda.get_current_stream().synchronize()
        return [r.toDlpack() for r in result]

    (out,) = _run_gpu(lambda x: fn.dl_tensor_python_function(x, function=wrapper, device="gpu",
                                                             synchronize_stream=True), data)
    for i in range(4):
        np.testing.assert_array_equal(out.at(i), data[i][::-1])


def test_exception_on_the_gpu_reaches_run_with_traceback():
    def bad(x):
        raise KeyError("gpu side")

    with pytest.raises(RuntimeError, match="KeyError: 'gpu side'") as info:
        _run_gpu(lambda x: fn.python_function(x, function=bad, device="gpu"), _data())
    assert "in bad" in str(info.value)


def test_torch_cuda_tensors_on_the_pipelines_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from penstock.plugin.pytorch.fn import torch_python_function
    seen = []

    def f(t):
        seen.append((t.is_cuda, torch.cuda.current_stream().cuda_stream, ops.PythonFunction.current_stream().ptr))
        return (t.float() * 2).flip(0)

    data = _data()
    (out,) = _run_gpu(lambda x: torch_python_function(x, function=f, device="gpu"), data)
    assert seen and all(cuda and s == p for cuda, s, p in seen)
    for i in range(4):
        np.testing.assert_allclose(out.at(i), (data[i].astype(np.float32) * 2)[::-1])
