"""reshape / reinterpret (shape, rel_shape and src_dims, their wildcards and refusals, shape inputs,
reinterpretation in bytes) and the Python operators (outputs and their number, layouts, refusals)
on penstock and DALI. Errors carry DALI's words."""
from __future__ import annotations

import numpy as np

from _expressions import Expression


def _zeros(*shapes: tuple, dtype: str = "uint8", layout: str | None = None) -> tuple:
    samples = [(np.arange(int(np.prod(s))) % 251).reshape(s).tolist() for s in shapes]
    return (samples, dtype, layout)


IMG = _zeros((6, 8, 3), (4, 10, 3), layout="HWC")


def _reshapes() -> list[Expression]:
    e = Expression
    return [
        e("reshape:rel_wildcard_layout", "fn.reshape(a, rel_shape=(-1, 3), layout='ab')", (IMG,)),
        e("reshape:rel", "fn.reshape(a, rel_shape=(1, 3), layout='ab')", (IMG,)),
        e("reshape:shape_wildcard", "fn.reshape(a, shape=(24, -1))", (_zeros((6, 8, 3), (6, 4, 6)),)),
        e("reshape:shape_input", "fn.reshape(a, fn.python_function(a, function=lambda s: np.int32([s.shape[0], "
          "s.shape[1] * 3])), layout='ab')", (IMG,)),
        e("reshape:shape_input_wildcard", "fn.reshape(a, fn.python_function(a, function=lambda s: "
          "np.int32([s.shape[0], -1])), layout='ab')", (IMG,)),
        e("reshape:shape_input_float", "fn.reshape(a, fn.python_function(a, function=lambda s: np.float32([6, 24])))",
          (_zeros((6, 24), (6, 24)),)),
        e("reshape:arg_input_rel", "fn.reshape(a, rel_shape=fn.python_function(a, function=lambda s: "
          "np.float32([2, 0.5, 1])))", (IMG,)),
        e("reshape:arg_input_rel_wildcard", "fn.reshape(a, rel_shape=fn.python_function(a, function=lambda s: "
          "np.float32([-1, 0.5, 1])))", (IMG,)),
        e("reshape:arg_input_shape", "fn.reshape(a, shape=fn.python_function(a, function=lambda s: "
          "np.int32([2 * s.shape[0], s.shape[1] // 2, 3])))", (IMG,)),
        e("reshape:arg_input_shape_wildcard", "fn.reshape(a, shape=fn.python_function(a, function=lambda s: "
          "np.int32([-1, s.shape[1] // 2, 3])))", (IMG,)),
        e("reshape:src_dims_01", "fn.reshape(a, src_dims=[0, 1])", (_zeros((20, 30, 1), (30, 40, 1)),)),
        e("reshape:src_dims_120", "fn.reshape(a, src_dims=[1, 2, 0])", (_zeros((2, 3, 4), (4, 3, 2)),)),
        e("reshape:src_dims_1", "fn.reshape(a, src_dims=[1])", (_zeros((1, 2, 1), (1, 3, 1)),)),
        e("reshape:src_dims_new_dim", "fn.reshape(a, src_dims=[2, -1, 1, 0])", (_zeros((2, 3, 4), (2, 3, 4)),)),
        e("reshape:src_dims_rel", "fn.reshape(a, src_dims=[2, 0, 1], rel_shape=[0.5, 0.5, -1])",
          (_zeros((20, 30, 10), (20, 30, 10)),)),
        e("reshape:src_dims_rel_node", "fn.reshape(a, src_dims=[2, 0, 1], rel_shape=fn.constant(fdata=[0.5, 0.5, -1], "
          "dtype=types.FLOAT))", (_zeros((20, 30, 10), (20, 30, 10)),)),
        e("reshape:src_dims_empty", "fn.reshape(a, src_dims=[])", (_zeros((1,), (1,)),)),
        e("reshape:src_dims_same_rank_keeps_layout", "fn.reshape(a, src_dims=[1, 0])",
          (_zeros((2, 3), (2, 3), layout="HW"),)),
        e("reshape:volume_src_dims", "fn.reshape(a, src_dims=[2, 0])", (_zeros((2, 5, 2), (2, 5, 2)),)),
        e("reshape:src_dims_rel_lengths", "fn.reshape(a, src_dims=[2, 0, 1], rel_shape=[1, -1])",
          (_zeros((1, 2, 3), (1, 2, 3)),)),
        e("reshape:src_dims_out_of_bounds", "fn.reshape(a, src_dims=[0, 1, 3])", (_zeros((1, 2, 3), (1, 2, 3)),)),
        e("reshape:rel_more_than_dims", "fn.reshape(a, rel_shape=[1, -1, 1])", (_zeros((4, 6), (3, 2)),)),
        e("reshape:rel_infer_from_zero", "fn.reshape(a, rel_shape=[-1, 1])", (_zeros((4, 6), (3, 0)),)),
        e("reshape:volume_shape", "fn.reshape(a, shape=[5, 5])", (_zeros((4, 6), (4, 6)),)),
        e("reshape:two_wildcards", "fn.reshape(a, shape=[-1, 2, -1])", (_zeros((4, 6), (4, 6)),)),
        e("reshape:zero_extent", "fn.reshape(a, shape=[0, -1])", (_zeros((2, 3, 4), (2, 3, 4)),)),
        e("reshape:shape_and_rel", "fn.reshape(a, shape=[4, 6], rel_shape=[1, 1])", (_zeros((4, 6), (4, 6)),)),
        e("reshape:layout_rank", "fn.reshape(a, shape=[24], layout='ab')", (_zeros((4, 6), (4, 6)),)),
        e("reshape:keeps_layout", "fn.reshape(a, shape=[6, 4])", (_zeros((4, 6), (4, 6), layout="HW"),)),
        e("reshape:drops_layout", "fn.reshape(a, shape=[24])", (_zeros((4, 6), (4, 6), layout="HW"),)),
        e("reinterpret:default", "fn.reinterpret(a, dtype=types.INT32)", (_zeros((4, 8), (6, 12)),)),
        e("reinterpret:default_indivisible", "fn.reinterpret(a, dtype=types.INT32)", (_zeros((4, 6), (4, 6)),)),
        e("reinterpret:shape", "fn.reinterpret(a, shape=(20, 2), dtype=types.INT32)", (_zeros((10, 16), (10, 16)),)),
        e("reinterpret:shape_wildcard", "fn.reinterpret(a, shape=(-1, 2), dtype=types.INT32)",
          (_zeros((10, 16), (10, 8)),)),
        e("reinterpret:rel_wildcard", "fn.reinterpret(a, rel_shape=[1, -1], dtype=types.INT16)",
          (_zeros((2, 12), (4, 12)),)),
        e("reinterpret:shape_input_wildcard", "fn.reinterpret(a, fn.python_function(a, function=lambda s: "
          "np.int32([-1, 2])), dtype=types.INT16)", (_zeros((2, 12), (2, 12)),)),
        e("reinterpret:volume", "fn.reinterpret(a, dtype=types.INT16, shape=[5, 5])", (_zeros((4, 6), (4, 6)),)),
        e("reinterpret:layout", "fn.reinterpret(a, layout='XY')", (_zeros((4, 6), (4, 6), layout="HW"),)),
    ]


def _python_functions() -> list[Expression]:
    e, pf = Expression, "fn.python_function"
    return [
        e("python:one_output", f"{pf}(a, function=lambda s: s[:, :, 1] / 255.)", (IMG,)),
        e("python:channels_mean", f"{pf}(a, function=lambda s: s.mean(axis=(0, 1)))", (IMG,)),
        e("python:bool_output", f"{pf}(a, function=lambda s: s > 127)", (IMG,)),
        e("python:two_outputs", f"{pf}(a, function=lambda s: (s[:, :, 0], s[:, :, 2]), num_outputs=2)", (IMG,)),
        e("python:mixed_types", f"{pf}(a, function=lambda s: (s > 127, s[:, :, 1] / 255.), num_outputs=2)", (IMG,)),
        e("python:two_inputs_three_outputs", f"{pf}(a, b, function=lambda x, y: (x[:, :, 2], y[:, :, 0] / 2, x > y), "
          "num_outputs=3)", (IMG, IMG)),
        e("python:batch_processing", f"{pf}(a, b, function=lambda xs, ys: ([x[:, :, 0] for x in xs], [y + 1 for y in "
          "ys]), num_outputs=2, batch_processing=True)", (IMG, IMG)),
        e("python:no_input", f"{pf}(function=lambda: np.zeros([2, 2, 2]))", ()),
        e("python:layouts_list", f"{pf}(a, function=lambda s: (s, s.mean(2)), num_outputs=2, "
          "output_layouts=['ABC', 'DE'])", (IMG,)),
        e("python:layouts_string", f"{pf}(a, function=lambda s: (s, s / 2), num_outputs=2, output_layouts='FGH')",
          (IMG,)),
        e("python:layouts_short_list", f"{pf}(a, function=lambda s: (s, s / 2), num_outputs=2, "
          "output_layouts=['IJK'])", (IMG,)),
        e("python:layouts_too_many", f"{pf}(a, function=lambda s: s, output_layouts=['HWC', 'HWC'])", (IMG,)),
        e("python:not_a_tuple", f"{pf}(a, function=lambda s: [s, s], num_outputs=2)", (IMG,)),
        e("python:not_a_tuple_batch", f"{pf}(a, function=lambda xs: [x for x in xs], num_outputs=2, "
          "batch_processing=True)", (IMG,)),
        e("python:three_for_two", f"{pf}(a, function=lambda s: (s, s, s), num_outputs=2)", (IMG,)),
        e("python:three_for_two_dlpack", "fn.dl_tensor_python_function(a, function=lambda s: (s, s, s), "
          "num_outputs=2)", (IMG,)),
        e("python:dlpack_flip", "fn.dl_tensor_python_function(a, function=lambda t: lib.ops._dlpack_from_array("
          "np.fliplr(lib.ops._dlpack_to_array(t))), batch_processing=False)", (IMG,)),
        e("python:none_for_one", f"{pf}(a, function=lambda s: None)", (IMG,)),
        e("python:batch_of_wrong_size", f"{pf}(a, function=lambda xs: xs[:1], batch_processing=True)", (IMG,)),
        e("python:function_raises", f"{pf}(a, function=lambda s: undefined_name)", (IMG,)),
        e("python:input_sets", "lib.ops.PythonFunction(function=lambda s: s)([a, a])", (IMG,)),
    ]


SHAPE_AND_PYTHON = _reshapes() + _python_functions()
