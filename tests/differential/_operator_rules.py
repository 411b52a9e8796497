"""Operator rules that DALI's own operator tests rely on (found by running those tests on both
libraries): normalize's epsilon and degenerate variances, one_hot's scalar-like labels, axes and
axis names, pad's per-sample axes, the sequence and batch operators' refusals, reductions over no
axes, uniform's open upper end, choice's elements and probabilities, select_masks' refusals, the
layouts gaussian_blur and laplacian take and their windows, roi_random_crop's refusals, per-frame
arguments, filter's rounding, warp_perspective's nearest neighbour.
Each case runs on penstock and DALI; errors are compared by class and DALI's words."""
from __future__ import annotations

import numpy as np

from _expressions import Expression

F5 = ([[1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 7.0, 1.0, 8.0, 2.5]], "float32", None)
ONE = ([[1.5], [-2.0]], "float32", None)
ABC = ([np.arange(12).reshape(2, 2, 3).tolist(), (np.arange(12) * 3 % 7).reshape(2, 2, 3).tolist()], "float32",
       "ABC")


def _normalize() -> list[Expression]:
    e = Expression
    return [
        # a given deviation takes epsilon too: sqrt(stddev^2 + epsilon)
        e("normalize:stddev_epsilon", "fn.normalize(a, stddev=2.0, epsilon=0.25)", (F5,)),
        e("normalize:stddev_epsilon_batch", "fn.normalize(a, stddev=2.0, epsilon=1.0, batch=True)", (F5,)),
        e("normalize:stddev_node_epsilon", "fn.normalize(a, stddev=fn.reductions.std_dev(a, fn.reductions.mean("
          "a, keep_dims=True), keep_dims=True), epsilon=0.5)", (F5,)),
        # no degrees of freedom left: a variance of 0, then 0 (times scale, plus shift) rather than 1/0
        e("normalize:ddof_all", "fn.normalize(a, ddof=5)", (F5,)),
        e("normalize:ddof_above_count_shift", "fn.normalize(a, ddof=7, shift=1.0, scale=3.0)", (F5,)),
        e("normalize:ddof_all_epsilon", "fn.normalize(a, ddof=5, epsilon=1.0)", (F5,)),
        e("normalize:ddof_all_mean_epsilon", "fn.normalize(a, mean=1.0, ddof=5, epsilon=0.25)", (F5,)),
        e("normalize:ddof_all_batch", "fn.normalize(a, ddof=10, batch=True)", (F5,)),
        e("normalize:ddof_all_batch_epsilon", "fn.normalize(a, ddof=10, batch=True, epsilon=1.0)", (F5,)),
        e("normalize:single_element", "fn.normalize(a)", (ONE,)),
        e("normalize:single_element_axes", "fn.normalize(a, axes=[0], ddof=2)", (ONE,)),
    ]


def _labels(*shape: int, layout: str | None = None) -> tuple:
    n = int(np.prod(shape))
    return ([(np.arange(n) % 4).reshape(shape).tolist(), ((np.arange(n) + 1) % 4).reshape(shape).tolist()], "int32",
            layout)


def _one_hot() -> list[Expression]:
    e = Expression
    oh = "fn.one_hot(a, num_classes=5"
    return [
        # single-element samples of any rank are scalars for the default axis only
        e("one_hot:unit_2d_default_axis", f"{oh}, axis_name='O')", (_labels(1, 1, layout="AB"),)),
        e("one_hot:unit_3d_default_axis", f"{oh})", (_labels(1, 1, 1, layout="ABC"),)),
        e("one_hot:unit_1d_axis_0", f"{oh}, axis=0)", (_labels(1, layout="A"),)),
        e("one_hot:unit_2d_axis_2_name", f"{oh}, axis=2, axis_name='X')", (_labels(1, 1, layout="AB"),)),
        e("one_hot:unit_1d_no_layout_name", f"{oh}, axis_name='O')", (_labels(1),)),
        # refusals in DALI's words
        e("one_hot:axis_name_two_letters", f"{oh}, axis_name='CD')", (_labels(2, 3, layout="AB"),)),
        e("one_hot:axis_name_empty", f"{oh}, axis_name='')", (_labels(2, 3, layout="AB"),)),
        e("one_hot:axis_name_without_layout", f"{oh}, axis_name='O')", (_labels(2, 3),)),
        e("one_hot:axis_-2", f"{oh}, axis=-2)", (_labels(2, 3, layout="AB"),)),
        e("one_hot:axis_past_end", f"{oh}, axis=3)", (_labels(2, 3, layout="AB"),)),
        e("one_hot:axis_of_scalars", f"{oh}, axis=1)", (([3, 1], "int32", None),)),
    ]


def _per_sample(rows: list, dtype: str = "int32") -> str:
    """An external source giving one array per sample (for argument inputs of ragged length)."""
    return f"fn.external_source(source=lambda: [np.array(r, '{dtype}') for r in {rows!r}])"


def _pad() -> list[Expression]:
    e = Expression
    img = ([np.ones((4, 5, 2)).tolist(), (2 * np.ones((6, 3, 2))).tolist()], "float32", "HWC")
    axes = _per_sample([[1, 0], [2]])
    return [
        # per-sample axes of different counts, each sample's shape / align matching its own axes
        e("pad:ragged_axes_shape", f"fn.pad(a, axes={axes}, shape={_per_sample([[7, 9], [5]])})", (img,)),
        e("pad:ragged_axes_align", f"fn.pad(a, axes={axes}, align={_per_sample([[4, 3], [8]])})", (img,)),
        e("pad:ragged_axes_empty_row", f"fn.pad(a, axes={_per_sample([[], [-1]])}, "
          f"shape={_per_sample([[7, 9, 3], [5]])}, fill_value=3.0)", (img,)),
        e("pad:ragged_axes_row_mismatch", f"fn.pad(a, axes={axes}, shape={_per_sample([[7, 9], [5, 6]])})", (img,)),
        # refusals in DALI's words
        e("pad:align_0", "fn.pad(a, axis_names='H', align=0)", (img,)),
        e("pad:align_negative", "fn.pad(a, axes=[0], align=[-2])", (img,)),
        e("pad:axis_above", "fn.pad(a, axes=[5])", (img,)),
        e("pad:axis_below", "fn.pad(a, axes=[-4])", (img,)),
        e("pad:axis_node_above", f"fn.pad(a, axes={_per_sample([[4, 1], [0]])})", (img,)),
        e("pad:shape_too_long", "fn.pad(a, axes=[0, 1], shape=[7, -1, 3])", (img,)),
        e("pad:align_too_long", "fn.pad(a, axes=[0, 1], align=[2, 2, 3])", (img,)),
    ]


def _sequence_ops() -> list[Expression]:
    e = Expression

    def seq(layout: str | None = "FX", *shape: int) -> tuple:
        shape = shape or (5, 1)
        n = int(np.prod(shape))
        return ([np.arange(n).reshape(shape).tolist(), (np.arange(n) + 10).reshape(shape).tolist()], "int32", layout)

    rearrange = "fn.sequence_rearrange(a, new_order="
    return [
        # element_extract's refusals in DALI's words
        e("element_extract:1d", "fn.element_extract(a, element_map=[1])", (seq("F", 4),)),
        e("element_extract:layout_XF", "fn.element_extract(a, element_map=[1])", (seq("XF", 6, 1),)),
        e("element_extract:layout_HWC", "fn.element_extract(a, element_map=[1])", (seq("HWC", 8, 10, 3),)),
        e("element_extract:index_past_end", "fn.element_extract(a, element_map=[10])", (seq("FX", 6, 1),)),
        e("element_extract:index_negative", "fn.element_extract(a, element_map=[-5])", (seq("FX", 6, 1),)),
        # sequence_rearrange's
        e("sequence_rearrange:index_past_end", f"{rearrange}[6, 7])", (seq(),)),
        e("sequence_rearrange:index_negative", f"{rearrange}[-1])", (seq(),)),
        e("sequence_rearrange:empty", f"{rearrange}[])", (seq(),)),
        e("sequence_rearrange:empty_for_a_sample", f"{rearrange}{_per_sample([[0], []])})", (seq(),)),
        e("sequence_rearrange:node_past_end", f"{rearrange}{_per_sample([[6, 7], [0]])})", (seq(),)),
        e("sequence_rearrange:node_2d", f"{rearrange}{_per_sample([[[1], [2]], [[1], [2]]])})", (seq(),)),
        e("sequence_rearrange:layout_HF", f"{rearrange}[0, 2])", (seq("HF"),)),
        e("sequence_rearrange:layout_HW", f"{rearrange}[0, 2])", (seq("HW"),)),
        # permute_batch's
        e("permute_batch:index_past_end", "fn.permute_batch(a, indices=[0, 3])", (seq(),)),
        e("permute_batch:index_negative", "fn.permute_batch(a, indices=[-1, 0])", (seq(),)),
        e("permute_batch:too_few", "fn.permute_batch(a, indices=[1])", (seq(),)),
        e("permute_batch:too_many", "fn.permute_batch(a, indices=[0, 1, 1])", (seq(),)),
    ]


def _reductions() -> list[Expression]:
    e = Expression
    return [
        # axis_names="" names no axis: nothing is reduced (as axes=[]), the layout stays
        e("reductions:sum_axis_names_empty", "fn.reductions.sum(a, axis_names='')", (ABC,)),
        e("reductions:max_axis_names_empty", "fn.reductions.max(a, axis_names='')", (ABC,)),
        e("reductions:std_dev_axis_names_empty", "fn.reductions.std_dev(a, fn.reductions.mean(a, axes=()), "
          "axis_names='')", (ABC,)),
    ]


def _random() -> list[Expression]:
    e = Expression
    one_step = "range=[np.float32(10.0), np.nextafter(np.float32(10.0), np.float32(11.0))]"
    return [
        # [lo, hi) holds in float32 too: a range one float wide gives lo only (compared exactly as booleans)
        e("random.uniform:range_one_float_wide", f"fn.random.uniform({one_step}, shape=[20000]) == 10.0", ()),
        e("random.uniform:range_one_float_wide_node", "fn.random.uniform(range=fn.constant(fdata=[1.0, float("
          "np.nextafter(np.float32(1.0), np.float32(2.0)))]), shape=[20000]) == 1.0", ()),
    ]


def _choice() -> list[Expression]:
    e = Expression
    ragged = ([[5, 6, 7], [1, 2, 3, 4, 5]], "int32", "N")
    rows = ([[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [10, 11]]], "int16", "NS")
    one_hot = _per_sample([[0, 0, 1], [0, 1, 0, 0, 0]], "float32")  # certain picks: the values compare
    return [
        e("random.choice:p_per_sample_ragged", f"fn.random.choice(a, p={one_hot}, shape=[4])", (ragged,)),
        e("random.choice:p_per_sample_ragged_no_shape", f"fn.random.choice(a, p={one_hot})", (ragged,)),
        e("random.choice:shape_like", f"fn.random.choice(a, b, p={one_hot})",
          (ragged, ([np.zeros((2, 3)).tolist()] * 2, "uint8", None))),
        e("random.choice:rows", "fn.random.choice(a, p=[0.0, 0.0, 1.0], shape=[2])", (rows,)),
        e("random.choice:rows_no_shape", "fn.random.choice(a, p=[0.0, 1.0, 0.0])", (rows,)),
        e("random.choice:rows_2d_shape", "fn.random.choice(a, p=[1.0, 0.0, 0.0], shape=[2, 2])", (rows,)),
        e("random.choice:p_one_value", "fn.random.choice(1, p=1.0, shape=[3])", ()),
        # refusals in DALI's words
        e("random.choice:p_above_1", "fn.random.choice(1, p=1.5)", ()),
        e("random.choice:p_sum", "fn.random.choice(2, p=0.25)", ()),
        e("random.choice:n_negative", "fn.random.choice(-5)", ()),
        e("random.choice:n_0", "fn.random.choice(0)", ()),
        e("random.choice:float_scalar", "fn.random.choice(5.0)", ()),
        e("random.choice:p_length", "fn.random.choice(5, p=np.array([0.25, 0.5, 0.25]))", ()),
    ]


def _select_masks() -> list[Expression]:
    e = Expression
    verts = ([np.arange(18).reshape(9, 2).tolist()] * 2, "float32", None)
    polys = ([[[0, 0, 2], [1, 3, 5], [2, 6, 8]]] * 2, "int32", None)
    select = "tuple(fn.segmentation.select_masks(a, b, c))"
    return [
        e("select_masks:id_missing", select, (([[10, 11], [0]], "int32", None), polys, verts)),
        e("select_masks:four_columns", select, (([[0], [0]], "int32", None),
                                                ([[[0, 0, 2, -1], [1, 3, 5, -1]]] * 2, "int32", None), verts)),
        e("select_masks:vertex_range", select, (([[0], [0]], "int32", None), ([[[0, 0, 20]]] * 2, "int32", None),
                                                ([np.zeros((3, 2)).tolist()] * 2, "float32", None))),
    ]


def _vol(layout: str | None, *shape: int) -> tuple:
    n = int(np.prod(shape))
    return ([((np.arange(n) * 7) % 23).reshape(shape).tolist(), ((np.arange(n) * 5) % 19).reshape(shape).tolist()],
            "float32", layout)


def _convolution_layouts() -> list[Expression]:
    """gaussian_blur and laplacian read layouts alike: without one every dim is spatial; any letter
    but leading F/C and a trailing C is a spatial dim."""
    e = Expression
    layouts = [("empty_3d", _vol(None, 6, 7, 8)), ("empty_1d", _vol(None, 9)), ("empty_4d", _vol(None, 3, 4, 5, 6)),
               ("XYZ", _vol("XYZ", 6, 7, 3)), ("XYC", _vol("XYC", 6, 7, 3)), ("FXYZ", _vol("FXYZ", 3, 4, 5, 6)),
               ("FCX", _vol("FCX", 3, 4, 5)), ("CFHW", _vol("CFHW", 2, 3, 4, 5)), ("DHCW", _vol("DHCW", 6, 7, 8, 3)),
               ("HFWC", _vol("HFWC", 5, 6, 7, 3)), ("FWXYZC", _vol("FWXYZC", 2, 3, 3, 3, 3, 2)),
               ("FCHCW", _vol("FCHCW", 2, 3, 4, 3, 5)), ("FCCHW", _vol("FCCHW", 2, 3, 3, 4, 5)),
               ("XYZW", _vol("XYZW", 3, 4, 5, 6)), ("FC", _vol("FC", 3, 4))]
    return [e(f"{op}:layout_{name}", f"fn.{op}(a{kw})", (data,))
            for op, kw in (("gaussian_blur", ", window_size=3"), ("laplacian", "")) for name, data in layouts]


def _gaussian_windows() -> list[Expression]:
    e = Expression
    img = _vol("HWC", 20, 10, 3)
    return [e(f"gaussian_blur:{name}", f"fn.gaussian_blur(a, {kw})", (img,)) for name, kw in (
        ("sigma_and_window_0", "sigma=0.0, window_size=0"), ("sigma_negative", "sigma=-1.0, window_size=0"),
        ("window_negative", "sigma=0.0, window_size=-11"), ("window_even", "sigma=0.0, window_size=2"),
        ("sigma_negative_axis_1", "sigma=[1.0, -2.0]"), ("window_even_axis_1", "window_size=[3, 4]"))]


def _laplacian_windows() -> list[Expression]:
    e = Expression
    img = ([((np.arange(40 * 40 * 3) % 11).reshape(40, 40, 3)).tolist()] * 2, "uint8", "HWC")
    cases = [("window_31", "window_size=31"), ("window_33", "window_size=33"), ("window_even", "window_size=10"),
             ("window_even_axis", "window_size=[3, 6]"),
             ("smoothing_negative", "smoothing_size=-1"), ("smoothing_33", "window_size=3, smoothing_size=33"),
             ("dtype_uint16", "dtype=types.UINT16"), ("normalized_and_scale", "normalized_kernel=True, scale=1.0"),
             ("window_3_values", "window_size=[3, 7, 3]"), ("scale_3_values", "scale=[3.0, 7.0, 3.0]"),
             ("window_node_3_values", f"window_size={_per_sample([[3, 7, 3], [3, 7, 3]])}"),
             ("window_node_mixed", f"window_size={_per_sample([[5], [3, 7]])}")]
    return [e(f"laplacian:{name}", f"fn.laplacian(a, {kw})", (img,), tolerance=1) for name, kw in cases]


def _roi_random_crop() -> list[Expression]:
    e = Expression
    zeros = ([np.zeros((4, 4)).tolist()] * 2, "float32", None)
    roi = "crop_shape=[2, 2], roi_start=[1, 1]"
    cases = [("in_shape_and_input", f"a, in_shape=[4, 4], {roi}, roi_shape=[1, 1]", (zeros,)),
             ("roi_end_and_shape", f"a, {roi}, roi_shape=[1, 1], roi_end=[2, 2]", (zeros,)),
             ("in_shape_negative", "in_shape=[-4, 4], crop_shape=[2, 2], roi_start=[1, 1], roi_shape=[1, 1]", ()),
             ("crop_negative", "in_shape=[4, 4], crop_shape=[1, -1], roi_start=[1, 1], roi_shape=[1, 1]", ()),
             ("roi_start_negative", "in_shape=[4, 4], crop_shape=[2, 2], roi_start=[-1, -1], roi_shape=[1, 1]", ()),
             ("roi_shape_past_end", f"in_shape=[4, 4], {roi}, roi_shape=[4, 4]", ()),
             ("roi_end_past_end", f"in_shape=[4, 4], {roi}, roi_end=[5, 5]", ()),
             ("crop_bigger", "in_shape=[4, 4], crop_shape=[10, 10], roi_start=[1, 1], roi_shape=[1, 1]", ()),
             ("crop_bigger_than_input", "a, crop_shape=[10, 10], roi_start=[1, 1], roi_shape=[1, 1]", (zeros,))]
    return [e(f"roi_random_crop:{name}", f"fn.roi_random_crop({kw})", data) for name, kw, data in cases]


def _per_frame() -> list[Expression]:
    e = Expression
    mats = ([np.linspace(-1, 1, 5 * 6).reshape(5, 2, 3).tolist(), np.linspace(2, -1, 4 * 6).reshape(4, 2, 3).tolist()],
            "float32", "F**")
    return [
        # an argument of one frame serves every frame; other counts than the input's are refused in DALI's words
        e("per_frame:one_frame_argument", "fn.transforms.rotation(a, angle=fn.per_frame(b))",
          (mats, ([[10.0], [20.0]], "float32", None))),
        e("per_frame:argument_frames_mismatch", "fn.transforms.rotation(a, angle=fn.per_frame(b))",
          (mats, ([[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0]], "float32", None))),
    ]


def _filter_rounding() -> list[Expression]:
    """filter rounds integer outputs half to even (the binomial 3x3 kernel /16 makes many exact .5
    ties on integer images); float outputs are not rounded."""
    e = Expression
    rng = np.random.default_rng(11)
    binomial = (np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16).tolist()
    kernel = ([binomial, binomial], "float32", None)

    def image(dtype: str, lo: int, hi: int) -> tuple:
        return ([rng.integers(lo, hi, (12, 14, 3)).tolist() for _ in range(2)], dtype, "HWC")
    cases = []
    for dtype, lo, hi in (("uint8", 0, 256), ("int16", -900, 900), ("uint16", 0, 65536)):
        data = (image(dtype, lo, hi), kernel)
        cases += [e(f"filter:rounding_{dtype}", "fn.filter(a, b)", data),
                  e(f"filter:rounding_{dtype}_float", "fn.filter(a, b, dtype=types.FLOAT)", data),
                  e(f"filter:rounding_{dtype}_border_constant", "fn.filter(a, b, c, border='constant')",
                    data + (([3, 7], dtype, None),))]
    return cases


def _warp_perspective_nearest() -> list[Expression]:
    """Nearest neighbour picks the pixel the source point rounds to: points within a float's
    rounding of a pixel's edge go where DALI's arithmetic (float32 matrices, the point in float)
    sends them. Photo-like images, perspective matrices of a few degrees, compared exactly."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from make_sample_data import photo_like
    e = Expression
    rng = np.random.default_rng(17)
    images = ([photo_like(rng, 120, 160).tolist() for _ in range(2)], "uint8", "HWC")
    spread = [[0.1, 0.1, 10], [0.1, 0.1, 10], [2e-4, 2e-4, 0]]
    matrices = ([(np.eye(3) + rng.normal(0, spread, (3, 3))).tolist() for _ in range(2)], "float32", None)
    call = "fn.experimental.warp_perspective(a, b, interp_type=types.INTERP_"
    cases = [e(f"warp_perspective:nearest_{name}", f"{call}NN{kw})", (images, matrices)) for name, kw in (
        ("replicate", ", border_mode='replicate'"), ("constant", ""),
        ("replicate_center", ", border_mode='replicate', pixel_origin='center'"),
        ("forward_matrix", ", border_mode='replicate', inverse_map=False"))]
    # linear interpolation at the same points: within one level
    return cases + [e("warp_perspective:linear_replicate", f"{call}LINEAR, border_mode='replicate')",
                      (images, matrices), tolerance=1)]


RULES = (_normalize() + _one_hot() + _pad() + _sequence_ops() + _reductions() + _random() + _choice() + _select_masks()
         + _convolution_layouts() + _gaussian_windows() + _laplacian_windows()
         + _roi_random_crop() + _per_frame() + _filter_rounding() + _warp_perspective_nearest())
