"""``segmentation.random_mask_pixel``: a random pixel of each mask (a foreground one when asked),
drawn for the whole batch at once from the packed masks."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ._batch import contiguous, empty_batch

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
