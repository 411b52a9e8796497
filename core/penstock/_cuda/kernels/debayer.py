"""Demosaicing of Bayer frames (csrc/cuda/debayer.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import KernelFamily, volumes

TYPES = {0: "u8", 1: "u16"}


class DebayerKernels(KernelFamily):
    def debayer(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
                dst_offsets: np.ndarray, blue: np.ndarray, grey: bool) -> None:
        """One thread per pixel of every frame."""
        n, nd = shapes.shape
        if nd != 3:
            raise ValueError("debayer: samples must be (frames, H, W)")
        if dtype not in TYPES:
            raise TypeError("debayer: supported types are UINT8 and UINT16")
        pixels = volumes(shapes)
        if n and ((pixels > 0) & ((shapes[:, 1] < 3) | (shapes[:, 2] < 3))).any():
            raise ValueError("debayer: images must be at least 3 x 3")
        blue = np.asarray(blue, np.int64).reshape(n, 2)
        desc = np.column_stack([src_offsets, dst_offsets, pixels, shapes[:, 1], shapes[:, 2], blue]).astype(np.int64)
        self._launch_batch("debayer", f"debayer_{TYPES[dtype]}", pixels, desc, (src, dst), (np.int32(bool(grey)),))
