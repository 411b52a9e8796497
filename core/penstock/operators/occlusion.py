"""Occlusion augmentations: ``erase`` (fill boxes) and ``grid_mask`` (zero a rotated grid of
squares, https://arxiv.org/abs/2001.04086)."""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous

ERASE = OpSchema(
    "Erase", "Fills regions (boxes given by anchor and shape along `axes`) with `fill_value`.",
    args=[Arg("anchor", ArgType.FLOAT_LIST, (), tensor=True,
              doc="region starts (or centres), flattened: one value per axis per region"),
          Arg("shape", ArgType.FLOAT_LIST, (), tensor=True, doc="region extents, flattened like anchor"),
          Arg("axes", ArgType.INT_LIST, optional=True, doc="dimension indices the regions span"),
          Arg("axis_names", ArgType.LAYOUT, optional=True,
              doc="layout letters the regions span (default 'HW'); when given, `axes` is not used"),
          Arg("fill_value", ArgType.FLOAT_LIST, (0.0,), tensor=True,
              doc="one value, or one per channel (none: 0); per sample, as many for every sample"),
          Arg("normalized_anchor", ArgType.BOOL, False, doc="anchor is relative to the extent"),
          Arg("normalized_shape", ArgType.BOOL, False, doc="shape is relative to the extent"),
          Arg("normalized", ArgType.BOOL, False, doc="both anchor and shape are relative"),
          Arg("centered_anchor", ArgType.BOOL, False, doc="anchor is the region's centre")],
    devices=("cpu", "gpu"))


def _flat_per_sample(ws, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list argument's values for the whole batch: all of them (float64), where each sample's start
    and how many it has ([N], or [1] for a constant, which every sample shares)."""
    if name in ws.arg_inputs:
        tl = contiguous(ws.arg_inputs[name])
        return np.asarray(tl._buf, np.float64).reshape(-1), tl._offsets, tl._volumes()
    values = np.asarray(ws.op.args[name], np.float64).reshape(-1)
    return values, np.zeros(1, np.int64), np.array([values.size], np.int64)


@register(ERASE, device=("cpu", "gpu"))
class Erase(Operator):
    def _axes(self, src) -> list[int]:
        # DALI: explicit axis_names win over axes; with neither, the regions span 'HW'
        names = self.args["axis_names"]
        if names is None and self.args["axes"] is not None:
            axes = list(self.args["axes"])
        else:
            names = "HW" if names is None else names
            layout = src._layout
            missing = [a for a in names if a not in layout]
            if not layout or missing:
                raise ValueError(f"{self.label}: axis_names '{names}' not found in layout '{layout}'")
            axes = [layout.index(a) for a in names]
        if not axes:
            raise ValueError(f"{self.label}: the regions span no axis (empty 'axes' or 'axis_names')")
        if any(not 0 <= a < src.ndim() for a in axes):
            raise ValueError(f"{self.label}: axes {axes} out of range for {src.ndim()}-D input")
        return axes

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        axes = self._axes(src)
        k = len(axes)
        norm_anchor = self.args["normalized"] or self.args["normalized_anchor"]
        norm_shape = self.args["normalized"] or self.args["normalized_shape"]
        anchors, anchor_starts, anchor_counts = _flat_per_sample(ws, "anchor")
        shapes, shape_starts, shape_counts = _flat_per_sample(ws, "shape")
        bad = (shape_counts % k != 0) | ((anchor_counts != 0) & (anchor_counts != shape_counts))
        if bad.any():
            i = int(np.argmax(np.broadcast_to(bad, len(src))))
            anchor_count, shape_count = (int(c[i] if len(c) > 1 else c[0]) for c in (anchor_counts, shape_counts))
            raise ValueError(f"{self.label}: sample {i}: anchor ({anchor_count} values) and shape "
                             f"({shape_count} values) must hold {k} values per region")
        box_arr, box_offsets = _engine.erase_regions(src._shapes, np.array(axes, np.int64), anchors, anchor_starts,
                                                     anchor_counts, shapes, shape_starts, shape_counts, norm_anchor,
                                                     norm_shape, self.args["centered_anchor"])
        if "fill_value" in ws.arg_inputs:  # a row of fill values per sample
            rows = contiguous(ws.arg_inputs["fill_value"])
            sizes = rows._volumes()
            if len(sizes) and (sizes != sizes[0]).any():
                raise ValueError(f"{self.label}: Expected uniform shape for argument \"fill_value\" but got "
                                 f"{sizes.tolist()} values per sample")
            fill = np.asarray(rows._buf[:int(sizes.sum())], np.float32).reshape(len(sizes), -1)
        else:
            fill = np.asarray(self.args["fill_value"] or (0.0,), np.float32)  # an empty list: the default
        count = fill.shape[-1]
        bad = np.nonzero(src._shapes[:, -1] != count)[0] if count > 1 else ()
        if len(bad):
            raise SampleError(int(bad[0]), f"{self.label}: {count} fill values given for "
                                           f"{src._shapes[bad[0], -1]} channels")
        out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.erase(ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype), out._buf, out._offsets,
                         box_arr, box_offsets, fill)
        return [out]


@register(OpSchema(
    "GridMask", "Zeroes squares of a grid (period `tile`, square side ratio*tile) rotated by `angle` "
    "radians and shifted by (shift_x, shift_y).",
    args=[Arg("tile", ArgType.INT, 100, tensor=True, doc="grid period, pixels"),
          Arg("ratio", ArgType.FLOAT, 0.5, tensor=True, doc="black square side / tile"),
          Arg("angle", ArgType.FLOAT, 0.0, tensor=True, doc="grid rotation, radians"),
          Arg("shift_x", ArgType.FLOAT, 0.0, tensor=True, doc="grid shift along x, after rotation"),
          Arg("shift_y", ArgType.FLOAT, 0.0, tensor=True, doc="grid shift along y, after rotation")],
    devices=("cpu", "gpu"), input_layouts=("HWC",)), device=("cpu", "gpu"))
class GridMask(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        params = np.stack([ws.per_sample(name, np.float32) for name in
                           ("tile", "ratio", "angle", "shift_x", "shift_y")], axis=1)
        if (params[:, 0] <= 0).any():
            raise ValueError(f"{self.label}: tile must be positive")
        out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.grid_mask(ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype), out._buf,
                             out._offsets, np.ascontiguousarray(params))
        return [out]
