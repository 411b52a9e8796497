"""``slice``: a window of each sample, planned on the host for both devices (the slice kernel cuts it).

Axes: a constant list, a DataNode with one list per sample (lengths may differ), or layout
letters; an empty list means every axis; negative axes count from the back. Without `axes` and
`axis_names` the window refers to W and H by name when the input has a layout, else to dims
[1, 0] (DALI's defaults). Window values: the start/end/shape arguments (absolute ones are whole
numbers: fractions are cut toward zero, as DALI reads them as integers), their relative rel_*
forms (scaled by the extent), or the positional anchor/shape inputs (relative when floating point
and normalized_*). Both ends are rounded half away from zero; one value per sample broadcasts over
the axes. Everything here is numpy over the whole batch: the kernels get anchors and shapes.
"""
from __future__ import annotations

import numpy as np

from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from .._batch import contiguous
from .crop import fill_for, layout_of, refuse_out_of_bounds, round_half_away, window_with_dtype

STARTS = ("start", "rel_start")
ENDS = ("end", "rel_end", "shape", "rel_shape")


def check_slice_args(op) -> None:
    """Build-time checks: the argument combinations DALI refuses before running."""
    given = {name for name in STARTS + ENDS + ("axes", "axis_names") if op.given(name)}
    # DALI's words, then what was given
    if {"axes", "axis_names"} <= given:
        raise ArgumentValueError(f"{op.label}: Arguments `axes` and `axis_names` are mutually exclusive")
    if set(STARTS) <= given:
        raise ArgumentValueError(f'{op.label}: "start" and "rel_start" arguments are mutually exclusive')
    ends = sorted(given & set(ENDS))
    if len(ends) > 1:
        raise ArgumentValueError(f'{op.label}: "end", "rel_end", "shape", and "rel_shape" arguments are mutually '
                                 f"exclusive (given: {', '.join(ends)})")
    named = given & set(STARTS + ENDS)
    if len(op.node.inputs) == 3 and named:
        raise ArgumentValueError(f"{op.label}: the named window arguments ({', '.join(sorted(named))}) cannot "
                                 "be combined with the anchor and shape inputs")
    if len(op.node.inputs) == 2:
        raise ArgumentValueError(f"{op.label}: give both the anchor and the shape inputs, or neither")
    if len(op.node.inputs) == 1 and not named:
        raise ArgumentValueError(f"{op.label}: give the window with start/rel_start and end/rel_end/shape/"
                                 "rel_shape, or with the anchor and shape inputs")


def ragged_rows(tl, dtype) -> tuple[np.ndarray, np.ndarray]:
    """A per-sample batch (any shapes) as a zero-padded matrix [N, K] and the value count per sample."""
    tl = tl.as_cpu()
    counts = tl._volumes().astype(np.int64)
    cols = np.arange(int(counts.max()) if len(counts) else 0)
    mask = cols[None, :] < counts[:, None]
    idx = np.where(mask, tl._offsets.astype(np.int64)[:, None] + cols[None, :], 0)
    values = tl._buf[idx] if tl._buf.size else np.zeros(idx.shape, tl._buf.dtype)
    return np.where(mask, values, 0).astype(dtype), counts


def slice_axes(op, ws, shapes: np.ndarray, raw_layout: str, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative axes [N, K] of each sample's window values and the mask of the valid ones."""
    n, nd = shapes.shape
    label = op.label
    if "axes" in ws.arg_inputs:
        tl = ws.arg_inputs["axes"]
        if np.dtype(tl._buf.dtype).kind not in "iu":
            raise ArgumentValueError(f"{label}: 'axes' must be integers, got {tl._buf.dtype} data")
        axes, counts = ragged_rows(tl, np.int64)
    else:
        names, const = op.args["axis_names"], op.args["axes"]
        if names is None and const is None:
            names, const = ("WH", None) if raw_layout else (None, (1, 0))
        if names is not None:
            missing = [c for c in names if c not in layout]
            if missing:
                raise ArgumentValueError(f"{label}: Axis '{missing[0]}' is not present in the input layout "
                                         f"'{raw_layout}' (axis_names '{names}')")
            const = [layout.index(c) for c in names]
        row = np.asarray(const, np.int64).reshape(1, -1)
        axes, counts = np.repeat(row, n, axis=0), np.full(n, row.shape[1], np.int64)
    empty = counts == 0
    if empty.any():  # no axes: every axis, in order
        width = max(axes.shape[1], nd)
        axes = np.pad(axes, ((0, 0), (0, width - axes.shape[1])))
        axes[empty, :nd] = np.arange(nd)
        counts = np.where(empty, nd, counts)
    valid = np.arange(axes.shape[1])[None, :] < counts[:, None]
    bad = valid & ((axes < -nd) | (axes >= nd))
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise SampleError(i, f"Axis {int(axes[i, j])} out of range. Expected range is [{-nd}, {nd - 1}] for a "
                             f"{nd}D input")
    axes = np.where(valid, np.where(axes < 0, axes + nd, axes), 0)
    ordered = np.sort(np.where(valid, axes, -1 - np.arange(axes.shape[1])), axis=1)
    dup = (np.diff(ordered, axis=1) == 0) & (ordered[:, 1:] >= 0)
    if dup.any():
        i = int(np.nonzero(dup.any(axis=1))[0][0])
        raise SampleError(i, f"{label}: axis {int(ordered[i, 1:][dup[i]][0])} occurs more than once in the "
                             "slice axes (negative axes count from the back)")
    return axes, valid


def _fit(label: str, what: str, values: np.ndarray, have: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """values [N, k'] with `have` per sample as [N, k]: one value per axis, or one for all."""
    bad = (have != counts) & (have != 1)
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise SampleError(i, f"{label}: {what} has {int(have[i])} values for {int(counts[i])} axes")
    out = np.zeros((len(counts), k))
    w = min(k, values.shape[1])
    out[:, :w] = values[:, :w]
    if values.shape[1]:
        out = np.where((have == 1)[:, None], values[:, :1], out)
    return out


def _named(op, ws, name: str, counts: np.ndarray, k: int) -> np.ndarray | None:
    """[N, K] values of a named window argument; None when not given or an empty list."""
    if name in ws.arg_inputs:
        values, have = ragged_rows(ws.arg_inputs[name], np.float64)
    else:
        v = op.args.get(name)
        if v is None or len(v) == 0:
            return None
        row = np.asarray(v, np.float64).reshape(1, -1)
        values, have = np.repeat(row, len(counts), axis=0), np.full(len(counts), row.shape[1])
    values = _fit(op.label, f"'{name}'", values, have, counts, k)
    return values if name.startswith("rel_") else np.trunc(values)


def slice_window(op, ws, shapes: np.ndarray, raw_layout: str, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Anchors and window shapes [N, ndim] (dims outside the slice axes: whole)."""
    n, nd = shapes.shape
    axes, valid = slice_axes(op, ws, shapes, raw_layout, layout)
    counts = valid.sum(axis=1)
    ext = np.take_along_axis(shapes, axes, axis=1).astype(np.float64)
    if len(ws.inputs) == 3:
        start, end = _positional(op, ws, ext, counts)
    else:
        start, end = _from_named(op, ws, ext, counts)
    if ((end < start) & valid).any():
        i, j = (int(v[0]) for v in np.nonzero((end < start) & valid))
        raise SampleError(i, f"{op.label}: the window ends before it starts on axis {int(axes[i, j])} "
                             f"(start {start[i, j]:g}, end {end[i, j]:g})")
    lo, hi = round_half_away(start), round_half_away(end)
    anchors, out = np.zeros((n, nd), np.int64), shapes.astype(np.int64).copy()
    rows, cols = np.nonzero(valid)
    anchors[rows, axes[rows, cols]] = lo[rows, cols]
    out[rows, axes[rows, cols]] = (hi - lo)[rows, cols]
    return anchors, out


def _from_named(op, ws, ext, counts):
    label = op.label
    get = {name: _named(op, ws, name, counts, ext.shape[1]) for name in STARTS + ENDS}
    start = np.zeros_like(ext)
    if get["start"] is not None:
        start = get["start"]
    elif get["rel_start"] is not None:
        start = get["rel_start"] * ext
    for name in ("shape", "rel_shape"):
        if get[name] is not None and (get[name] < 0).any():
            i = int(np.nonzero((get[name] < 0).any(axis=1))[0][0])
            raise SampleError(i, f"{label}: '{name}' must not be negative, got {get[name][i].tolist()}")
    if get["end"] is not None:
        return start, get["end"]
    if get["rel_end"] is not None:
        return start, get["rel_end"] * ext
    if get["shape"] is not None:
        return start, start + get["shape"]
    if get["rel_shape"] is not None:
        if get["rel_start"] is not None:  # one product after the sum: less rounding error
            return start, (get["rel_start"] + get["rel_shape"]) * ext
        return start, start + get["rel_shape"] * ext
    return start, ext.copy()


def _positional(op, ws, ext, counts):
    label = op.label
    anchor_tl, shape_tl = ws.inputs[1].as_cpu(), ws.inputs[2].as_cpu()
    kinds = {np.dtype(anchor_tl._buf.dtype).kind == "f", np.dtype(shape_tl._buf.dtype).kind == "f"}
    if len(kinds) > 1:
        raise ArgumentValueError(f"{label}: the anchor ({anchor_tl._buf.dtype}) and shape ({shape_tl._buf.dtype}) "
                                 "inputs must have the same type")
    a = _fit(label, "the anchor input", *ragged_rows(anchor_tl, np.float64), counts, ext.shape[1])
    s = _fit(label, "the shape input", *ragged_rows(shape_tl, np.float64), counts, ext.shape[1])
    floating = kinds == {True}  # integer anchors and shapes are absolute whatever normalized_* say
    rel_a, rel_s = floating and op.args["normalized_anchor"], floating and op.args["normalized_shape"]
    if rel_a and rel_s:  # one product after the sum: less rounding error
        return a * ext, (a + s) * ext
    start = a * ext if rel_a else a
    return start, start + (s * ext if rel_s else s)


# ---- the operator ---------------------------------------------------------------------------------

WINDOW_ARGS = [
    Arg("start", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="absolute window start (whole numbers)"),
    Arg("end", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="absolute window end (whole numbers)"),
    Arg("shape", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="absolute window shape (whole numbers)"),
    Arg("rel_start", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="relative window start"),
    Arg("rel_end", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="relative window end"),
    Arg("rel_shape", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="relative window shape"),
    Arg("axes", ArgType.INT_LIST, optional=True, tensor=True,
        doc="dims the window values refer to, in order; per sample as a DataNode; [] = all "
            "(default: 'WH' by name when the input has a layout, else [1, 0])"),
    Arg("axis_names", ArgType.LAYOUT, optional=True, doc="the same by layout letters (not with axes)"),
    Arg("normalized_anchor", ArgType.BOOL, True, doc="a floating-point anchor input is relative"),
    Arg("normalized_shape", ArgType.BOOL, True, doc="a floating-point shape input is relative"),
]
SLICE = OpSchema(
    "Slice", "Extracts a window given by start/end/shape arguments (absolute or relative) or by "
             "anchor/shape inputs, over the axes named by `axes` / `axis_names`.",
    args=WINDOW_ARGS + [
        Arg("out_of_bounds_policy", ArgType.STR, "error", doc="'error', 'pad' or 'trim_to_shape'"),
        Arg("fill_values", ArgType.FLOAT_LIST, (0.0,), doc="per-channel values of padded areas"),
        Arg("dtype", ArgType.DTYPE, optional=True, aliases=("output_dtype",), ignored_aliases=("image_type",),
            doc="output type (default: input type)")],
    min_inputs=1, max_inputs=3, devices=("cpu", "gpu"), host_inputs=(1, 2))


@register(SLICE, device=("cpu", "gpu"))
class Slice(Operator):
    def setup(self):
        check_slice_args(self)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = layout_of(src)
        anchors, shapes = slice_window(self, ws, src._shapes, src._layout, layout)
        policy = self.args["out_of_bounds_policy"]
        if policy not in ("error", "pad", "trim_to_shape"):
            raise ValueError(f"{self.label}: out_of_bounds_policy must be 'error', 'pad' or 'trim_to_shape'")
        if policy == "error":
            refuse_out_of_bounds(src._shapes, anchors, shapes)
        if policy == "trim_to_shape":
            lo, hi = np.clip(anchors, 0, src._shapes), np.clip(anchors + shapes, 0, src._shapes)
            anchors, shapes = lo, np.maximum(hi - lo, 0)
        fill, cdim = fill_for(ws, layout, self.args["fill_values"], policy, shapes)
        return [window_with_dtype(ws, src, anchors, shapes, fill, cdim, self.args["dtype"])]
