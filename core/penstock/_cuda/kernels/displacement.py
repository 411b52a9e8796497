"""Water, sphere and jitter displacement of HWC images (csrc/cuda/displacement.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import KernelFamily, descriptors

TYPES = {0: "u8", 9: "f32"}


class DisplacementKernels(KernelFamily):
    def displacement(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
                     dst_offsets: np.ndarray, kind: int, params: np.ndarray, masks: np.ndarray, linear: bool,
                     fill: float) -> None:
        """One thread per pixel; the per-sample parameters and masks go up with the descriptors."""
        n, nd = shapes.shape
        if nd != 3:
            raise ValueError("displacement: samples must be HWC")
        if dtype not in TYPES:
            raise TypeError("displacement: supported types are UINT8 and FLOAT")
        desc = descriptors(n, 6)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = shapes[:, 0] * shapes[:, 1]
        desc[:, 3:6] = shapes
        self._launch_batch("displacement", f"displace_{TYPES[dtype]}", desc[:, 2], desc, (src, dst),
                           (lambda p: p[0], lambda p: p[1], np.int32(kind), np.int32(bool(linear)), np.float32(fill)),
                           (np.ascontiguousarray(params, np.float64).reshape(n, 6),
                            np.ascontiguousarray(masks, np.int32).reshape(n)))
