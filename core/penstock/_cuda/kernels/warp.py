"""Affine warps of frames (csrc/cuda/warp.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, KernelFamily


class WarpKernels(KernelFamily):
    def warp_affine(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_shapes: np.ndarray, dst_offsets: np.ndarray, dtype: int, matrices: np.ndarray,
                    interp: int, fill: float | None) -> None:
        n = len(src_shapes)
        if src_shapes.shape[1] != 4:
            raise ValueError("warp_affine: samples must be (frames, H, W, C)")
        if interp not in (0, 1):
            raise ValueError("warp_affine: only nearest-neighbour and linear interpolation are supported")
        channels = set(src_shapes[:, 3].tolist())
        if len(channels) > 1:
            raise ValueError("warp_affine: all samples need the same number of channels on the GPU")
        desc = np.zeros((n, 8), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2:4] = src_shapes[:, 1:3]
        desc[:, 4:6] = dst_shapes[:, 1:3]
        desc[:, 6] = dst_shapes[:, 0] * dst_shapes[:, 1] * dst_shapes[:, 2]
        c = channels.pop() if channels else 1
        self._launch_batch("warp", f"warp_affine_{TYPE_NAMES[dtype]}", desc[:, 6], desc, (src, dst),
                           (np.int32(c), lambda p: p[0], np.int32(interp), np.int32(fill is not None),
                            np.float32(fill or 0.0)), (np.ascontiguousarray(matrices, np.float32),))
