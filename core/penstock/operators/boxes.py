"""Bounding boxes: ``bb_flip``, ``bbox_paste``, ``box_encoder`` and ``bbox_rotate``.

A batch of boxes is [M_i, 4] float per sample; the whole batch is handled as one [sum M_i, 4]
array, per-sample arguments spread to each sample's rows with ``np.repeat``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous, empty_batch
from .coords import affine_on_gpu
from .crop import per_sample_list


def box_counts(op: Operator, tl, coords: int = 4) -> np.ndarray:
    """Boxes per sample [N] of a batch of [M_i, coords] (or flat [M_i * coords]) boxes."""
    shapes = tl._shapes
    flat_ok = tl.ndim() == 1 and (shapes[:, 0] % coords == 0).all()
    if not flat_ok and (tl.ndim() != 2 or (len(shapes) and (shapes[:, 1] != coords).any())):
        raise ValueError(f"{op.label}: boxes must be [N, {coords}] per sample, got shapes {tl.shape()}")
    return shapes[:, 0] // coords if flat_ok else shapes[:, 0]


def box_rows(op: Operator, tl, coords: int = 4) -> tuple[Any, np.ndarray]:
    """(rows [sum M_i, coords] float32, counts [N]) of a batch of [M_i, coords] boxes (on the
    batch's device)."""
    tl = contiguous(tl)
    counts = box_counts(op, tl, coords)
    total = int(counts.sum())
    return tl._buf[:total * coords].astype(np.float32, copy=False).reshape(total, coords), counts


def box_batch(rows: np.ndarray, counts: np.ndarray, layout: str = "", source_info=None):
    coords = rows.shape[1] if rows.ndim == 2 else 4
    shapes = np.stack([counts, np.full(len(counts), coords)], axis=1).astype(np.int64)
    out = empty_batch(shapes, np.float32, layout, source_info)
    out._buf[:rows.size] = rows.reshape(-1)
    return out


# ---- bb_flip --------------------------------------------------------------------------------

BB_FLIP = OpSchema(
    "BbFlip", "Flips relative bounding boxes horizontally and/or vertically ([x, y, w, h] or ltrb).",
    args=[Arg("ltrb", ArgType.BOOL, False, doc="boxes are [l, t, r, b] instead of [x, y, w, h]"),
          Arg("horizontal", ArgType.INT, 1, tensor=True, doc="flip horizontally"),
          Arg("vertical", ArgType.INT, 0, tensor=True, doc="flip vertically")],
    devices=("cpu", "gpu"))


@register(BB_FLIP, device=("cpu", "gpu"))
class BbFlip(Operator):
    def run(self, ws):
        if ws.gpu is not None:
            return [self._on_gpu(ws)]
        rows, counts = box_rows(self, ws.inputs[0])
        out = rows.copy()
        for axis, name in ((0, "horizontal"), (1, "vertical")):
            flip = np.repeat(ws.per_sample(name, np.int32) != 0, counts)
            lo, hi = rows[flip, axis], rows[flip, axis + 2]
            if self.args["ltrb"]:   # l' = 1 - r, r' = 1 - l
                out[flip, axis], out[flip, axis + 2] = 1 - hi, 1 - lo
            else:                   # x' = 1 - x - w
                out[flip, axis] = 1 - lo - hi
        return [box_batch(out, counts, ws.inputs[0]._layout)]

    def _on_gpu(self, ws):
        """The flips as per-sample 4 x 5 matrices [M T] of one affine launch."""
        src = ws.inputs[0]
        counts = box_counts(self, src)
        n = len(counts)
        mats = np.zeros((n, 4, 5))
        mats[:, np.arange(4), np.arange(4)] = 1
        for axis, name in ((0, "horizontal"), (1, "vertical")):
            flip = ws.per_sample(name, np.int32) != 0
            lo, hi = axis, axis + 2
            mats[flip, lo, lo] = 0 if self.args["ltrb"] else -1
            mats[flip, lo, hi] = -1              # l' = 1 - r (ltrb) or x' = 1 - x - w
            mats[flip, lo, 4] = 1
            if self.args["ltrb"]:                # r' = 1 - l
                mats[flip, hi, hi] = 0
                mats[flip, hi, lo] = -1
                mats[flip, hi, 4] = 1
        shapes = np.stack([counts, np.full(n, 4)], 1).astype(np.int64)
        return affine_on_gpu(ws, src, counts, mats, shapes, np.float32)


# ---- bbox_paste -----------------------------------------------------------------------------

BBOX_PASTE = OpSchema(
    "BBoxPaste", "Maps relative boxes to the canvas of `paste` (image scaled down by `ratio`, "
                 "placed at paste_x/paste_y).",
    args=[Arg("ratio", ArgType.FLOAT, tensor=True, doc="canvas size / image size (>= 1)"),
          Arg("paste_x", ArgType.FLOAT, 0.5, tensor=True, doc="horizontal placement in the free space"),
          Arg("paste_y", ArgType.FLOAT, 0.5, tensor=True, doc="vertical placement in the free space"),
          Arg("ltrb", ArgType.BOOL, False, doc="boxes are [l, t, r, b] instead of [x, y, w, h]")],
    devices=("cpu",), fn_name="bbox_paste")


@register(BBOX_PASTE)
class BBoxPasteCPU(Operator):
    def run(self, ws):
        rows, counts = box_rows(self, ws.inputs[0])
        ratio = ws.per_sample("ratio", np.float32)
        if (ratio < 1).any():
            raise ValueError(f"{self.label}: 'ratio' must be at least 1, got {float(ratio.min())}")
        scale = np.repeat(1 / ratio, counts)[:, None]
        shift = np.stack([np.repeat(ws.per_sample(p, np.float32), counts) for p in ("paste_x", "paste_y")], 1)
        shift = shift * (1 - scale)
        out = np.empty_like(rows)
        out[:, :2] = rows[:, :2] * scale + shift
        out[:, 2:] = rows[:, 2:] * scale + (shift if self.args["ltrb"] else 0)
        return [box_batch(out, counts, ws.inputs[0]._layout)]


# ---- box_encoder ----------------------------------------------------------------------------

BOX_ENCODER = OpSchema(
    "BoxEncoder", "SSD encoding: matches ltrb boxes to anchors; gives [anchors, 4] centre-format "
                  "boxes (or offsets) and [anchors] labels.",
    args=[Arg("anchors", ArgType.FLOAT_LIST, doc="anchors as a flat list of ltrb boxes"),
          Arg("criteria", ArgType.FLOAT, 0.5, doc="IoU above which an anchor takes a box"),
          Arg("offset", ArgType.BOOL, False, doc="give normalized offsets from the anchors"),
          Arg("scale", ArgType.FLOAT, 1.0, doc="scale of boxes and anchors before offsets are computed"),
          Arg("means", ArgType.FLOAT_LIST, (0.0, 0.0, 0.0, 0.0), doc="[x y w h] offset means"),
          Arg("stds", ArgType.FLOAT_LIST, (1.0, 1.0, 1.0, 1.0), doc="[x y w h] offset standard deviations")],
    min_inputs=2, num_outputs=2, devices=("cpu", "gpu"))


@register(BOX_ENCODER, device=("cpu", "gpu"))
class BoxEncoder(Operator):
    def setup(self):
        a = self.args
        anchors = np.asarray(a["anchors"], np.float32)
        if anchors.size == 0 or anchors.size % 4:
            raise ValueError(f"{self.label}: 'anchors' must hold 4 values per anchor, got {anchors.size}")
        if not 0 <= a["criteria"] <= 1:
            raise ValueError(f"{self.label}: 'criteria' must lie in [0, 1], got {a['criteria']}")
        for name in ("means", "stds"):
            if len(a[name]) != 4:
                raise ValueError(f"{self.label}: '{name}' needs 4 values, got {len(a[name])}")
        if any(s == 0 for s in a["stds"]):
            raise ValueError(f"{self.label}: 'stds' must not contain 0")
        self.anchors = np.ascontiguousarray(anchors.reshape(-1, 4))

    def run(self, ws):
        rows, counts = box_rows(self, ws.inputs[0])
        labels = contiguous(ws.inputs[1])
        lab_counts = labels._volumes()
        if not np.array_equal(lab_counts, counts):
            i = int(np.nonzero(lab_counts != counts)[0][0])
            raise ValueError(f"{self.label}: sample {i} has {counts[i]} boxes but {lab_counts[i]} labels")
        lab = labels._buf[:int(counts.sum())].astype(np.int32, copy=False)
        n, na = len(counts), len(self.anchors)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        out_boxes = ws.new_batch(np.tile(np.array([[na, 4]], np.int64), (n, 1)), np.float32)
        out_labels = ws.new_batch(np.full((n, 1), na, np.int64), np.int32)
        a = self.args
        ws.kernels.box_encoder(ws.pool, rows, counts.astype(np.int64), offsets, lab,
                            self.anchors, a["criteria"], a["offset"], a["scale"],
                            np.asarray(a["means"], np.float32), np.asarray(a["stds"], np.float32),
                            out_boxes._buf, out_labels._buf)
        return [out_boxes, out_labels]


BBOX_ROTATE = OpSchema(
    "BBoxRotate",
    "Moves boxes as rotate(angle) moves the image they belong to: each box's corners are rotated about the image "
    "centre onto the rotated canvas, and the box becomes their enclosing box (mode 'expand'), keeps its size "
    "('fixed'), or lies halfway between ('halfway'). Boxes are clipped to the canvas; those keeping less than "
    "remove_threshold of their area are removed, with their labels (input 1) when given.",
    args=[Arg("angle", ArgType.FLOAT, tensor=True, doc="degrees, counter-clockwise (as rotate)"),
          Arg("input_shape", ArgType.INT_LIST, tensor=True, doc="the image's shape (H and W, see shape_layout)"),
          Arg("shape_layout", ArgType.LAYOUT, "HW", doc="the meaning of input_shape's values"),
          Arg("bbox_layout", ArgType.LAYOUT, "xyXY", doc="xyXY (corners) or xyWH (corner and size)"),
          Arg("bbox_normalized", ArgType.BOOL, True, doc="coordinates relative to the image size"),
          Arg("keep_size", ArgType.BOOL, False, doc="the rotated image keeps the input's size (as rotate)"),
          Arg("size", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="the rotated image's size (H, W), as given to rotate"),
          Arg("mode", ArgType.STR, "expand", doc="expand, fixed or halfway"),
          Arg("remove_threshold", ArgType.FLOAT, 0.1, doc="the fraction of its area a box must keep on the canvas")],
    min_inputs=1, max_inputs=2, num_outputs=lambda args, inputs: inputs, fn_name="bbox_rotate")


@register(BBOX_ROTATE)
class BBoxRotate(Operator):
    def setup(self):
        if self.args["mode"] not in ("expand", "fixed", "halfway"):
            raise ValueError(f"{self.label}: mode must be 'expand', 'fixed' or 'halfway', got '{self.args['mode']}'")
        if self.args["bbox_layout"] not in ("xyXY", "xyWH"):
            raise ValueError(f"{self.label}: bbox_layout must be 'xyXY' or 'xyWH', got '{self.args['bbox_layout']}'")
        layout = self.args["shape_layout"]
        if "H" not in layout or "W" not in layout:
            raise ValueError(f"{self.label}: shape_layout '{layout}' must name H and W")
        if not 0 <= self.args["remove_threshold"] <= 1:
            raise RuntimeError(f"{self.label}: remove_threshold must be in [0, 1], got {self.args['remove_threshold']}")
        if self.args["size"] is not None and len(self.args["size"]) != 2:
            raise RuntimeError(f"{self.label}: size must be exactly two values (H, W), got {len(self.args['size'])}")

    def run(self, ws):
        rows, counts = box_rows(self, ws.inputs[0])
        rows = np.asarray(rows, np.float64)
        n = len(counts)
        layout = self.args["shape_layout"]
        shape = per_sample_list(ws, "input_shape", np.float64)
        h_at, w_at = layout.index("H"), layout.index("W")
        if shape.shape[1] <= max(h_at, w_at):
            raise ValueError(f"{self.label}: input_shape has {shape.shape[1]} values, too few for H and W of "
                             f"shape_layout '{layout}'")
        hw = shape[:, [h_at, w_at]]
        degrees = ws.per_sample("angle", np.float64)
        angles = np.deg2rad(degrees)
        if ws.has_arg("size"):
            canvas = ws.per_sample("size", np.float64, 2)
        elif self.args["keep_size"]:
            canvas = hw.copy()
        else:  # rotate's size for images of these (frames, H, W, C): the extents cut to whole numbers
            ones = np.ones((n, 1), np.int64)
            images = np.concatenate([ones, np.trunc(hw).astype(np.int64), ones], axis=1)
            canvas = _engine.rotated_sizes(degrees, images, False).astype(np.float64)
        per_box = np.repeat(np.arange(n), counts)
        scale = np.tile(hw[per_box][:, ::-1], 2) if self.args["bbox_normalized"] else 1.0
        boxes = rows * scale
        if self.args["bbox_layout"] == "xyWH":
            boxes[:, 2:] += boxes[:, :2]
        cos, sin = np.cos(angles)[per_box], np.sin(angles)[per_box]
        centre = hw[per_box][:, ::-1] / 2
        target = canvas[per_box][:, ::-1] / 2
        corners = np.stack([boxes[:, [0, 1]], boxes[:, [2, 1]], boxes[:, [0, 3]], boxes[:, [2, 3]]], 1) - centre[:, None]
        # counter-clockwise as displayed (y down)
        rx = corners[..., 0] * cos[:, None] + corners[..., 1] * sin[:, None]
        ry = -corners[..., 0] * sin[:, None] + corners[..., 1] * cos[:, None]
        lo = np.stack([rx.min(1), ry.min(1)], 1)
        hi = np.stack([rx.max(1), ry.max(1)], 1)
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        if self.args["mode"] != "expand":
            own = (boxes[:, 2:] - boxes[:, :2]) / 2
            half = own if self.args["mode"] == "fixed" else (half + own) / 2
        out = np.concatenate([mid - half, mid + half], 1) + np.tile(target, 2)
        area = np.prod(out[:, 2:] - out[:, :2], axis=1)
        limit = np.tile(canvas[per_box][:, ::-1], 2)
        out = np.clip(out, 0, limit)
        kept = np.prod(np.maximum(out[:, 2:] - out[:, :2], 0), axis=1)
        threshold = self.args["remove_threshold"]
        keep = kept >= threshold * area if threshold > 0 else np.ones(len(out), bool)
        if self.args["bbox_normalized"]:
            out = out / limit
        if self.args["bbox_layout"] == "xyWH":
            out[:, 2:] -= out[:, :2]
        new_counts = np.bincount(per_box[keep], minlength=n)
        outputs = [box_batch(out[keep].astype(np.float32), new_counts)]
        if len(ws.inputs) > 1:
            labels = contiguous(ws.inputs[1])
            if (labels._shapes[:, 0] != counts).any():
                raise ValueError(f"{self.label}: the labels must have one row per box")
            flat = labels._buf[:labels._volume_total()].reshape(int(counts.sum()), -1)
            shapes = labels._shapes.copy()
            shapes[:, 0] = new_counts
            kept_labels = empty_batch(shapes, labels._buf.dtype, labels._layout)
            kept_labels._buf[:int(keep.sum()) * flat.shape[1]] = flat[keep].reshape(-1)
            outputs.append(kept_labels)
        return outputs
