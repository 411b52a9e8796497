"""Hand-written corner cases of slice, squeeze and expand_dims, and per-sample arguments of pad, erase
and reshape (the generated table varies one argument at a time; these combine arguments, per-sample
argument inputs and odd shapes)."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from _harness import _const


@dataclasses.dataclass
class PerSample:
    """An argument or extra input given as a DataNode: one array per sample."""
    rows: list
    dtype: str = "int32"

    def node(self, lib: Any) -> Any:
        return lib.fn.external_source(source=_const([np.array(r, self.dtype) for r in self.rows]))


@dataclasses.dataclass
class Corner:
    id: str
    op: str
    inputs: list
    kwargs: dict
    extra: tuple = ()           # positional inputs after the data (PerSample)
    random: bool = False
    tolerance: float = 1.0

    def graph(self, lib: Any, *nodes: Any) -> Any:
        kw = {k: v.node(lib) if isinstance(v, PerSample) else v for k, v in self.kwargs.items()}
        return getattr(lib.fn, self.op)(*nodes, *(e.node(lib) for e in self.extra), **kw)


def _c(id_, op, inputs, extra=(), **kw):
    return Corner(f"{op}:{id_}", op, [inputs], kw, tuple(extra))


F = "float32"
CORNERS = [
    # slice: axes as DataNodes (per sample, ragged, empty = all, negative), defaults, rounding, errors
    _c("axes_node", "slice", "small_images", start=[1, 2], shape=[2, 2], axes=PerSample([[0, 1], [1, 0]])),
    _c("axes_node_ragged", "slice", "small_images", start=PerSample([[1], [2, 1]]), shape=PerSample([[2], [2, 2]]),
       axes=PerSample([[0], [1, 0]])),
    _c("axes_node_empty_row", "slice", "small_images", start=PerSample([[1, 1, 1], [2]]),
       shape=PerSample([[2, 2, 2], [2]]), axes=PerSample([[], [1]])),
    _c("axes_node_negative", "slice", "small_images", start=[1], shape=[2], axes=PerSample([[-1], [-3]])),
    _c("axes_node_scalar_rows", "slice", "small_images", start=[1], shape=[2], axes=PerSample([2, 0])),
    _c("axes_node_out_of_range", "slice", "small_images", start=[1], shape=[2], axes=PerSample([[3], [0]])),
    _c("axes_node_duplicate", "slice", "small_images", start=[1, 1], shape=[1, 1], axes=PerSample([[1, -2]] * 2)),
    _c("axes_node_and_names", "slice", "small_images", start=[1], shape=[2], axes=PerSample([[2]] * 2),
       axis_names="W"),
    _c("axes_node_float", "slice", "small_images", start=[1], shape=[2], axes=PerSample([[2.0]] * 2, F)),
    _c("axes_node_positional", "slice", "small_images",
       (PerSample([[0.25]] * 2, F), PerSample([[0.5]] * 2, F)), axes=PerSample([[1], [0]])),
    _c("start_node_int", "slice", "small_images", start=PerSample([[1, 2], [0, 3]]), end=[3, 4], axes=[0, 1]),
    _c("rel_nodes", "slice", "small_images", rel_start=PerSample([[0.5, 0.25], [0, 0.5]], F),
       rel_shape=PerSample([[0.5, 0.5]] * 2, F), axes=[0, 1]),
    _c("rel_end_node", "slice", "small_images", start=[1], rel_end=PerSample([[0.625], [0.5]], F), axes=[1]),
    _c("shape_node_scalar_rows", "slice", "small_images", start=PerSample([1, 2]), shape=PerSample([2, 3]), axes=[1]),
    _c("start_fraction", "slice", "small_images", start=[1.5, 2.6], shape=[2.5, 2.5], axes=[0, 1]),
    _c("rel_half", "slice", "small_images", rel_start=[0.125], rel_shape=[0.5], axes=[1]),
    _c("default_axes_chw", "slice", "planar", start=[2, 3], shape=[5, 6]),
    _c("default_axes_no_layout", "slice", "floats", start=[1, 2], shape=[2, 2]),
    _c("axes_empty", "slice", "small_images", start=[1, 2, 0], shape=[2, 2, 2], axes=[]),
    _c("axis_names_empty", "slice", "small_images", start=[1, 2, 0], shape=[2, 2, 2], axis_names=""),
    _c("positional_int", "slice", "small_images", (PerSample([[1]] * 2), PerSample([[2]] * 2)), axes=[1]),
    _c("positional_abs_float", "slice", "small_images", (PerSample([[1.5]] * 2, F), PerSample([[2.5]] * 2, F)),
       axes=[1], normalized_anchor=False, normalized_shape=False),
    _c("negative_start_pad", "slice", "small_images", start=[-1.5], shape=[3], axes=[0], out_of_bounds_policy="pad"),
    _c("end_before_start", "slice", "small_images", start=[3], end=[2], axes=[1]),
    _c("shape_negative", "slice", "small_images", start=[3], shape=[-1], axes=[1]),
    _c("no_window", "slice", "small_images", axes=[0]),
    _c("axis_name_missing", "slice", "small_images", start=[1], shape=[2], axis_names="D"),
    # expand_dims
    _c("names_in_axes_order", "expand_dims", "floats", axes=[2, 0], new_axis_names="AB"),
    _c("end_position", "expand_dims", "small_images", axes=[3], new_axis_names="X"),
    _c("no_names", "expand_dims", "small_images", axes=[0]),
    _c("no_axes", "expand_dims", "small_images", axes=[]),
    _c("negative", "expand_dims", "small_images", axes=[-1]),
    _c("out_of_range", "expand_dims", "small_images", axes=[4]),
    _c("duplicate", "expand_dims", "small_images", axes=[0, 0]),
    _c("names_wrong_count", "expand_dims", "small_images", axes=[0, 1], new_axis_names="A"),
    _c("names_without_layout", "expand_dims", "floats", axes=[0], new_axis_names="A"),
    _c("zero_d", "expand_dims", "scalars", axes=[0, 1], new_axis_names="AB"),
    _c("empty_samples", "expand_dims", "empty_rows", axes=[1]),
    # squeeze
    _c("axes", "squeeze", "unit_dims", axes=[0, 2]),
    _c("names", "squeeze", "unit_dims", axis_names="CA"),
    _c("to_zero_d", "squeeze", "unit_dims_plain", axes=[1]),
    _c("no_axes", "squeeze", "unit_dims", axes=[]),
    _c("not_unit", "squeeze", "unit_dims", axes=[1]),
    _c("duplicate", "squeeze", "unit_dims", axes=[0, 0]),
    _c("names_missing", "squeeze", "unit_dims", axis_names="W"),
    _c("names_without_layout", "squeeze", "unit_dims_plain", axis_names="C"),
    _c("both", "squeeze", "unit_dims", axes=[0], axis_names="A"),
    _c("neither", "squeeze", "unit_dims"),
    _c("empty_samples", "squeeze", "empty_rows", axes=[1]),
    _c("zero_volume", "squeeze", "empty_volume", axes=[1]),
    _c("negative", "squeeze", "unit_dims", axes=[-1]),
    _c("out_of_range", "squeeze", "unit_dims", axes=[3]),
    _c("axes_node", "squeeze", "unit_dims", axes=PerSample([[0, 2]] * 2)),
    # per-sample argument inputs of pad, erase and reshape
    _c("axes_node", "pad", "small_images", fill_value=9, axes=PerSample([[0], [1]])),
    _c("axes_node_ragged", "pad", "small_images", fill_value=9, axes=PerSample([[0], [0, 1]])),
    _c("axes_node_align", "pad", "small_images", align=[4], axes=PerSample([[1], [0]])),
    _c("fill_value_node", "erase", "small_images", anchor=[1, 2], shape=[2, 3], axis_names="HW",
       fill_value=PerSample([[7, 8, 9], [200, 100, 0]], F)),
    _c("fill_value_node_one", "erase", "small_images", anchor=[1, 2], shape=[2, 3], axis_names="HW",
       fill_value=PerSample([[7], [200]], F)),
    _c("fill_value_node_ragged", "erase", "small_images", anchor=[1, 2], shape=[2, 3], axis_names="HW",
       fill_value=PerSample([[7, 8, 9], [200]], F)),
    _c("src_dims_node_rel", "reshape", "floats", rel_shape=[0.5, 2], src_dims=PerSample([[1, 0], [0, 1]])),
    _c("src_dims_node", "reshape", "floats", src_dims=PerSample([[1, 0], [0, 1]])),
]
