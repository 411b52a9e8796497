"""Segmentation masks, for the whole batch at once: ``segmentation.random_mask_pixel`` (a pixel, a
foreground one when asked), ``segmentation.random_object_bbox`` (the box of a random object:
connected components are found natively, then class and object are drawn with vectorized weighted
choices) and ``segmentation.select_masks`` (the polygons and vertices of chosen masks)."""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous, empty_batch

RANDOM_MASK_PIXEL = OpSchema(
    "segmentation.RandomMaskPixel", "Coordinates (int64, one per mask dimension) of a random pixel: any "
                                    "pixel, or with foreground=1 one equal to `value` (or above `threshold`).",
    args=[Arg("value", ArgType.INT, optional=True, tensor=True, doc="foreground pixels equal this value"),
          Arg("threshold", ArgType.FLOAT, 0.0, tensor=True, doc="foreground pixels exceed this (without value)"),
          Arg("foreground", ArgType.INT, 0, tensor=True, doc="1: draw among foreground pixels")],
    is_random=True, devices=("cpu",))


@register(RANDOM_MASK_PIXEL)
class RandomMaskPixelCPU(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n, nd = src._shapes.shape
        vols = src._volumes()
        total = int(vols.sum())
        x = np.asarray(src._buf[:total])
        sample_of = np.repeat(np.arange(n), vols)
        if ws.has_arg("value"):
            fg = x == np.repeat(ws.per_sample("value", np.float64), vols)
        else:
            fg = x > np.repeat(ws.per_sample("threshold", np.float64), vols)
        want_fg = ws.per_sample("foreground", np.int32) != 0
        fg_count = np.bincount(sample_of[fg], minlength=n)
        # samples wanting foreground pick among it; the others (and masks without any) among all pixels
        use_fg = want_fg & (fg_count > 0)
        eligible = np.where(use_fg[sample_of], fg, True)
        count = np.where(use_fg, fg_count, vols)
        if (count == 0).any():
            i = int(np.nonzero(count == 0)[0][0])
            raise ValueError(f"{self.label}: mask {i} is empty")
        k = np.floor(ws.rng.random(n) * count).astype(np.int64)          # k-th eligible pixel of each
        cum = np.cumsum(eligible)
        before = np.concatenate([[0], np.cumsum(count)[:-1]])
        flat = np.searchsorted(cum, before + k + 1)                          # global packed position
        local = flat - (np.cumsum(vols) - vols)
        coords = np.empty((n, nd), np.int64)
        for d in range(nd - 1, -1, -1):                                      # unravel, per-sample shapes
            coords[:, d] = local % src._shapes[:, d]
            local //= src._shapes[:, d]
        out = empty_batch(np.full((n, 1), nd, np.int64), np.int64)
        out._buf[:] = coords.reshape(-1)
        return [out]


# ---- random_object_bbox ---------------------------------------------------------------------

_FORMATS = ("anchor_shape", "start_end", "box")

RANDOM_OBJECT_BBOX = OpSchema(
    "segmentation.RandomObjectBBox", "Bounding box of a random object (connected component) of each label "
                                     "map, or of the whole input when background is chosen.",
    args=[Arg("background", ArgType.INT, 0, tensor=True, doc="label of the background"),
          Arg("classes", ArgType.INT_LIST, optional=True, tensor=True, doc="labels to choose objects from"),
          Arg("class_weights", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="relative odds of `classes`"),
          Arg("foreground_prob", ArgType.FLOAT, 1.0, tensor=True, doc="probability of choosing an object"),
          Arg("k_largest", ArgType.INT, optional=True, doc="choose among the k largest objects of the class"),
          Arg("threshold", ArgType.INT_LIST, optional=True, tensor=True, doc="minimum box extent per axis"),
          Arg("ignore_class", ArgType.BOOL, False, doc="all foreground labels form one class"),
          Arg("format", ArgType.STR, "anchor_shape", doc="'anchor_shape', 'start_end' or 'box'"),
          Arg("output_class", ArgType.BOOL, False, doc="extra output: the chosen label"),
          Arg("cache_objects", ArgType.BOOL, False, doc="performance hint: remember objects of repeated inputs")],
    num_outputs=lambda a: (1 if a.get("format") == "box" else 2) + bool(a.get("output_class")),
    is_random=True, devices=("cpu",), fn_name="segmentation.random_object_bbox")


def _pick(groups: np.ndarray, weights: np.ndarray, n: int, rng) -> np.ndarray:
    """For each of n groups, the position of a row drawn with the given weights among the rows of
    that group (rows sorted by group); -1 where a group has no rows or no weight."""
    total = np.bincount(groups, weights=weights, minlength=n)
    before = np.concatenate([[0.0], np.cumsum(total)[:-1]])
    target = before + rng.random(n) * total
    pos = np.searchsorted(np.cumsum(weights), target, side="right")
    first = np.searchsorted(groups, np.arange(n), side="left")
    last = np.searchsorted(groups, np.arange(n), side="right") - 1
    pos = np.clip(pos, first, np.maximum(last, first))  # rounding at a group's edge stays inside it
    return np.where(total > 0, pos, -1)


@register(RANDOM_OBJECT_BBOX)
class RandomObjectBBoxCPU(Operator):
    def setup(self):
        if self.args["format"] not in _FORMATS:
            raise ValueError(f"{self.label}: format must be one of {', '.join(_FORMATS)}, got '{self.args['format']}'")
        if self.args["k_largest"] is not None and self.args["k_largest"] < 1:
            raise ValueError(f"{self.label}: k_largest must be at least 1")

    def run(self, ws):
        from .crop import per_sample_list
        src = contiguous(ws.inputs[0])
        if src._buf.dtype.kind not in "iub":
            raise ValueError(f"{self.label}: the label map must be of an integer type, got {src._buf.dtype}")
        n, nd = src._shapes.shape
        total = int(src._volumes().sum())
        data = np.ascontiguousarray(src._buf[:total], np.int64)
        bg = ws.per_sample("background", np.int64)
        if not (bg == bg[0]).all():
            raise NotImplementedError(f"{self.label}: a different 'background' per sample is not supported")
        counts, labels, sizes, lo, hi = _engine.connected_components(
            ws.pool, data, src._shapes, src._offsets, int(bg[0]),
            self.args["ignore_class"])
        sample = np.repeat(np.arange(n), counts)
        ok = np.ones(len(labels), bool)
        thr = per_sample_list(ws, "threshold")
        if thr is not None:
            if thr.shape[1] not in (1, nd):
                raise ValueError(f"{self.label}: 'threshold' needs 1 or {nd} values")
            ok &= ((hi - lo) >= thr[sample]).all(1)
        classes = per_sample_list(ws, "classes", np.int64)
        cls_key = np.zeros(len(labels), np.int64) if self.args["ignore_class"] else labels
        weight = np.ones(len(labels))
        if classes is not None and not self.args["ignore_class"]:
            match = labels[:, None] == classes[sample]
            ok &= match.any(1)
            cw = per_sample_list(ws, "class_weights")
            if cw is not None:
                if cw.shape[1] != classes.shape[1]:
                    raise ValueError(f"{self.label}: {cw.shape[1]} class_weights for {classes.shape[1]} classes")
                weight = (match * cw[sample]).sum(1)
        rng = ws.rng
        # choose a class per sample among those with objects: one row per (sample, class)
        cand = np.nonzero(ok)[0]
        order = cand[np.lexsort((cls_key[cand], sample[cand]))]
        first = np.ones(len(order), bool)
        first[1:] = (sample[order][1:] != sample[order][:-1]) | (cls_key[order][1:] != cls_key[order][:-1])
        heads = order[first]
        chosen_class_row = _pick(sample[heads], weight[heads], n, rng)
        fg = rng.random(n) < ws.per_sample("foreground_prob", np.float64)
        fg &= chosen_class_row >= 0
        head_keys = cls_key[heads] if len(heads) else np.zeros(1, np.int64)  # no object in the batch at all
        chosen_class = np.where(chosen_class_row >= 0, head_keys[np.maximum(chosen_class_row, 0)], 0)
        # objects of the chosen class, largest first, optionally only the k largest
        in_class = ok & fg[sample] & (cls_key == chosen_class[sample])
        objs = np.nonzero(in_class)[0]
        objs = objs[np.lexsort((-sizes[objs], sample[objs]))]
        if self.args["k_largest"] is not None and len(objs):
            s = sample[objs]
            start = np.searchsorted(s, s)
            objs = objs[np.arange(len(objs)) - start < self.args["k_largest"]]
        pick = _pick(sample[objs], np.ones(len(objs)), n, rng)
        box_lo = np.zeros((n, nd), np.int64)
        box_hi = src._shapes.copy()
        got = pick >= 0
        box_lo[got], box_hi[got] = lo[objs[pick[got]]], hi[objs[pick[got]]]
        out_class = np.where(got, labels[objs[np.maximum(pick, 0)]] if len(objs) else bg, bg)
        fmt = self.args["format"]
        first_out, second_out = (box_lo, box_hi - box_lo) if fmt == "anchor_shape" else (box_lo, box_hi)
        if fmt == "box":
            outs = [self._vectors(np.concatenate([box_lo, box_hi], 1))]
        else:
            outs = [self._vectors(first_out), self._vectors(second_out)]
        if self.args["output_class"]:
            c = empty_batch(np.zeros((n, 0), np.int64), np.int32)
            c._buf[:n] = out_class
            outs.append(c)
        return outs

    @staticmethod
    def _vectors(rows: np.ndarray):
        out = empty_batch(np.full((len(rows), 1), rows.shape[1], np.int64), np.int32)
        out._buf[:rows.size] = rows.reshape(-1)
        return out


SELECT_MASKS = OpSchema(
    "segmentation.SelectMasks",
    "Keeps the polygons (input 1: rows [mask id, first vertex, end vertex]) of the masks listed in input 0, grouped "
    "in that order, and their vertices (input 2: one row per vertex), renumbering the polygons' vertex ranges; "
    "with reindex_masks the mask ids become their positions in input 0.",
    args=[Arg("reindex_masks", ArgType.BOOL, False, doc="replace each mask id by its index in the selection")],
    min_inputs=3, num_outputs=2)


@register(SELECT_MASKS)
class SelectMasksCPU(Operator):
    def run(self, ws):
        ids_tl, polys_tl, verts_tl = (contiguous(x) for x in ws.inputs)
        n = len(ids_tl)
        if polys_tl.ndim() != 2 or (len(polys_tl) and (polys_tl._shapes[:, 1] != 3).any()):
            columns = int(polys_tl._shapes[0, -1]) if len(polys_tl) and polys_tl.ndim() else 0
            raise RuntimeError(f"{self.label}: ``polygons`` is expected to contain 2D tensors with 3 columns: "
                               f"``mask_id, start_idx, end_idx``. Got {columns} columns.")
        if verts_tl.ndim() != 2:
            raise RuntimeError(f"{self.label}: vertices must be [vertices, coordinates] per sample")
        id_counts = ids_tl._volumes().astype(np.int64)
        poly_counts = polys_tl._shapes[:, 0].astype(np.int64)
        vert_counts = verts_tl._shapes[:, 0].astype(np.int64)
        ids = np.asarray(ids_tl._buf[:int(id_counts.sum())], np.int64)
        polys = np.asarray(polys_tl._buf[:int(poly_counts.sum()) * 3], np.int64).reshape(-1, 3)
        poly_sample = np.repeat(np.arange(n), poly_counts)
        bad = np.nonzero((polys[:, 1] < 0) | (polys[:, 2] < polys[:, 1]) | (polys[:, 2] > vert_counts[poly_sample]))[0]
        if bad.size:
            mask_id, first, end = polys[bad[0]].tolist()
            raise RuntimeError(f"{self.label}: Vertex index range for mask id {mask_id} [{first}, {end}) is out of "
                               f"bounds. Expected to be within the range of available vertices "
                               f"[0, {int(vert_counts[poly_sample[bad[0]]])}).")
        # the position of each selected id in its sample's selection, per polygon (-1: not selected)
        id_sample = np.repeat(np.arange(n), id_counts)
        id_pos = np.arange(len(ids)) - np.repeat(np.cumsum(id_counts) - id_counts, id_counts)
        sel_keys = id_sample * (1 << 32) + (ids & 0xFFFFFFFF)
        poly_keys = poly_sample * (1 << 32) + (polys[:, 0] & 0xFFFFFFFF)
        missing = ~np.isin(sel_keys, poly_keys)
        if missing.any():
            raise RuntimeError(f"{self.label}: Selected mask_id {int(ids[missing][0])} is not present in the input.")
        by_key = np.argsort(sel_keys, kind="stable")
        at = np.minimum(np.searchsorted(sel_keys[by_key], poly_keys), max(len(ids) - 1, 0))
        found = (sel_keys[by_key][at] == poly_keys) if len(ids) else np.zeros(len(polys), bool)
        rank = np.where(found, id_pos[by_key][at] if len(ids) else 0, -1)
        keep = np.flatnonzero(rank >= 0)
        order = keep[np.lexsort((keep, rank[keep], poly_sample[keep]))]  # by sample, selection order, input order
        lengths = polys[order, 2] - polys[order, 1]
        out_sample = poly_sample[order]
        new_poly_counts = np.bincount(out_sample, minlength=n)
        new_vert_counts = np.bincount(out_sample, weights=lengths, minlength=n).astype(np.int64)
        first_in_sample = np.repeat(np.cumsum(new_vert_counts) - new_vert_counts, new_poly_counts)
        ends = np.cumsum(lengths) - first_in_sample
        out_polys = np.column_stack([rank[order] if self.args["reindex_masks"] else polys[order, 0], ends - lengths,
                                     ends]).astype(polys_tl._buf.dtype)
        coords = verts_tl._shapes[0, 1] if len(verts_tl) else 0
        vert_base = np.cumsum(vert_counts) - vert_counts
        rows = np.repeat(vert_base[out_sample] + polys[order, 1], lengths) + (
            np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths))
        flat = verts_tl._buf[:verts_tl._volume_total()].reshape(-1, coords)
        poly_out = empty_batch(np.column_stack([new_poly_counts, np.full(n, 3)]), polys_tl._buf.dtype)
        poly_out._buf[:out_polys.size] = out_polys.reshape(-1)
        vert_out = empty_batch(np.column_stack([new_vert_counts, np.full(n, coords)]), verts_tl._buf.dtype)
        vert_out._buf[:int(new_vert_counts.sum()) * coords] = flat[rows].reshape(-1)
        return [poly_out, vert_out]
