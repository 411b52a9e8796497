"""CLAHE: planes, tile tables, blending (csrc/cuda/clahe.cu)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ... import _engine
from ._launch import BLOCK, KernelFamily, block_starts


@functools.lru_cache(maxsize=None)
def _lab_tables() -> tuple[np.ndarray, ...]:
    return tuple(np.ascontiguousarray(t, np.int32) for t in _engine.lab_tables())


class ClaheKernels(KernelFamily):
    def clahe(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
              dst_offsets: np.ndarray, tiles: np.ndarray, clip_limits: np.ndarray, luma: bool) -> None:
        """Planes into scratch memory, one block per tile for its table, one thread per pixel to blend."""
        n, nd = shapes.shape
        if nd != 3:
            raise ValueError("clahe: samples must be uint8 HWC")
        h, w, c = shapes[:, 0], shapes[:, 1], shapes[:, 2]
        if n and ((c != 1) & (c != 3)).any():
            raise ValueError("clahe: images must have 1 or 3 channels")
        tiles = np.asarray(tiles, np.int64).reshape(n, 2)
        if n and (tiles < 1).any():
            raise ValueError("clahe: tiles_x and tiles_y must be positive")
        pixels = h * w
        mode = ((c == 3) & bool(luma)).astype(np.int64)
        planes = np.where(mode == 1, 1, c)
        scratch_offsets = np.concatenate([[0], np.cumsum(pixels * planes)[:-1]]).astype(np.int64)
        padded = (h % tiles[:, 1] != 0) | (w % tiles[:, 0] != 0)  # the CPU kernel's tiles (OpenCV's padding)
        th = h // tiles[:, 1] + padded
        tw = w // tiles[:, 0] + padded
        area = th * tw
        limits = np.asarray(clip_limits, np.float32).reshape(n).astype(np.float64)
        clip = np.where(limits > 0, np.maximum((limits * area / 256.0).astype(np.int64), 1), 0)
        tiles_per_plane = tiles[:, 0] * tiles[:, 1]
        lut_offsets = np.concatenate([[0], np.cumsum(tiles_per_plane * planes * 256)[:-1]]).astype(np.int64)
        desc = np.column_stack([src_offsets, dst_offsets, pixels, h, w, c, mode, scratch_offsets, lut_offsets,
                                tiles[:, 0], tiles[:, 1], th, tw]).astype(np.int64)
        block_start, grid = block_starts(pixels)
        if grid == 0:
            return
        # one row per tile of every plane: (plane offset, H, W, tile h, tile w, tile y, tile x, clip, table offset)
        sample = np.repeat(np.arange(n), tiles_per_plane * planes)
        k = np.arange(len(sample)) - np.repeat(np.concatenate([[0], np.cumsum(tiles_per_plane * planes)[:-1]]),
                                               tiles_per_plane * planes)
        plane, tile = k // tiles_per_plane[sample], k % tiles_per_plane[sample]
        tile_rows = np.column_stack([scratch_offsets[sample] + plane * pixels[sample], h[sample], w[sample],
                                     th[sample], tw[sample], tile // tiles[sample, 0], tile % tiles[sample, 0],
                                     clip[sample], lut_offsets[sample] + k * 256]).astype(np.int64)
        gamma, cbrt, coeffs = _lab_tables()
        with self.ctx:
            scratch = self.cp.empty(max(int((pixels * planes).sum()), 1), np.uint8)
            luts = self.cp.empty(max(len(tile_rows) * 256, 1), np.uint8)
        d_desc, d_start, d_tiles, d_gamma, d_cbrt, d_coeffs = self.ctx.upload_params(desc, block_start, tile_rows,
                                                                                     gamma, cbrt, coeffs)
        stream = self.ctx.stream
        self._fn("clahe", "clahe_planes")((grid,), (BLOCK,), (src, scratch, d_desc, d_start, np.int32(n), d_gamma,
                                                              d_cbrt, d_coeffs), stream=stream)
        self._fn("clahe", "clahe_tables")((len(tile_rows),), (256,), (scratch, luts, d_tiles), stream=stream)
        self._fn("clahe", "clahe_apply")((grid,), (BLOCK,), (src, dst, d_desc, d_start, np.int32(n), luts, d_gamma,
                                                             d_cbrt, d_coeffs), stream=stream)
