"""Point coordinates [N_i, D] per sample: ``coord_flip`` and ``coord_transform`` (which, like DALI's,
also takes [..., D]: the last dimension holds the coordinates).

The batch is one [sum N_i, D] array; per-sample arguments are spread to each sample's points.
"""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, to_numpy_type
from .._batch import contiguous, empty_batch
from .crop import per_sample_list, round_half_away


def point_counts(op: Operator, tl, any_rank: bool = False) -> tuple[np.ndarray, int]:
    """(points per sample [N], coordinates per point D) of a batch of [N_i, D] (or [D]) samples;
    with ``any_rank``, of [..., D] samples (every leading index is a point, as coord_transform takes)."""
    shapes = tl._shapes
    if tl.ndim() == 1:
        d = int(shapes[0, 0]) if len(shapes) else 0
        counts = np.ones(len(shapes), np.int64)
    elif tl.ndim() == 2 or (any_rank and tl.ndim() > 2):
        d = int(shapes[0, -1]) if len(shapes) else 0
        counts = np.prod(shapes[:, :-1], axis=1).astype(np.int64)
    else:
        raise ValueError(f"{op.label}: coordinates must be [N, D] per sample, got {tl.shape()}")
    if len(shapes) and (shapes[:, -1] != d).any():
        raise ValueError(f"{op.label}: every sample must have the same number of coordinates per point")
    return counts, d


def point_rows(op: Operator, tl, any_rank: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """(points [sum N_i, D] float64, counts [N], D) of a host batch of [N_i, D] (or [D]) samples
    (``any_rank``: see point_counts)."""
    tl = contiguous(tl)
    counts, d = point_counts(op, tl, any_rank)
    total = int(counts.sum())
    return np.asarray(tl._buf[:total * d], np.float64).reshape(total, d), counts, d


def affine_on_gpu(ws, src, counts: np.ndarray, mats: np.ndarray, shapes: np.ndarray, dtype):
    """The GPU's way of every point operator: out = M p + T with per-sample ``mats`` [N, D_out,
    D + 1], one launch per batch (the CPU paths compute the same in numpy)."""
    src = contiguous(src)
    out = ws.new_batch(shapes, dtype, src._layout, src._source_info)
    if len(src):
        ws.kernels.affine_points(src._buf, src._offsets, counts, mats, out._buf, out._offsets)
    return out


def points_batch(shapes: np.ndarray, rows: np.ndarray, dtype, layout: str = "", source_info=None):
    """A batch of the given shapes holding ``rows`` (rounded and saturated for integer types)."""
    out = empty_batch(shapes, dtype, layout, source_info)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        rows = np.clip(round_half_away(rows), info.min, info.max)
    out._buf[:rows.size] = rows.reshape(-1).astype(dtype)
    return out


# ---- coord_flip -----------------------------------------------------------------------------

COORD_FLIP = OpSchema(
    "CoordFlip", "Mirrors coordinates about a centre: x' = 2 * center_x - x (per flipped dim).",
    args=[Arg("layout", ArgType.LAYOUT, optional=True, doc="order of the coordinates ('xy', 'xyz' ...)"),
          *[Arg(f"flip_{c}", ArgType.INT, 1 if c == "x" else 0, tensor=True, doc=f"flip the {c} coordinate")
            for c in "xyz"],
          *[Arg(f"center_{c}", ArgType.FLOAT, 0.5, tensor=True, doc=f"centre of the {c} flip") for c in "xyz"]],
    devices=("cpu", "gpu"))


@register(COORD_FLIP, device=("cpu", "gpu"))
class CoordFlip(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        counts, d = point_counts(self, src)
        layout = self.args["layout"] or "xyz"[:d]
        if len(layout) != d or any(c not in "xyz" for c in layout):
            raise ValueError(f"{self.label}: layout '{layout}' does not describe {d} coordinates "
                             "(use the letters x, y, z)")
        if ws.gpu is not None:  # x' = -x + 2 c on the flipped coordinates
            mats = np.zeros((ws.batch_size, d, d + 1))
            mats[:, np.arange(d), np.arange(d)] = 1
            for k, c in enumerate(layout):
                flip = ws.per_sample(f"flip_{c}", np.int32) != 0
                mats[flip, k, k] = -1
                mats[flip, k, d] = 2 * ws.per_sample(f"center_{c}", np.float64)[flip]
            return [affine_on_gpu(ws, src, counts, mats, src._shapes.copy(), np.float32)]
        rows, counts, d = point_rows(self, src)
        out = rows.copy()
        for k, c in enumerate(layout):
            flip = np.repeat(ws.per_sample(f"flip_{c}", np.int32) != 0, counts)
            center = np.repeat(ws.per_sample(f"center_{c}", np.float64), counts)
            out[flip, k] = 2 * center[flip] - rows[flip, k]
        src = contiguous(src)
        return [points_batch(src._shapes.copy(), out, np.float32, src._layout, src._source_info)]


# ---- coord_transform ------------------------------------------------------------------------

COORD_TRANSFORM = OpSchema(
    "CoordTransform", "Affine transform of points: out = M @ p + T (or MT = [M T]).",
    args=[Arg("M", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="matrix [D_out, D] (one value: scaled identity)"),
          Arg("T", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="translation [D_out] (one value: broadcast)"),
          Arg("MT", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="[D_out, D + 1] matrix [M T]"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT, doc="output type")],
    devices=("cpu", "gpu"))


@register(COORD_TRANSFORM, device=("cpu", "gpu"))
class CoordTransform(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        counts, d = point_counts(self, src, any_rank=True)
        n = ws.batch_size
        mt = per_sample_list(ws, "MT")
        m, t = per_sample_list(ws, "M"), per_sample_list(ws, "T")
        for name, v in (("MT", mt), ("M", m)):
            if v is not None and v.shape[1] == 0:
                raise ValueError(f"{self.label}: '{name}' must not be an empty list")
        dtype = np.dtype(to_numpy_type(self.args["dtype"]))
        if dtype not in (src._buf.dtype, np.float32):  # DALI's rule
            raise ValueError(f"{self.label}: dtype {dtype.name} must be the input's type "
                             f"({src._buf.dtype.name}) or float32")
        if mt is not None:
            if m is not None or t is not None:
                raise ValueError(f"{self.label}: give either 'MT' or 'M'/'T', not both")
            if mt.shape[1] == 1:
                mats = mt[:, :, None] * np.eye(d, d + 1)
            elif mt.shape[1] % (d + 1):
                raise ValueError(f"{self.label}: 'MT' has {mt.shape[1]} values; it must be [D_out, {d + 1}]")
            else:
                mats = mt.reshape(n, -1, d + 1)
            lin, shift = mats[:, :, :d], mats[:, :, d]
        else:
            if m is None:
                lin = np.broadcast_to(np.eye(d), (n, d, d))
            elif m.shape[1] == 1:
                lin = m[:, :, None] * np.eye(d)
            elif m.shape[1] % d:
                raise ValueError(f"{self.label}: 'M' has {m.shape[1]} values; it must be [D_out, {d}]")
            else:
                lin = m.reshape(n, -1, d)
            dout = lin.shape[1]
            if t is None:
                shift = np.zeros((n, dout))
            elif t.shape[1] in (1, dout):
                shift = np.broadcast_to(t, (n, dout))
            else:
                raise ValueError(f"{self.label}: 'T' has {t.shape[1]} values for {dout} output coordinates")
        dout = lin.shape[1]
        shapes = src._shapes.copy()
        shapes[:, -1] = dout
        if ws.gpu is not None:
            return [affine_on_gpu(ws, src, counts, np.concatenate([lin, shift[:, :, None]], 2), shapes, dtype)]
        rows = point_rows(self, src, any_rank=True)[0]
        sample = np.repeat(np.arange(n), counts)
        out = np.einsum("pij,pj->pi", lin[sample], rows) + shift[sample]
        return [points_batch(shapes, out, dtype, src._layout, src._source_info)]
