"""(x - mean) / stddev * scale + shift (csrc/cuda/normalize.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, KernelFamily, check_dims, descriptors, volumes


class NormalizeKernels(KernelFamily):
    def normalize(self, pool: Any, src: Any, src_type: int, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                  dst_offsets: np.ndarray, mean: Any, mean_offsets: np.ndarray, mean_strides: np.ndarray,
                  stddev: Any, std_offsets: np.ndarray, std_strides: np.ndarray, scale: float,
                  shift: float) -> None:
        """(x - mean) / stddev * scale + shift into float ``dst``; ``mean``/``stddev`` are float64
        device buffers read at ``offsets[i]`` + the element's index times ``strides[i]`` ([N, nd])."""
        n, nd = shapes.shape
        check_dims(shapes, "normalize")
        desc = descriptors(n, 29)
        desc[:, 0], desc[:, 1] = src_offsets, dst_offsets
        desc[:, 2] = volumes(shapes)
        desc[:, 3], desc[:, 4] = mean_offsets, std_offsets
        desc[:, 5:5 + nd] = shapes
        desc[:, 13:13 + nd] = mean_strides
        desc[:, 21:21 + nd] = std_strides
        self._launch_batch("normalize", f"normalize_{TYPE_NAMES[src_type]}", desc[:, 2], desc, (src, dst),
                           (np.int32(nd), mean, stddev, np.float64(scale), np.float64(shift)))
