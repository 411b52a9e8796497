"""``paste``: places each image on a larger canvas filled with a colour (a slice with negative
anchors: the canvas is a window reaching outside the image, filled outside it); ``multi_paste``:
regions of several input samples pasted, in order, onto canvases of zeros (one native call or GPU
launch per batch, the regions planned here)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous, zero_rows
from ..types import to_numpy_type


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
                         np.ascontiguousarray(anchors, np.int64), zero_rows(n, 3), fill, 2)
        return [out]


MULTI_PASTE = OpSchema(
    "MultiPaste",
    "Pastes regions of input samples, in order, onto canvases of zeros: with `in_ids`, the listed samples of the one "
    "input batch onto each output sample; without, sample i of every input onto output sample i.",
    args=[Arg("in_ids", ArgType.INT_LIST, optional=True, tensor=True, doc="per output sample: the input samples pasted"),
          Arg("in_anchors", ArgType.INT, optional=True, tensor=True,
              doc="per region: the (y, x) corner of the pasted part of the input ([regions, 2]; default 0)"),
          Arg("in_anchors_rel", ArgType.FLOAT, optional=True, tensor=True,
              doc="in_anchors as fractions of the input's extents (rounded down)"),
          Arg("shapes", ArgType.INT, optional=True, tensor=True,
              doc="per region: its (h, w) ([regions, 2]; default: from the input anchor to the input's end)"),
          Arg("shapes_rel", ArgType.FLOAT, optional=True, tensor=True,
              doc="shapes as fractions of the input's extents (rounded up)"),
          Arg("out_anchors", ArgType.INT, optional=True, tensor=True,
              doc="per region: the (y, x) where it lands on the canvas ([regions, 2]; default 0)"),
          Arg("out_anchors_rel", ArgType.FLOAT, optional=True, tensor=True,
              doc="out_anchors as fractions of the canvas extents (rounded down)"),
          Arg("output_size", ArgType.INT_LIST, optional=True, tensor=True,
              doc="canvas (H, W); may be left out when every input sample has the same shape"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: the inputs')")],
    min_inputs=1, max_inputs=64, devices=("cpu", "gpu"), input_layouts=("HWC", "FHWC"))


def _per_region(op, ws, name: str, counts: np.ndarray, dtype) -> np.ndarray | None:
    """[regions, 2] values of a per-region argument (every sample's regions back to back), or None."""
    if name not in ws.arg_inputs:
        if op.args.get(name) is not None:
            raise RuntimeError(f"{op.label}: argument '{name}' must be given per sample, as [regions, 2] tensors")
        return None
    tl = contiguous(ws.arg_inputs[name])
    if len(tl) != len(counts) or (tl._volumes() != 2 * counts).any():
        raise RuntimeError(f"{op.label}: argument '{name}' must be a [regions, 2] tensor per sample, with "
                           f"{counts.tolist()} regions")
    return np.asarray(tl._buf[:int(2 * counts.sum())], dtype).reshape(-1, 2)


@register(MULTI_PASTE, device=("cpu", "gpu"))
class MultiPaste(Operator):
    def run(self, ws):
        inputs = [contiguous(x) for x in ws.inputs]
        n = len(inputs[0])
        if any(x.dtype != inputs[0].dtype for x in inputs) or any(x.ndim() != inputs[0].ndim() for x in inputs):
            raise RuntimeError(f"{self.label}: all inputs must have the same type and number of dimensions")
        nd = inputs[0].ndim()
        shapes = [x._shapes.reshape(len(x), nd) if nd == 4 else np.column_stack([np.ones(len(x), np.int64),
                                                                                  x._shapes.reshape(len(x), nd)])
                  for x in inputs]  # (frames, H, W, C)
        # the regions: (input batch, input sample) in paste order, counts per output sample
        if "in_ids" in ws.arg_inputs or self.args["in_ids"] is not None:
            if len(inputs) != 1:
                raise RuntimeError(f"{self.label}: with in_ids the operator takes exactly one input, got {len(inputs)}")
            if "in_ids" in ws.arg_inputs:
                ids_tl = contiguous(ws.arg_inputs["in_ids"])
                counts = ids_tl._volumes().astype(np.int64)
                ids = np.asarray(ids_tl._buf[:int(counts.sum())], np.int64)
            else:
                ids = np.tile(np.asarray(self.args["in_ids"], np.int64), n)
                counts = np.full(n, len(self.args["in_ids"]), np.int64)
            if ((ids < 0) | (ids >= n)).any():
                raise RuntimeError(f"{self.label}: in_ids must be in [0, {n - 1}], got {int(ids[(ids < 0) | (ids >= n)][0])}")
            batch = np.zeros(len(ids), np.int64)
        else:
            counts = np.full(n, len(inputs), np.int64)
            ids = np.repeat(np.arange(n), len(inputs))
            batch = np.tile(np.arange(len(inputs)), n)
        owner = np.repeat(np.arange(n), counts)  # the output sample of each region
        src_shapes = np.stack(shapes)[batch, ids].reshape(-1, 4)  # [regions, 4]
        src_hw = src_shapes[:, 1:3]
        out_hw = self._canvas(ws, shapes, n)
        if len(ids) and ((src_shapes[:, 0] != shapes[0][owner, 0]) | (src_shapes[:, 3] != shapes[0][owner, 3])).any():
            raise RuntimeError(f"{self.label}: pasted samples must have the output's number of frames and channels")
        in_anchor = self._anchor(ws, "in_anchors", counts, src_hw, np.floor)
        region = _per_region(self, ws, "shapes", counts, np.int64)
        if region is None:
            rel = _per_region(self, ws, "shapes_rel", counts, np.float32)
            region = src_hw - in_anchor if rel is None else np.ceil(rel * src_hw.astype(np.float32)).astype(np.int64)
        out_anchor = self._anchor(ws, "out_anchors", counts, out_hw[owner], np.floor)
        bad_in = (in_anchor < 0) | (region < 0) | (in_anchor + region > src_hw)
        bad_out = (out_anchor < 0) | (out_anchor + region > out_hw[owner])
        for bad, what in ((bad_in, "input"), (bad_out, "output")):
            if bad.any():
                r = int(np.flatnonzero(bad.any(1))[0])
                raise RuntimeError(f"{self.label}: the pasted region must be within {what} bounds; region "
                                   f"{r - int(counts[:owner[r]].sum())} of output sample {int(owner[r])}: input anchor "
                                   f"{in_anchor[r].tolist()}, output anchor {out_anchor[r].tolist()}, shape "
                                   f"{region[r].tolist()}")
        src_offsets = np.stack([x._offsets for x in inputs])[batch, ids]
        regions = np.column_stack([batch, src_offsets, src_hw, in_anchor, out_anchor, region]).astype(np.int64)
        dtype = self.args["dtype"] if self.args["dtype"] is not None else inputs[0].dtype
        out_shapes = np.column_stack([shapes[0][:, 0], out_hw, shapes[0][:, 3]])
        out = ws.new_batch(out_shapes if nd == 4 else out_shapes[:, 1:], to_numpy_type(dtype), inputs[0]._layout)
        start = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        ws.kernels.multi_paste(ws.pool, [x._buf for x in inputs], int(inputs[0].dtype), out._buf,
                               np.ascontiguousarray(out_shapes, np.int64), out._offsets, int(dtype), regions, start)
        return [out]

    def _canvas(self, ws, shapes: list, n: int) -> np.ndarray:
        """[N, 2] canvas (H, W): output_size, or the inputs' one shape."""
        if ws.has_arg("output_size"):
            if "output_size" in ws.arg_inputs:
                return ws.per_sample("output_size", np.int64, 2)
            size = list(self.args["output_size"])
            # (H, W), or (H, W, C) as DALI 2.4 takes it: C must then be the inputs' channels, which the
            # output keeps (DALI ignores it)
            channels = {int(c) for s in shapes for c in s[:, 3]}
            if len(size) not in (2, 3) or (len(size) == 3 and channels - {size[2]}):
                raise RuntimeError(f"{self.label}: output_size should be (H, W) or (H, W, C) with the inputs' "
                                   f"channels {sorted(channels)}, got {size}")
            return np.tile(np.asarray(size[:2], np.int64), (n, 1))
        hw = np.concatenate([s[:, 1:3] for s in shapes])
        if len(hw) and (hw != hw[0]).any():
            raise RuntimeError(f"{self.label}: if output_size is not given, all the input samples must have the same "
                               "shape")
        return np.broadcast_to(hw[0] if len(hw) else np.zeros(2, np.int64), (n, 2)).copy()

    def _anchor(self, ws, name: str, counts: np.ndarray, extents: np.ndarray, rounding) -> np.ndarray:
        absolute = _per_region(self, ws, name, counts, np.int64)
        if absolute is not None:
            return absolute
        rel = _per_region(self, ws, name + "_rel", counts, np.float32)
        if rel is None:
            return np.zeros((int(counts.sum()), 2), np.int64)
        return rounding(rel * extents.astype(np.float32)).astype(np.int64)
