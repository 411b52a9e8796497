"""Separable Gaussian blur, one launch per spatial axis (csrc/cuda/gaussian_blur.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _engine
from ._launch import BLOCK, KernelFamily, block_starts, image_type, volumes


class GaussianBlurKernels(KernelFamily):
    def gaussian_blur(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
                      dst: Any, dst_offsets: np.ndarray, dst_type: int, sigmas: np.ndarray,
                      windows: np.ndarray) -> None:
        """One launch per spatial axis (float in between); shapes are (outer, spatial..., channels)."""
        n, nd = shapes.shape
        k = nd - 2
        if not 1 <= k <= 3:
            raise ValueError("gaussian_blur: samples must be (frames, 1-3 spatial dims, channels)")
        in_t, out_t = image_type(src_type, "gaussian_blur"), image_type(dst_type, "gaussian_blur")
        sigmas = np.asarray(sigmas, np.float32).reshape(n, k)
        windows = np.asarray(windows, np.int64).reshape(n, k)
        vols = volumes(shapes)
        weights, starts = _engine.gaussian_windows(sigmas, windows)  # the CPU kernel's weights; checks the sizes
        total = int(vols.sum())
        tmp = [self.ctx.empty(max(total, 1), np.float32) for _ in range(min(k - 1, 2))]
        tmp_offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
        desc = np.empty((k, n, 7), np.int64)  # filled a column at a time (a zeroed table gives numpy the GIL)
        for ax in range(k):
            inner = shapes[:, nd - 1]  # the elements after this axis: the dims after it multiplied, a column at a time
            for d in range(nd - 2, 1 + ax, -1):
                inner = inner * shapes[:, d]
            desc[ax, :, 0] = src_offsets if ax == 0 else tmp_offsets
            desc[ax, :, 1] = dst_offsets if ax == k - 1 else tmp_offsets
            desc[ax, :, 2] = vols
            desc[ax, :, 3] = shapes[:, 1 + ax]
            desc[ax, :, 4] = inner
            desc[ax, :, 5] = windows[:, ax] // 2
            desc[ax, :, 6] = starts[:, ax]
        block_start, grid = block_starts(vols)
        if grid == 0:
            return
        dev = self.ctx.upload_params(desc, block_start, weights)
        for ax in range(k):
            a = src if ax == 0 else tmp[(ax - 1) % 2]
            b = dst if ax == k - 1 else tmp[ax % 2]
            name = f"blur_{in_t if ax == 0 else 'f32'}_{out_t if ax == k - 1 else 'f32'}"
            self._fn("gaussian_blur", name)((grid,), (BLOCK,), (a, b, dev[0][ax], dev[1], np.int32(n), dev[2]),
                                   stream=self.ctx.stream)
