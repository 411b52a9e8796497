"""Affine and perspective warps and remapping of frames (csrc/cuda/warp.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, KernelFamily

PERSPECTIVE_TYPES = {0: "u8", 1: "u16", 5: "i16", 9: "f32"}


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
        # filled a column at a time: a zeroed [N, 8] table, or [N, 2] blocks, give numpy the GIL away
        desc = np.empty((n, 8), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        for column, (shapes, dim) in enumerate(((src_shapes, 1), (src_shapes, 2), (dst_shapes, 1), (dst_shapes, 2))):
            desc[:, 2 + column] = shapes[:, dim]
        desc[:, 6] = dst_shapes[:, 0] * dst_shapes[:, 1] * dst_shapes[:, 2]
        desc[:, 7] = 0
        c = channels.pop() if channels else 1
        self._launch_batch("warp", f"warp_affine_{TYPE_NAMES[dtype]}", desc[:, 6], desc, (src, dst),
                           (np.int32(c), lambda p: p[0], np.int32(interp), np.int32(fill is not None),
                            np.float32(fill or 0.0)), (np.ascontiguousarray(matrices, np.float32),))

    def warp_perspective(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                         dst_shapes: np.ndarray, dst_offsets: np.ndarray, dtype: int, matrices: np.ndarray,
                         interp: int, border: int, fill: np.ndarray) -> None:
        """One thread per output pixel; matrices [N, 3, 3] (double) and fill [N, C] go up with the descriptors."""
        n = len(src_shapes)
        if src_shapes.shape[1] != 4:
            raise ValueError("warp_perspective: samples must be (frames, H, W, C)")
        if dtype not in PERSPECTIVE_TYPES or interp not in (0, 1, 2) or border not in range(5):
            raise ValueError("warp_perspective: unsupported type, interpolation or border mode")
        fill = np.ascontiguousarray(fill, np.float64).reshape(n, -1)
        desc = np.column_stack([src_offsets, dst_offsets, src_shapes[:, 1:4], dst_shapes[:, 1:3],
                                dst_shapes[:, 0] * dst_shapes[:, 1] * dst_shapes[:, 2]]).astype(np.int64)
        self._launch_batch("warp", f"warp_perspective_{PERSPECTIVE_TYPES[dtype]}", desc[:, 7], desc, (src, dst),
                           (lambda p: p[0], lambda p: p[1], np.int32(fill.shape[1]), np.int32(interp),
                            np.int32(border)),
                           (np.ascontiguousarray(matrices, np.float64).reshape(n, 9),
                            fill if fill.size else np.zeros((1, 1))))

    def remap(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
              dst_shapes: np.ndarray, dst_offsets: np.ndarray, dtype: int, mapx: Any, mapy: Any,
              map_offsets: np.ndarray, interp: int, centre: bool) -> None:
        """One thread per output pixel; the maps stay on the device (input batches)."""
        if shapes.shape[1] != 4:
            raise ValueError("remap: samples must be (frames, H, W, C)")
        if interp not in (0, 1):
            raise ValueError("remap: interpolation must be NN or linear")
        if dtype not in PERSPECTIVE_TYPES:
            raise TypeError(f"remap: no GPU kernel for element type {TYPE_NAMES.get(dtype, dtype)}")
        desc = np.column_stack([src_offsets, dst_offsets, shapes[:, 1:4], dst_shapes[:, 1:3],
                                dst_shapes[:, 0] * dst_shapes[:, 1] * dst_shapes[:, 2], map_offsets]).astype(np.int64)
        self._launch_batch("warp", f"remap_{PERSPECTIVE_TYPES[dtype]}", desc[:, 7], desc, (src, dst),
                           (mapx, mapy, np.int32(interp), np.float32(0.0 if centre else 0.5)))
