"""``paste``: places each image on a larger canvas filled with a colour (a slice with negative
anchors: the canvas is a window reaching outside the image, filled outside it)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous


@register(OpSchema(
    "Paste", "Puts each HWC image on a canvas `ratio` times larger (at least `min_canvas_size`), "
    "at (paste_x, paste_y) of the free space, the rest filled with `fill_value`.",
    args=[Arg("ratio", ArgType.FLOAT, tensor=True, doc="canvas size / image size (>= 1)"),
          Arg("paste_x", ArgType.FLOAT, 0.5, tensor=True, doc="horizontal position in [0, 1]"),
          Arg("paste_y", ArgType.FLOAT, 0.5, tensor=True, doc="vertical position in [0, 1]"),
          Arg("fill_value", ArgType.INT_LIST, doc="canvas colour, one value per channel or one for all"),
          Arg("n_channels", ArgType.INT, 3, doc="number of channels (0: the images' own)", range=(0, None)),
          Arg("min_canvas_size", ArgType.FLOAT, 0.0, tensor=True, doc="minimum canvas side")],
    devices=("cpu", "gpu"), input_layouts=("HWC",)), device=("cpu", "gpu"))
class Paste(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n_channels = self.args["n_channels"]
        if src.ndim() != 3:
            raise ValueError(f"{self.label}: expected HWC images, got {src.ndim()}-D samples")
        # n_channels=0: the first image's count (DALI accepts 0 and pastes the images whole)
        c = n_channels or (int(src._shapes[0, 2]) if len(src) else 0)
        if len(src) and (src._shapes[:, 2] != c).any():
            raise ValueError(f"{self.label}: expected HWC images of {c} channels (n_channels={n_channels})")
        fill = np.asarray(self.args["fill_value"])
        if len(fill) == 1:  # one value fills every channel (DALI)
            fill = np.repeat(fill, c)
        if len(fill) != c:
            raise ValueError(f"{self.label}: fill_value needs 1 or {c} values, got {len(fill)}")
        ratio = ws.per_sample("ratio", np.float64)
        if (ratio < 1).any():
            raise ValueError(f"{self.label}: ratio must be >= 1")
        px, py = ws.per_sample("paste_x", np.float64), ws.per_sample("paste_y", np.float64)
        if ((px < 0) | (px > 1) | (py < 0) | (py > 1)).any():
            raise ValueError(f"{self.label}: paste_x and paste_y must be in [0, 1]")
        min_side = ws.per_sample("min_canvas_size", np.float64)
        if (min_side < 0).any():
            raise ValueError(f"{self.label}: min_canvas_size must be >= 0, got {float(min_side.min())}")
        hw = src._shapes[:, :2]
        # canvas and offsets are truncated to integers
        canvas = np.maximum((hw * ratio[:, None]).astype(np.int64), min_side.astype(np.int64)[:, None])
        y0 = (py * (canvas[:, 0] - hw[:, 0])).astype(np.int64)
        x0 = (px * (canvas[:, 1] - hw[:, 1])).astype(np.int64)
        n = len(src)
        out = ws.new_batch(np.column_stack([canvas, np.full(n, c)]), src._buf.dtype, src._layout,
                           src._source_info)
        anchors = np.column_stack([-y0, -x0, np.zeros(n, np.int64)])
        fill = np.ascontiguousarray(np.tile(fill.astype(src._buf.dtype), (n, 1)))
        ws.kernels.slice(ws.pool, src._buf, src._shapes, src._offsets, out._buf, out._shapes, out._offsets,
                         np.ascontiguousarray(anchors, np.int64), np.zeros((n, 3), np.uint8), fill, 2)
        return [out]
