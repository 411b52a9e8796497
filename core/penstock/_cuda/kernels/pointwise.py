"""Lookup tables, noise and gathers of ranges, element by element (csrc/cuda/pointwise.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, TYPE_OF, UNIT_NAMES, KernelFamily, descriptors, unit_name, volumes


class PointwiseKernels(KernelFamily):
    def lookup_table(self, src: Any, table: np.ndarray, default: Any, dst: Any) -> None:
        """dst[i] = table[src[i]] (``default`` outside the table); the table is in dst's type."""
        es = dst.dtype.itemsize
        full = np.concatenate([np.asarray(table, dst.dtype), np.asarray([default], dst.dtype)])
        (d_table,) = self.ctx.upload_params(full.view(f"u{es}"))
        self._grid_stride("pointwise", f"lut_{TYPE_OF[src.dtype]}_{UNIT_NAMES[es]}", int(src.size), src,
                          dst.view(f"u{es}"), d_table, np.int64(len(table)))

    def noise(self, pool: Any, kind: int, data: Any, shapes: np.ndarray, offsets: np.ndarray, out: Any,
              out_offsets: np.ndarray, seeds: np.ndarray, params: np.ndarray, channels: int, dtype: int) -> None:
        n = len(shapes)
        vols = volumes(shapes)
        if not np.array_equal(offsets, out_offsets):
            raise ValueError("noise: input and output must be packed alike")
        work = (vols + 1) // 2 if kind == 0 else (vols + channels - 1) // channels if kind == 2 else vols
        desc = descriptors(n, 4)
        desc[:, 0], desc[:, 1], desc[:, 2], desc[:, 3] = offsets, vols, work, channels
        self._launch_batch("pointwise", f"noise_{TYPE_NAMES[dtype]}", work, desc, (np.int32(kind), data, out),
                           (lambda p: p[0], lambda p: p[1]),
                           (np.asarray(seeds, np.uint64), np.ascontiguousarray(params, np.float64)))

    def gather_ranges(self, src_addr: np.ndarray, dst_addr: np.ndarray, counts: np.ndarray, itemsize: int) -> None:
        """Copies ``counts[i]`` elements of ``itemsize`` bytes from device address ``src_addr[i]``
        to ``dst_addr[i]``, every range in one launch."""
        unit = unit_name(itemsize, "gather")
        desc = np.stack([np.asarray(src_addr, np.uint64).view(np.int64), np.asarray(dst_addr, np.uint64).view(np.int64),
                         np.asarray(counts, np.int64)], 1)
        self._launch_batch("pointwise", f"copy_ranges_{unit}", desc[:, 2], desc, (), ())
