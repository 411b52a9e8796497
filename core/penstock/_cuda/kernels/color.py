"""Colour matrices applied per pixel (csrc/cuda/color.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, KernelFamily, volumes


class ColorKernels(KernelFamily):
    def color_matrix(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
                     dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray, dst_type: int,
                     matrices: np.ndarray) -> None:
        n = len(src_shapes)
        matrices = np.ascontiguousarray(matrices, np.float32)
        co, ci = matrices.shape[1], matrices.shape[2] - 1
        if n and ((src_shapes[:, -1] != ci).any() or (dst_shapes[:, -1] != co).any()):
            raise ValueError(f"color_matrix: samples must have {ci} channels in and {co} out")
        # filled a column at a time: a zeroed [N, 4] table, or a copy of one, gives numpy the GIL away
        desc = np.empty((n, 4), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = volumes(src_shapes) // max(ci, 1)
        desc[:, 3] = 0
        self._launch_batch("color", f"color_matrix_{TYPE_NAMES[src_type]}_{TYPE_NAMES[dst_type]}", desc[:, 2],
                           desc, (src, dst), (np.int32(ci), np.int32(co), lambda p: p[0]), (matrices,))
