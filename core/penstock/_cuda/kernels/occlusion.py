"""Erasing boxes and grid masks (csrc/cuda/occlusion.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import KernelFamily, check_dims, descriptors, image_type, put_padded, volumes


class OcclusionKernels(KernelFamily):
    def erase(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
              dst_offsets: np.ndarray, boxes: np.ndarray, box_offsets: np.ndarray, fill: np.ndarray) -> None:
        n, nd = shapes.shape
        check_dims(shapes, "erase")
        fill = np.ascontiguousarray(fill, np.float32)
        rows = fill.reshape(-1, fill.shape[-1] if fill.ndim == 2 else fill.size)  # [1, F] for all, or [N, F]
        num_fill = rows.shape[1]
        if num_fill < 1:
            raise ValueError("erase: fill value is empty")
        if num_fill > 1 and n and (shapes[:, -1] != num_fill).any():
            raise ValueError(f"erase: {num_fill} fill values given for {shapes[:, -1].tolist()} channels")
        desc = descriptors(n, 13)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = volumes(shapes)
        desc[:, 3] = box_offsets[:-1]
        desc[:, 4] = box_offsets[1:]
        put_padded(desc, 5, shapes)
        boxes = np.ascontiguousarray(boxes, np.int64).reshape(-1, 2 * nd)
        self._launch_batch("occlusion", f"erase_{image_type(dtype, 'erase')}", desc[:, 2], desc, (src, dst),
                           (np.int32(nd), lambda p: p[0], lambda p: p[1], np.int32(num_fill),
                            np.int32(num_fill if fill.ndim == 2 else 0)),
                           (boxes if len(boxes) else np.zeros((1, 2 * nd), np.int64), rows.reshape(-1)))

    def grid_mask(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
                  dst_offsets: np.ndarray, params: np.ndarray) -> None:
        n = len(shapes)
        if shapes.shape[1] != 3:
            raise ValueError("grid_mask: samples must be (H, W, C)")
        p = np.asarray(params, np.float32).reshape(n, 5)
        if n and not (p[:, 0] > 0).all():
            raise ValueError("grid_mask: tile must be positive")
        tile = p[:, 0]
        # what the CPU kernel computes in float: cos(angle) / tile, sin(angle) / tile, shift / tile
        angle = p[:, 2].astype(np.float64)
        q = np.column_stack([np.cos(angle).astype(np.float32) / tile, np.sin(angle).astype(np.float32) / tile,
                             p[:, 3] / tile, p[:, 4] / tile, p[:, 1]]).astype(np.float32)
        desc = descriptors(n, 5)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = shapes[:, 0] * shapes[:, 1]
        desc[:, 3] = shapes[:, 1]
        desc[:, 4] = shapes[:, 2]
        self._launch_batch("occlusion", f"grid_mask_{image_type(dtype, 'grid_mask')}", desc[:, 2], desc,
                           (src, dst), (lambda d: d[0],), (q,))
