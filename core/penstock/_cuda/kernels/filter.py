"""Neighbourhood filters: correlation, the Laplacian's passes, rank filters (csrc/cuda/filter.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import BLOCK, TYPE_NAMES, KernelFamily, block_starts, descriptors, volumes

FILTER_TYPES = {0: "u8", 4: "i8", 1: "u16", 5: "i16", 8: "f16", 9: "f32"}


def _type(code: int, what: str) -> str:
    if code not in FILTER_TYPES:
        raise TypeError(f"{what}: no GPU kernel for element type {TYPE_NAMES.get(code, code)}")
    return FILTER_TYPES[code]


def _as_3d(shapes: np.ndarray) -> np.ndarray:
    """(outer, D, H, W, C) of (outer, [D,] H, W, C) shapes."""
    if shapes.shape[1] == 5:
        return shapes
    return np.column_stack([shapes[:, 0], np.ones(len(shapes), np.int64), shapes[:, 1:]])


def _packed_offsets(vols: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(vols), np.int64)
    np.cumsum(vols[:-1], out=offsets[1:])
    return offsets


class FilterKernels(KernelFamily):
    def filter(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, src_type: int, dst: Any,
               out_shapes: np.ndarray, dst_offsets: np.ndarray, dst_type: int, filters: Any,
               filter_shapes: np.ndarray, filter_offsets: np.ndarray, anchors: np.ndarray, border: int,
               fill: np.ndarray) -> None:
        """One thread per output element; filters stay on the device (an input batch)."""
        n, nd = shapes.shape
        k = nd - 2
        if k not in (2, 3):
            raise ValueError("filter: samples must be (outer, 2 or 3 spatial dims, channels)")
        in_t = _type(src_type, "filter")
        if dst_type not in (src_type, 9):
            raise TypeError("filter: the output type must be the input's or FLOAT")
        out_t = _type(dst_type, "filter")
        s, o = _as_3d(shapes), _as_3d(out_shapes)
        fs = np.ones((n, 3), np.int64)
        fs[:, 3 - k:] = filter_shapes
        an = np.zeros((n, 3), np.int64)
        an[:, 3 - k:] = anchors
        if n and ((an < 0) | (an >= fs)).any():
            raise ValueError("filter: the anchor must lie within the filter")
        desc = descriptors(n, 17)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = volumes(out_shapes)
        desc[:, 3:7] = s[:, 1:5]
        desc[:, 7:10] = o[:, 1:4]
        desc[:, 10:13] = fs
        desc[:, 13:16] = an
        desc[:, 16] = filter_offsets
        self._launch_batch("filter", f"filter_{in_t}_{out_t}", desc[:, 2], desc, (src, dst),
                           (filters, lambda p: p[0], np.int32(border)), (np.asarray(fill, np.float32),))

    def laplacian(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, src_type: int, dst: Any,
                  dst_offsets: np.ndarray, dst_type: int, windows: np.ndarray, window_sizes: np.ndarray,
                  window_offsets: np.ndarray, scales: np.ndarray) -> None:
        """Per partial derivative: one pass per axis (the first reads the input, the rest float), then
        the scaled part added to a float sum; the sum is stored in the output type at the end."""
        n, nd = shapes.shape
        k = nd - 2
        if not 1 <= k <= 3:
            raise ValueError("laplacian: samples must be (outer, 1-3 spatial dims, channels)")
        in_t = _type(src_type, "laplacian")
        if dst_type not in (src_type, 9):
            raise TypeError("laplacian: the output type must be the input's or FLOAT")
        out_t = _type(dst_type, "laplacian")
        sizes = np.asarray(window_sizes, np.int64).reshape(n, k, k)
        if n and ((sizes < 1) | (sizes % 2 == 0)).any():
            raise ValueError("laplacian: window sizes must be odd and positive")
        vols = volumes(shapes)
        block_start, grid = block_starts(vols)
        if grid == 0:
            return
        tmp_offsets = _packed_offsets(vols)
        total = max(int(vols.sum()), 1)
        with self.ctx:
            part = [self.cp.empty(total, np.float32) for _ in range(2)]
            acc = self.cp.empty(total, np.float32)
        # pass descriptors [k (derivative), k (axis), n, 7]
        desc = np.zeros((k, k, n, 7), np.int64)
        for a in range(k):
            for b in range(k):
                desc[a, b, :, 0] = src_offsets if b == 0 else tmp_offsets
                desc[a, b, :, 1] = tmp_offsets
                desc[a, b, :, 2] = vols
                desc[a, b, :, 3] = shapes[:, 1 + b]
                desc[a, b, :, 4] = volumes(shapes[:, 2 + b:])
                desc[a, b, :, 5] = sizes[:, a, b] // 2
                desc[a, b, :, 6] = np.asarray(window_offsets, np.int64).reshape(n, k, k)[:, a, b]
        sum_desc = np.column_stack([tmp_offsets, vols, np.arange(n)]).astype(np.int64)
        store_desc = np.column_stack([tmp_offsets, dst_offsets, vols]).astype(np.int64)
        scale_rows = np.ascontiguousarray(np.asarray(scales, np.float32).reshape(n, k).T)  # [k, n]
        dev = self.ctx.upload_params(desc, block_start, np.asarray(windows, np.float32), sum_desc, store_desc,
                                     scale_rows)
        d_desc, d_start, d_weights, d_sum, d_store, d_scales = dev
        stream = self.ctx.stream
        for a in range(k):
            for b in range(k):
                source = src if b == 0 else part[(b - 1) % 2]
                name = f"separable_pass_{in_t}" if b == 0 else "separable_pass_f32"
                self._fn("filter", name)((grid,), (BLOCK,), (source, part[b % 2], d_desc[a, b], d_start, np.int32(n),
                                                          d_weights), stream=stream)
            self._fn("filter", "accumulate_scaled")((grid,), (BLOCK,), (acc, part[(k - 1) % 2], d_sum, d_start,
                                                                        np.int32(n), d_scales[a], np.int32(a == 0)),
                                                    stream=stream)
        self._fn("filter", f"store_float_{out_t}")((grid,), (BLOCK,), (acc, dst, d_store, d_start, np.int32(n)),
                                                   stream=stream)

    def rank_filter(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_offsets: np.ndarray, dtype: int, rank: int, windows: np.ndarray, anchors: np.ndarray,
                    border: int, iterations: int) -> None:
        """One launch per iteration, alternating between the output and a scratch batch so that the
        last writes the output."""
        n, nd = shapes.shape
        if nd != 4:
            raise ValueError("rank_filter: samples must be (outer, H, W, channels)")
        if iterations < 1:
            raise ValueError("rank_filter: iterations must be positive")
        t = _type(dtype, "rank_filter")
        windows = np.asarray(windows, np.int64).reshape(n, 2)
        anchors = np.asarray(anchors, np.int64).reshape(n, 2)
        if n and ((windows < 1) | (anchors < 0) | (anchors >= windows)).any():
            raise ValueError("rank_filter: window sizes must be positive and anchors inside the window")
        vols = volumes(shapes)
        block_start, grid = block_starts(vols)
        if grid == 0:
            return
        scratch_offsets = _packed_offsets(vols)
        with self.ctx:
            scratch = self.cp.empty(max(int(vols.sum()), 1), src.dtype) if iterations > 1 else None
        # descriptors of every (source, target) pair: sources input, output, scratch; targets output, scratch
        desc = np.zeros((3, 2, n, 10), np.int64)
        for i, source_offsets in enumerate((src_offsets, dst_offsets, scratch_offsets)):
            for j, target_offsets in enumerate((dst_offsets, scratch_offsets)):
                desc[i, j, :, 0] = source_offsets
                desc[i, j, :, 1] = target_offsets
        desc[..., 2] = vols
        desc[..., 3:6] = shapes[:, 1:4]
        desc[..., 6:8] = windows
        desc[..., 8:10] = anchors
        d_desc, d_start = self.ctx.upload_params(desc, block_start)
        source, source_kind = src, 0
        for it in range(iterations):
            to_output = (iterations - 1 - it) % 2 == 0
            target, target_kind = (dst, 0) if to_output else (scratch, 1)
            self._fn("filter", f"rank_filter_{t}")((grid,), (BLOCK,), (source, target, d_desc[source_kind, target_kind],
                                                                       d_start, np.int32(n), np.int32(rank),
                                                                       np.int32(border)), stream=self.ctx.stream)
            source, source_kind = target, 1 + target_kind
