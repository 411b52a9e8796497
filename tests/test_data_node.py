"""DataNode methods and operator-call conventions (api.md §5-§7)."""
import numpy as np
import pytest

import penstock
from penstock import fn, ops, pipeline_def, types

from _util import run_es

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_shape_method():
    (out,) = run_es(lambda a: a.shape(), [X, np.zeros((1, 5, 2), np.float32)])
    assert out.dtype == types.INT64
    assert out.at(0).tolist() == [2, 3, 4] and out.at(1).tolist() == [1, 5, 2]
    (out,) = run_es(lambda a: a.shape(dtype=types.INT32), [X])
    assert out.dtype == types.INT32


def test_shape_in_arithmetic():
    (out,) = run_es(lambda a: a.shape()[0] * 10, [X])
    assert out.at(0).tolist() == 20


def test_layout_property():
    (out,) = run_es(lambda a: a.property("layout"), [X], layouts=["HWC"])
    assert out.dtype == types.UINT8
    assert bytes(out.at(0)).decode() == "HWC"


def test_multiple_input_sets():
    outs = run_es(lambda a, b: tuple(fn.cast([a, b], dtype=types.INT8)), [X], [X + 1])
    assert len(outs) == 2
    assert all(o.dtype == types.INT8 for o in outs)
    np.testing.assert_array_equal(outs[1].at(0), (X + 1).astype(np.int8))


def test_none_kwargs_mean_default():
    (out,) = run_es(lambda a: fn.transpose(a, perm=None), [X])
    np.testing.assert_array_equal(out.at(0), X.T)


def test_gpu_pipeline_fails_at_build_without_gpu():
    with pytest.raises(RuntimeError):
        run_es(lambda a: a.gpu(), [X])
    with pytest.raises(RuntimeError):
        run_es(lambda a: fn.cast(a, dtype=types.INT8, device="gpu"), [X])


def test_bool_message_mentions_conditionals():
    holder = {}

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [X])
        try:
            bool(x)
        except TypeError as e:
            holder["msg"] = str(e)
        return x

    p()
    assert "enable_conditionals" in holder["msg"]


def test_default_device_cpu():
    holder = {}

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [X])
        holder["y"] = fn.cast(x, dtype=types.INT8)
        holder["z"] = x + 1
        return holder["y"]

    p()
    assert holder["y"].device == "cpu" and holder["z"].device == "cpu"


def test_ops_returns_list_for_multiple_outputs(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x")
    holder = {}

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        outs = fn.readers.file(files=[str(tmp_path / "a.bin")])
        holder["outs"] = outs
        return tuple(outs)

    p()
    assert isinstance(holder["outs"], (list, tuple)) and len(holder["outs"]) == 2


def test_executor_statistics_after_run():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return fn.copy(fn.external_source(source=lambda: [X]), name="the_copy")

    pipe = p()
    pipe.run()
    stats = pipe.executor_statistics()
    assert isinstance(stats, dict)


def _define(graph):
    """Runs ``graph(x)`` at graph-definition time only (nothing is built, so no GPU is needed)."""
    pipe = penstock.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = fn.external_source(source=lambda: [X])
        return graph(x)


def test_fn_default_device_follows_positional_inputs():
    assert _define(lambda x: x.gpu().device) == "gpu"
    assert _define(lambda x: fn.cast(x.gpu(), dtype=types.INT8).device) == "gpu"
    assert _define(lambda x: (x + x.gpu()).device) == "gpu"
    assert _define(lambda x: fn.cat(x, x.gpu()).device) == "gpu"
    assert _define(lambda x: fn.cast(x, dtype=types.INT8).device) == "cpu"
    assert _define(lambda x: x.gpu().cpu().device) == "cpu"


def test_argument_inputs_do_not_set_device():
    assert _define(lambda x: fn.random.normal(x, mean=fn.random.uniform()).device) == "cpu"


def test_multiple_input_sets_device():
    devs = _define(lambda x: [n.device for n in fn.cast([x, x.gpu()], dtype=types.INT8)])
    assert devs == ["gpu", "gpu"]


def test_ops_default_cpu_and_gpu_argument_input_rejected():
    with pytest.raises(ValueError):
        _define(lambda x: ops.Cast(dtype=types.INT8)(x.gpu()))
    with pytest.raises(ValueError):
        _define(lambda x: fn.random.normal(shape=[2], mean=x.gpu()))


def test_data_node_is_not_iterable():
    """Code tells a node from a list of nodes with isinstance(x, Iterable), as with DALI's."""
    import collections.abc

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [np.zeros(2, np.float32)])
        assert not isinstance(x, collections.abc.Iterable)
        with pytest.raises(TypeError, match="not iterable"):
            iter(x)
        with pytest.raises(TypeError):
            list(x)
        return x

    p()


def test_external_source_num_outputs_1_is_a_list():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        outs = fn.external_source(source=lambda: ([np.arange(3), np.arange(4)],), num_outputs=1)
        assert isinstance(outs, list) and len(outs) == 1
        return outs[0]

    (out,) = p().run()
    assert out.shape() == [(3,), (4,)]
    np.testing.assert_array_equal(out.at(1), np.arange(4))


@pytest.mark.parametrize("layout", ["NHWC", "HW"])
def test_external_source_layout_must_fit_ndim(layout):
    with pytest.raises(RuntimeError, match=f"'{layout}' cannot describe 3-D") as e:
        run_es(lambda a: a, [np.zeros((4, 4, 3), np.uint8)], layouts=[layout])
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("graph,layout", [(lambda x: fn.resize(x, resize_x=2, resize_y=2), "abc"),
                                          (lambda x: fn.flip(x), "xyz"),
                                          (lambda x: fn.brightness(x, brightness=1.5), "CHW")])
def test_operator_rejects_a_layout_it_cannot_take(graph, layout):
    with pytest.raises(ValueError, match=f'The layout "{layout}" does not match any of the allowed layouts') as e:
        run_es(graph, [np.zeros((3, 4, 3), np.uint8)], layouts=[layout])
    assert isinstance(e.value, RuntimeError)


def test_gpu_data_given_to_a_cpu_operator_is_refused_in_dalis_words():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def as_input():
        return fn.cast(fn.random.uniform(shape=[2]).gpu(), dtype=types.INT32, device="cpu")

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def as_argument():
        window = fn.random.uniform(range=[0.1, 0.3], shape=[1])
        return fn.slice(fn.random.uniform(shape=[8]), rel_start=window.gpu(), rel_shape=window, device="cpu")

    with pytest.raises(RuntimeError, match='The input 0 for cpu operator `penstock.fn.cast` is stored on '
                                           'incompatible device "gpu". Valid device is "cpu".'):
        as_input()
    with pytest.raises(ValueError, match="Invalid device \"gpu\" for argument 'rel_start' of operator "
                                         "'penstock.fn.slice'. Named arguments must be on CPU."):
        as_argument()
