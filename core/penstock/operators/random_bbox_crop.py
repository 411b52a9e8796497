"""``random_bbox_crop``: SSD-style random crop windows that keep the bounding boxes consistent.

Each sample picks one of ``thresholds`` (or "no crop" when ``allow_no_crop``) and tries up to
``num_attempts`` windows (scale per dim from ``scaling``, aspect ratio from ``aspect_ratio``,
uniform anchor; or the fixed ``crop_shape``); a window is valid when the boxes overlap it by at
least the threshold (all boxes, or any with ``all_boxes_above_threshold=False``) and at least
one box keeps its centre inside it. Then another threshold is drawn, until a window is found
or ``total_num_attempts`` is spent (the best candidate seen is taken, else no crop). Kept boxes
are clipped to the window and given in its coordinates.

The search runs for the whole batch at once: each round draws every pending sample's attempts
as arrays [samples, attempts, boxes].
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .._operator import Operator
from .._registry import REQUIRED, Arg, ArgType, OpSchema, register
from .._batch import contiguous, empty_batch
from .boxes import box_batch, box_rows
from .crop import per_sample_list, round_half_away, slice_batch

RANDOM_BBOX_CROP = OpSchema(
    "RandomBBoxCrop", "Random crop window (anchor, shape) with the boxes (and labels) it keeps.",
    args=[Arg("thresholds", ArgType.FLOAT_LIST, (0.0,), doc="minimum overlaps, one drawn per sample"),
          Arg("threshold_type", ArgType.STR, "iou", doc="'iou' or 'overlap' (fraction of the box inside)"),
          Arg("aspect_ratio", ArgType.FLOAT_LIST, (1.0, 1.0), doc="window aspect ratio range (x/y[, x/z, y/z])"),
          Arg("scaling", ArgType.FLOAT_LIST, (1.0, 1.0), doc="window extent range, relative to the image"),
          Arg("ltrb", ArgType.BOOL, True, doc="boxes are [l, t, r, b] (else [x, y, w, h])"),
          Arg("bbox_layout", ArgType.LAYOUT, optional=True, doc="box coordinate order, e.g. 'xyXY', 'xyWH'"),
          Arg("num_attempts", ArgType.INT, 1, doc="windows tried per drawn threshold"),
          Arg("total_num_attempts", ArgType.INT, -1, doc="cap on all windows tried (-1: none)"),
          Arg("all_boxes_above_threshold", ArgType.BOOL, True, doc="every box must meet the threshold"),
          Arg("allow_no_crop", ArgType.BOOL, True, doc="'no crop' is one of the outcomes"),
          Arg("bbox_prune_threshold", ArgType.FLOAT, optional=True,
              doc="keep boxes with at least this fraction inside (default: centre inside)"),
          Arg("crop_shape", ArgType.INT_LIST, optional=True, tensor=True, doc="fixed absolute window shape"),
          Arg("input_shape", ArgType.INT_LIST, optional=True, tensor=True, doc="image shape (with crop_shape)"),
          Arg("shape_layout", ArgType.LAYOUT, optional=True, doc="order of crop_shape/input_shape ('WH' ...)"),
          Arg("output_bbox_indices", ArgType.BOOL, False, doc="extra output: indices of the kept boxes"),
          Arg("quiet", ArgType.BOOL, False, doc="no warning when total_num_attempts ran out and the best window "
              "tried is taken")],
    min_inputs=1, max_inputs=2,
    num_outputs=lambda args, num_inputs: 3 + (num_inputs > 1) + bool(args.get("output_bbox_indices")),
    is_random=True, devices=("cpu",), fn_name="random_bbox_crop")

SSD_RANDOM_CROP = OpSchema(
    "SSDRandomCrop", "Crops each image (input 0, HWC) to a random window that keeps its boxes (input 1, relative "
    "[l, t, r, b]), one of them at least at an IoU threshold drawn from 0, 0.1, 0.3, 0.5, 0.7, 0.9 (or not at "
    "all), as in SSD's training; outputs the image, the boxes kept in the window's coordinates and their labels "
    "(input 2).",
    args=[Arg("num_attempts", ArgType.INT, 1, doc="windows tried per drawn threshold")],
    min_inputs=3, num_outputs=3, is_random=True, devices=("cpu",), deprecated=True, replaced_by="random_bbox_crop",
    hidden=True)
# the windows SSDRandomCrop tries: random_bbox_crop's arguments as SSD's paper chose them
_SSD_WINDOWS = {"thresholds": (0.0, 0.1, 0.3, 0.5, 0.7, 0.9), "scaling": (0.3, 1.0), "aspect_ratio": (0.5, 2.0),
                "allow_no_crop": True, "all_boxes_above_threshold": False}


def _layout(op, nd: int) -> str:
    lay = op.args["bbox_layout"]
    if not lay:
        return ("xyzXYZ" if nd == 3 else "xyXY") if op.args["ltrb"] else ("xyzWHD" if nd == 3 else "xyWH")
    starts, ends, sizes = "xyz"[:nd], "XYZ"[:nd], "WHD"[:nd]
    ok = len(lay) == 2 * nd and all(c in lay for c in starts) and \
        (all(c in lay for c in ends) or all(c in lay for c in sizes))
    if not ok:
        raise ValueError(f"{op.label}: bbox_layout '{lay}' does not describe {nd}-D boxes "
                         f"(e.g. '{starts}{ends}' or '{starts}{sizes}')")
    return lay


def _to_lo_hi(rows: np.ndarray, lay: str, nd: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.stack([rows[:, lay.index(c)] for c in "xyz"[:nd]], 1)
    if "X" in lay:
        hi = np.stack([rows[:, lay.index(c)] for c in "XYZ"[:nd]], 1)
    else:
        hi = lo + np.stack([rows[:, lay.index(c)] for c in "WHD"[:nd]], 1)
    return lo, hi


def _from_lo_hi(lo: np.ndarray, hi: np.ndarray, lay: str, nd: int) -> np.ndarray:
    out = np.empty((len(lo), 2 * nd), np.float32)
    for k, c in enumerate("xyz"[:nd]):
        out[:, lay.index(c)] = lo[:, k]
        if "X" in lay:
            out[:, lay.index("XYZ"[k])] = hi[:, k]
        else:
            out[:, lay.index("WHD"[k])] = hi[:, k] - lo[:, k]
    return out


@register(RANDOM_BBOX_CROP)
class RandomBBoxCropCPU(Operator):
    def setup(self):
        a = self.args
        if a["threshold_type"] not in ("iou", "overlap"):
            raise ValueError(f"{self.label}: threshold_type must be 'iou' or 'overlap', got '{a['threshold_type']}'")
        lo, hi = a["scaling"] if len(a["scaling"]) == 2 else (None, None)
        if lo is None or not 0 <= lo <= hi:
            raise ValueError(f"{self.label}: scaling must be [min, max] with 0 <= min <= max, got {a['scaling']}")
        ar = a["aspect_ratio"]
        if len(ar) not in (2, 6) or any(ar[i] <= 0 or ar[i] > ar[i + 1] for i in range(0, len(ar), 2)):
            raise ValueError(f"{self.label}: aspect_ratio must be [min, max] pairs with 0 < min <= max, got {ar}")
        if a["num_attempts"] < 1:
            raise ValueError(f"{self.label}: num_attempts must be at least 1")
        if (a["crop_shape"] is None) != (a["input_shape"] is None) and not (
                "crop_shape" in self.node.arg_inputs or "input_shape" in self.node.arg_inputs):
            raise ValueError(f"{self.label}: give crop_shape and input_shape together")

    # -- window candidates [k, A, nd] ------------------------------------------------------------
    def _relative_windows(self, rng, k: int, attempts: int, nd: int):
        lo, hi = self.args["scaling"]
        shape = rng.uniform(lo, hi, (k, attempts, nd))
        ar = np.asarray(self.args["aspect_ratio"], np.float64).reshape(-1, 2)
        pairs = [(i, j) for i in range(nd) for j in range(i + 1, nd)]
        ranges = [ar[p % len(ar)] for p in range(len(pairs))]
        fixed = {}
        for (i, j), (rmin, rmax) in zip(pairs, ranges):
            if rmin == rmax:
                fixed[(i, j)], fixed[(j, i)] = rmin, 1 / rmin
        if fixed:  # a fixed ratio is imposed in a random dimension order, then the largest extent restored
            before = shape.max(axis=2, keepdims=True)
            order = np.argsort(rng.random((k, attempts, nd)), axis=2)
            for i0 in range(nd):
                for i1 in range(i0 + 1, nd):
                    d0 = np.take_along_axis(order, np.full((k, attempts, 1), i0), 2)[..., 0]
                    d1 = np.take_along_axis(order, np.full((k, attempts, 1), i1), 2)[..., 0]
                    for (p, q), r in fixed.items():
                        sel = (d0 == p) & (d1 == q)
                        sel &= shape[..., p] != shape[..., q]
                        shape[..., p] = np.where(sel, shape[..., q] * r, shape[..., p])
            shape *= before / shape.max(axis=2, keepdims=True)
        ok = np.ones((k, attempts), bool)
        for (i, j), (rmin, rmax) in zip(pairs, ranges):
            ratio = shape[..., i] / shape[..., j]
            ok &= (ratio >= rmin * (1 - 1e-6)) & (ratio <= rmax * (1 + 1e-6))
        anchor = rng.random((k, attempts, nd)) * (1 - shape)
        return anchor, shape, ok

    def _shapes_arg(self, ws, name: str, nd: int) -> np.ndarray:
        v = per_sample_list(ws, name)
        if v.shape[1] != nd:
            raise ValueError(f"{self.label}: '{name}' needs {nd} values per sample, got {v.shape[1]}")
        lay = self.args["shape_layout"] or "WHD"[:nd]
        if sorted(lay) != sorted("WHD"[:nd]):
            raise ValueError(f"{self.label}: shape_layout '{lay}' is not a permutation of '{'WHD'[:nd]}'")
        return v[:, [lay.index(c) for c in "WHD"[:nd]]]

    def run(self, ws):
        a = self.args
        boxes_in = contiguous(ws.inputs[0])
        coords = int(boxes_in._shapes[0, -1]) if len(boxes_in) and boxes_in.ndim() == 2 else 4
        if coords not in (4, 6):
            raise ValueError(f"{self.label}: boxes must have 4 (2-D) or 6 (3-D) coordinates, got {coords}")
        nd = coords // 2
        lay = _layout(self, nd)
        rows, counts = box_rows(self, boxes_in, coords)
        blo, bhi = _to_lo_hi(rows.astype(np.float64), lay, nd)
        n = len(counts)
        mmax = int(counts.max()) if n else 0
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        slot = np.arange(mmax)[None, :]
        valid = slot < counts[:, None]                                   # [N, M]
        gather = np.where(valid, starts[:, None] + slot, 0)
        plo, phi = blo[gather] if len(blo) else np.zeros((n, mmax, nd)), bhi[gather] if len(bhi) else np.zeros((n, mmax, nd))
        absolute = ws.has_arg("crop_shape")
        if absolute:
            crop_shape = self._shapes_arg(ws, "crop_shape", nd)
            in_shape = self._shapes_arg(ws, "input_shape", nd)
            if (crop_shape > in_shape).any() or (in_shape <= 0).any():
                raise ValueError(f"{self.label}: crop_shape must not exceed input_shape")
        thresholds = np.asarray(a["thresholds"], np.float64)
        n_opts = len(thresholds) + int(a["allow_no_crop"])
        rng = ws.rng
        win_lo, win_hi = np.zeros((n, nd)), np.ones((n, nd))   # relative windows (default: no crop)
        keep = valid.copy()
        best_score = np.full(n, -np.inf)
        best = (np.zeros((n, nd)), np.ones((n, nd)), valid.copy())
        have_best = np.zeros(n, bool)
        used = np.zeros(n, np.int64)
        pending = np.arange(n)
        total = a["total_num_attempts"]
        attempts = a["num_attempts"]
        while pending.size:
            k = pending.size
            opt = rng.integers(0, n_opts, k)
            no_crop = opt >= len(thresholds)
            done = pending[no_crop]             # window [0, 1], every box kept
            rest, thr = pending[~no_crop], thresholds[opt[~no_crop]]
            if rest.size:
                r = rest.size
                if absolute:
                    shape = np.broadcast_to(crop_shape[rest][:, None, :] / in_shape[rest][:, None, :], (r, attempts, nd))
                    span = (in_shape[rest] - crop_shape[rest])[:, None, :]
                    anchor = np.floor(rng.random((r, attempts, nd)) * (span + 1)) / in_shape[rest][:, None, :]
                    ratio_ok = np.ones((r, attempts), bool)
                else:
                    anchor, shape, ratio_ok = self._relative_windows(rng, r, attempts, nd)
                lo, hi = anchor, anchor + shape                                   # [r, A, nd]
                b_lo, b_hi = plo[rest][:, None], phi[rest][:, None]               # [r, 1, M, nd]
                inter = np.clip(np.minimum(hi[:, :, None], b_hi) - np.maximum(lo[:, :, None], b_lo), 0, None).prod(-1)
                b_area = (b_hi - b_lo).prod(-1)
                if a["threshold_type"] == "iou":
                    union = shape.prod(-1)[:, :, None] + b_area - inter
                    metric = np.where(union > 0, inter / np.where(union > 0, union, 1), 0)
                else:
                    metric = np.where(b_area > 0, inter / np.where(b_area > 0, b_area, 1), 0)
                v = valid[rest][:, None, :]
                if a["all_boxes_above_threshold"]:
                    overlap_ok = ((metric >= thr[:, None, None]) | ~v).all(-1)
                    score = np.where(v, metric, np.inf).min(-1)
                else:
                    overlap_ok = ((metric >= thr[:, None, None]) & v).any(-1)
                    score = np.where(v, metric, -np.inf).max(-1)
                if a["bbox_prune_threshold"] is not None:
                    frac = np.where(b_area > 0, inter / np.where(b_area > 0, b_area, 1), 0)
                    kept = (frac >= a["bbox_prune_threshold"]) & v
                else:
                    centre = (b_lo + b_hi) / 2
                    kept = ((centre >= lo[:, :, None]) & (centre <= hi[:, :, None])).all(-1) & v
                has_box = kept.any(-1) | (counts[rest] == 0)[:, None]
                candidate = ratio_ok & has_box
                if total > 0:  # attempts beyond the cap do not count
                    allowed = np.arange(attempts)[None, :] < (total - used[rest])[:, None]
                    candidate &= allowed
                    sc = np.where(candidate, score, -np.inf)
                    j = sc.argmax(1)
                    better = sc[np.arange(r), j] > best_score[rest]
                    idx = rest[better]
                    best_score[idx] = sc[better, j[better]]
                    best[0][idx], best[1][idx] = lo[better, j[better]], hi[better, j[better]]
                    best[2][idx] = kept[better, j[better]]
                    have_best[idx] = True
                ok = candidate & overlap_ok
                found = ok.any(1)
                j = ok.argmax(1)
                hit = rest[found]
                win_lo[hit], win_hi[hit] = lo[found, j[found]], hi[found, j[found]]
                keep[hit] = kept[found, j[found]]
                used[rest] += attempts
                done = np.concatenate([done, hit])
                if total > 0:
                    out_of_tries = rest[~found & (used[rest] >= total)]
                    take = out_of_tries[have_best[out_of_tries]]
                    win_lo[take], win_hi[take], keep[take] = best[0][take], best[1][take], best[2][take]
                    if len(take) and not a["quiet"]:
                        warnings.warn(f"{self.label}: no cropping window met the requirements of samples "
                                      f"{take.tolist()} in {total} attempts; each takes the best one tried "
                                      f"(best metric {best_score[take].max():g}); quiet=True silences this",
                                      RuntimeWarning, 2)
                    done = np.concatenate([done, out_of_tries])
            pending = np.setdiff1d(pending, done)
        return self._outputs(ws, win_lo, win_hi, keep, plo, phi, counts, starts, lay, nd,
                             crop_shape if absolute else None, in_shape if absolute else None)

    def _outputs(self, ws, win_lo, win_hi, keep, plo, phi, counts, starts, lay, nd, crop_shape, in_shape):
        n = len(counts)
        ext = win_hi - win_lo
        if in_shape is not None:
            anchor_out, shape_out = win_lo * in_shape, ext * in_shape
        else:
            anchor_out, shape_out = win_lo, ext
        anchor_tl = empty_batch(np.full((n, 1), nd, np.int64), np.float32)
        anchor_tl._buf[:] = anchor_out.reshape(-1)
        shape_tl = empty_batch(np.full((n, 1), nd, np.int64), np.float32)
        shape_tl._buf[:] = shape_out.reshape(-1)
        sample, slot = np.nonzero(keep)                                   # row-major: sample order kept
        lo = np.clip(plo[sample, slot], win_lo[sample], win_hi[sample])
        hi = np.clip(phi[sample, slot], win_lo[sample], win_hi[sample])
        e = np.where(ext[sample] > 0, ext[sample], 1)
        new_counts = keep.sum(1)
        outs = [anchor_tl, shape_tl,
                box_batch(_from_lo_hi((lo - win_lo[sample]) / e, (hi - win_lo[sample]) / e, lay, nd),
                          new_counts, ws.inputs[0]._layout)]
        if len(ws.inputs) > 1:
            labels = contiguous(ws.inputs[1])
            if not np.array_equal(labels._shapes[:, 0], counts):
                i = int(np.nonzero(labels._shapes[:, 0] != counts)[0][0])
                raise ValueError(f"{self.label}: sample {i} has {counts[i]} boxes but {labels._shapes[i, 0]} labels")
            per_box = int(np.prod(labels._shapes[0, 1:])) if len(labels) else 1
            flat = labels._buf[:int(counts.sum()) * per_box].reshape(-1, per_box)
            shapes = labels._shapes.copy()
            shapes[:, 0] = new_counts
            lab = empty_batch(shapes, labels._buf.dtype, labels._layout)
            lab._buf[:len(sample) * per_box] = flat[starts[sample] + slot].reshape(-1)
            outs.append(lab)
        if self.args["output_bbox_indices"]:
            idx = empty_batch(new_counts.reshape(-1, 1).astype(np.int64), np.int32)
            idx._buf[:len(slot)] = slot
            outs.append(idx)
        return outs


@register(SSD_RANDOM_CROP)
class SSDRandomCropCPU(RandomBBoxCropCPU):
    """random_bbox_crop's window search with SSD's settings, then the image cropped to the window."""

    def setup(self):
        num_attempts = self.args["num_attempts"]
        self.args = {name: None if arg.default is REQUIRED else arg.default
                     for name, arg in RANDOM_BBOX_CROP.arguments.items()}
        self.args.update(_SSD_WINDOWS, num_attempts=num_attempts)
        super().setup()

    def run(self, ws):
        images = contiguous(ws.inputs[0])
        if images.ndim() != 3:
            raise ValueError(f"{self.label}: images must be HWC, got {images.ndim()}-D samples")
        anchor, shape, boxes, labels = super().run(dataclasses.replace(ws, inputs=ws.inputs[1:]))
        hw = images._shapes[:, :2].astype(np.float64)
        n = len(hw)
        rel_anchor = anchor._buf.reshape(n, 2)[:, ::-1]   # (x, y) -> (y, x)
        rel_shape = shape._buf.reshape(n, 2)[:, ::-1]
        top_left = np.minimum(round_half_away(rel_anchor * hw).astype(np.int64), images._shapes[:, :2] - 1)
        extent = np.clip(round_half_away(rel_shape * hw).astype(np.int64), 1, images._shapes[:, :2] - top_left)
        out_shapes = np.concatenate([extent, images._shapes[:, 2:]], axis=1)
        anchors = np.concatenate([top_left, np.zeros((n, 1), np.int64)], axis=1)
        return [slice_batch(ws, images, anchors, out_shapes), boxes, labels]
