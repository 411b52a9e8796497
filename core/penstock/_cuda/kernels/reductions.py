"""Reductions of samples over axes, one warp per output element (csrc/cuda/reductions.cu)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._launch import TYPE_OF, KernelFamily, check_dims, descriptors, row_major_strides, volumes


class ReductionKernels(KernelFamily):
    def reduce(self, pool: Any, kind: int, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray,
               axes: Sequence[int], dst: Any, dst_offsets: np.ndarray, ddof: int = 0, mean: Any = None,
               mean_offsets: np.ndarray | None = None) -> None:
        """Reduction ``kind`` (sum, mean, mean_square, rms, min, max, variance, std_dev) of every
        sample over ``axes``; one warp per output element, the batch in one launch."""
        n, nd = src_shapes.shape
        check_dims(src_shapes, "reductions")
        if src.dtype == np.float16 or dst.dtype == np.float16:
            raise NotImplementedError("reductions of or to FLOAT16 are not supported on the GPU")
        wide = np.dtype(np.uint64 if src.dtype.kind in "ub" else np.int64 if src.dtype.kind == "i" else np.float64)
        if dst.dtype not in (src.dtype, np.float32, np.float64, wide):  # the pairs reductions.cu instantiates
            raise NotImplementedError(f"reductions of {src.dtype.name} into {dst.dtype.name} are not supported "
                                      "on the GPU")
        kept = [a for a in range(nd) if a not in axes]
        red = sorted(axes)
        strides = row_major_strides(src_shapes)
        desc = descriptors(n, 37)
        desc[:, 0], desc[:, 1] = src_offsets, dst_offsets
        desc[:, 2] = volumes(src_shapes[:, kept])
        desc[:, 3] = volumes(src_shapes[:, red])
        if mean_offsets is not None:
            desc[:, 4] = mean_offsets
        desc[:, 5:5 + len(kept)] = src_shapes[:, kept]
        desc[:, 13:13 + len(kept)] = strides[:, kept]
        desc[:, 21:21 + len(red)] = src_shapes[:, red]
        desc[:, 29:29 + len(red)] = strides[:, red]
        with self.ctx:
            mean = self.cp.zeros(1, np.float64) if mean is None else mean.astype(np.float64, copy=False)
        self._launch_batch("reductions", f"reduce_{TYPE_OF[src.dtype]}_{TYPE_OF[dst.dtype]}", desc[:, 2] * 32, desc,
                           (np.int32(kind), src, dst), (np.int32(len(kept)), np.int32(len(red)), np.int32(ddof),
                                                        mean))
