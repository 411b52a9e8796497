"""Copies, slices, transposes and concatenations of batches (csrc/cuda/slice.cu)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import _engine
from ._launch import KernelFamily, check_dims, descriptors, unit_name, volumes


class SliceKernels(KernelFamily):
    def copy(self, pool: Any, src: Any, dst: Any) -> None:
        nbytes = int(src.nbytes)
        if nbytes != int(dst.nbytes):
            raise ValueError("copy: buffer sizes differ")
        if nbytes:
            rt = self.cp.cuda.runtime
            rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, self.ctx.stream.ptr)

    def slice(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
              dst_shapes: np.ndarray, dst_offsets: np.ndarray, anchors: np.ndarray, flips: np.ndarray,
              fill: np.ndarray, channel_dim: int) -> None:
        n, nd = src_shapes.shape
        check_dims(src_shapes, "slice")
        es = src.dtype.itemsize
        unit = unit_name(es, "slice")
        fill = np.ascontiguousarray(fill)
        if fill.dtype.itemsize != es or fill.ndim != 2 or fill.shape[0] != n:
            raise ValueError("slice: fill values must be [N, F] of the data type")
        desc = _engine.slice_descriptors(src_shapes, src_offsets, dst_shapes, dst_offsets, anchors, flips)
        udt = np.dtype(f"u{es}")
        self._launch_batch("slice", f"slice_{unit}", desc[:, 2], desc, (src.view(udt), dst.view(udt)),
                           (np.int32(nd), lambda p: p[0], np.int32(fill.shape[1]), np.int32(channel_dim)),
                           (fill.view(udt),))

    def transpose(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, perm: Sequence[int],
                  dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray) -> None:
        nd = check_dims(src_shapes, "transpose")
        es = src.dtype.itemsize
        unit = unit_name(es, "transpose")
        desc = _engine.transpose_descriptors(src_shapes, src_offsets, list(perm), dst_offsets)
        udt = np.dtype(f"u{es}")
        self._launch_batch("slice", f"transpose_{unit}", desc[:, 2], desc, (src.view(udt), dst.view(udt)),
                           (np.int32(nd),))

    def concat(self, pool: Any, srcs: Sequence[Any], shapes: Sequence[np.ndarray], offsets: Sequence[np.ndarray],
               axis: int, dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray) -> None:
        k, n = len(srcs), len(dst_shapes)
        es = dst.dtype.itemsize
        unit = unit_name(es, "concat")
        desc = descriptors(n, 4 + 2 * k)
        desc[:, 0] = dst_offsets
        desc[:, 1] = volumes(dst_shapes)
        desc[:, 2] = dst_shapes[:, axis]
        desc[:, 3] = volumes(dst_shapes[:, axis + 1:]) if dst_shapes.shape[1] > axis + 1 else 1
        for j, (buf, sh, off) in enumerate(zip(srcs, shapes, offsets)):
            desc[:, 4 + 2 * j] = (np.uint64(buf.data.ptr) + np.asarray(off, np.uint64) * np.uint64(es)).view(np.int64)
            desc[:, 5 + 2 * j] = sh[:, axis]
        self._launch_batch("slice", f"concat_{unit}", desc[:, 1], desc, (dst.view(f"u{es}"),), (np.int32(k),))
