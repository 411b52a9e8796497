"""torch_python_function / TorchPythonFunction (plugins/pytorch/penstock_pytorch/fn.py) on the CPU."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from penstock import Pipeline, fn, pipeline_def, types  # noqa: E402
import penstock.plugin.pytorch as pt  # noqa: E402
from penstock.plugin.pytorch.fn import torch_python_function  # noqa: E402


def _data(n=4):
    rng = np.random.default_rng(5)
    return [rng.integers(0, 255, (3 + i, 2, 3), dtype=np.uint8) for i in range(n)]


def test_namespaces():
    assert pt.fn.torch_python_function is torch_python_function
    assert pt.TorchPythonFunction.schema.fn_name == "torch_python_function"


def test_per_sample_torch_tensors_in_and_out():
    data = _data()
    kinds = []

    def f(t):
        kinds.append(type(t))
        return (t.float() / 2).permute(2, 0, 1), t.sum(dim=(0, 1))

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def p():
        x = fn.external_source(source=lambda: data, layout="HWC")
        return tuple(torch_python_function(x, function=f, num_outputs=2, output_layouts=["CHW"]))

    a, b = p().run()
    assert set(kinds) == {torch.Tensor}
    assert a.dtype == types.FLOAT and a.layout() == "CHW" and b.dtype == types.INT64
    for i, s in enumerate(data):
        np.testing.assert_allclose(a.at(i), (s.astype(np.float32) / 2).transpose(2, 0, 1))
        np.testing.assert_array_equal(b.at(i), s.astype(np.int64).sum(axis=(0, 1)))


def test_ops_class_batch_processing():
    data = [np.full((2, 2), k, np.int32) for k in range(4)]

    class P(Pipeline):
        def __init__(self):
            super().__init__(batch_size=4, num_threads=1, device_id=None)
            self.f = pt.TorchPythonFunction(function=lambda ts: [t * len(ts) for t in ts], batch_processing=True)

        def define_graph(self):
            return self.f(fn.external_source(source=lambda: data))

    (out,) = P().run()
    for k in range(4):
        np.testing.assert_array_equal(out.at(k), np.full((2, 2), 4 * k, np.int32))


def test_exception_carries_the_functions_traceback():
    def bad(t):
        return t.view(-1, 7)  # not divisible

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return torch_python_function(fn.external_source(source=lambda: _data(2)), function=bad)

    with pytest.raises(RuntimeError, match="torch_python_function") as info:
        p().run()
    assert "in bad" in str(info.value) and "t.view(-1, 7)" in str(info.value)


def test_needs_a_current_pipeline_and_is_not_serializable():
    with pytest.raises(RuntimeError, match="pipeline is current"):
        torch_python_function(function=lambda: torch.zeros(1))
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(torch_python_function(function=lambda: torch.zeros(1)))
    with pytest.raises(RuntimeError, match="cannot be serialized"):
        pipe.serialize()


def test_example_python_operators_runs_on_the_cpu(tmp_path):
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "examples"))
    import python_operators as example
    from make_sample_data import make_dataset
    root = make_dataset(str(tmp_path), classes=1, per_class=4, size=(40, 50))
    out1, out2, mixed, mixed_dl = example.build(root, gpu=False, batch_size=2).run()
    h = w = example.SIZE
    y, x = np.ogrid[0:h, 0:w]
    outside = ((x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9)[..., None]
    for i in range(2):
        res1 = np.where(outside, out2.at(i), out1.at(i))  # undo the swap outside the ellipse
        res2 = np.where(outside, out1.at(i), out2.at(i))
        ref = res1.copy()
        ref[..., 0] = res2[..., 0]
        np.testing.assert_array_equal(mixed.at(i), ref)
        np.testing.assert_array_equal(mixed_dl.at(i), ref)
    assert out1.layout() == "HWC" and mixed.layout() == "HWC"


def test_read_only_source_memory_reaches_dlpack_and_torch_functions():
    frozen = np.arange(8, dtype=np.int32).reshape(2, 4)
    frozen.flags.writeable = False

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: frozen)
        return (torch_python_function(x, function=lambda t: t * 3),
                fn.dl_tensor_python_function(x, function=lambda caps: caps))

    tripled, same = p().run()
    np.testing.assert_array_equal(tripled.as_array(), frozen * 3)
    np.testing.assert_array_equal(same.as_array(), frozen)
