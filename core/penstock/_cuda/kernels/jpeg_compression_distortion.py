"""libjpeg-turbo's lossy steps: blocks through DCT and quantization, then pixels back (csrc/cuda/jpeg_compression_distortion.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._image_plans import jpeg_plan, jpeg_tables
from ._launch import BLOCK, KernelFamily, block_starts


class JpegCompressionDistortionKernels(KernelFamily):
    def jpeg_compression_distortion(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray,
                                    dst: Any, dst_offsets: np.ndarray, qualities: np.ndarray) -> None:
        """Samples (frames, H, W, C) uint8, C = 1 or 3: libjpeg-turbo's lossy steps, in CUDA."""
        n = len(shapes)
        if shapes.shape[1] != 4:
            raise ValueError("jpeg_compression_distortion: samples must be (frames, H, W, C)")
        if n and ((shapes[:, 3] != 1) & (shapes[:, 3] != 3)).any():
            raise ValueError("jpeg_compression_distortion: expected 1 or 3 channels")
        q = np.asarray(qualities, np.int64).reshape(n)
        if n and ((q < 1) | (q > 100)).any():
            raise ValueError("jpeg_compression_distortion: quality must be in [1, 100]")
        desc, plane_bytes = jpeg_plan(shapes, src_offsets, dst_offsets)
        block_start, grid_b = block_starts(desc[:, 7])
        pixel_start, grid_p = block_starts(desc[:, 8])
        if grid_p == 0:
            return
        with self.ctx:
            planes = self.cp.empty(max(plane_bytes, 1), np.uint8)
        d_desc, d_blocks, d_pixels, d_tables = self.ctx.upload_params(desc, block_start, pixel_start, jpeg_tables(q))
        frames = np.int32(len(desc))
        self._fn("jpeg_compression_distortion", "jpeg_blocks")((grid_b,), (BLOCK,),
                                                  (src, planes, d_desc, d_blocks, frames, d_tables),
                                                  stream=self.ctx.stream)
        self._fn("jpeg_compression_distortion", "jpeg_pixels")((grid_p,), (BLOCK,), (planes, dst, d_desc, d_pixels, frames),
                                                  stream=self.ctx.stream)
