"""Points and boxes: affine transforms of coordinates, the box encoder (csrc/cuda/boxes.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import BLOCK, TYPE_OF, KernelFamily, descriptors


class BoxKernels(KernelFamily):
    def affine_points(self, src: Any, offsets: np.ndarray, counts: np.ndarray, mats: np.ndarray, dst: Any,
                      dst_offsets: np.ndarray) -> None:
        """out = M p + T for the ``counts[i]`` points of sample i at ``offsets[i]`` (elements);
        ``mats`` [N, D_out, D + 1] (float64, [M T]); integer outputs are rounded and saturated."""
        n, dout, d1 = mats.shape
        if src.dtype == np.float16 or src.dtype == np.bool_:
            with self.ctx:
                src = src.astype(np.float32)
        if dst.dtype.kind not in "iuf" or dst.dtype == np.float16:
            raise NotImplementedError(f"coordinates of type {dst.dtype} are not supported on the GPU")
        desc = descriptors(n, 4)
        desc[:, 0], desc[:, 1], desc[:, 2], desc[:, 3] = offsets, dst_offsets, counts, np.arange(n)
        self._launch_batch("boxes", f"affine_points_{TYPE_OF[src.dtype]}_{TYPE_OF[dst.dtype]}",
                           np.asarray(counts, np.int64) * dout, desc, (src, dst),
                           (np.int32(d1 - 1), np.int32(dout), lambda p: p[0]),
                           (np.ascontiguousarray(mats, np.float64),))

    def box_encoder(self, pool: Any, boxes: Any, box_counts: np.ndarray, box_offsets: np.ndarray, labels: Any,
                    anchors: np.ndarray, criteria: float, offset: bool, scale: float, means: np.ndarray,
                    stds: np.ndarray, out_boxes: Any, out_labels: Any) -> None:
        n = len(box_counts)
        if n == 0:
            return
        desc = np.stack([box_offsets, box_counts], 1).astype(np.int64)
        with self.ctx:
            claimed = self.cp.empty(max(int(np.sum(box_counts)), 1), np.int64)
        d_desc, d_anchors, d_means, d_stds = self.ctx.upload_params(
            desc, np.ascontiguousarray(anchors, np.float32), np.asarray(means, np.float32),
            np.asarray(stds, np.float32))
        self._fn("boxes", "box_encoder")(
            (n,), (BLOCK,), (boxes, labels, d_desc, d_anchors, np.int64(len(anchors)), np.float32(criteria),
                             np.int32(bool(offset)), np.float32(scale), d_means, d_stds, claimed, out_boxes,
                             out_labels), stream=self.ctx.stream)
