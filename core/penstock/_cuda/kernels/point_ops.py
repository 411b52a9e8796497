"""Point operators of the automatic augmentations: histogram tables, lookups, sharpness (csrc/cuda/point_ops.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import KernelFamily, descriptors, volumes


class PointOpKernels(KernelFamily):
    HISTOGRAM_LUTS = {"equalize": 0, "auto_contrast": 1, "contrast": 2}

    HIST_ITEMS = 16  # elements per thread of channel_histograms (kHistItems in point_ops.cu)

    def histogram_luts(self, kind: str, src: Any, shapes: np.ndarray, offsets: np.ndarray, channels: int,
                       params: np.ndarray, weights: np.ndarray) -> Any:
        """GPU only (the CPU computes these tables in numpy from host histograms): per-channel
        histograms of uint8 images (channels last, at most ``channels``), then the ``kind`` table
        of each sample and channel from them; returns the tables [N, channels, 256] on the device.
        ``params`` [N] and ``weights`` [channels] (float64) are contrast's factor and grey weights."""
        n = len(shapes)
        with self.ctx:
            hist = self.cp.zeros(n * channels * 256, np.uint64)
            luts = self.cp.empty((n, channels, 256), np.uint8)
        if n == 0:
            return luts
        desc = descriptors(n, 3)
        desc[:, 0] = offsets
        desc[:, 1] = volumes(shapes)
        desc[:, 2] = shapes[:, -1] if shapes.shape[1] >= 3 else 1
        threads = (desc[:, 1] + self.HIST_ITEMS - 1) // self.HIST_ITEMS
        dev = self._launch_batch("point_ops", "channel_histograms", threads, desc, (src, hist), (np.int32(channels),),
                                 (np.asarray(params, np.float64), np.asarray(weights, np.float64)))
        if not dev:  # every image is empty: no table is ever read
            return luts
        d_params, d_weights = dev
        self._fn("point_ops", "histogram_luts")((n,), (256,), (hist, luts, d_params, d_weights, np.int32(channels),
                                                             np.int32(self.HISTOGRAM_LUTS[kind])),
                                                stream=self.ctx.stream)
        return luts

    def apply_lut(self, pool: Any, src: Any, shapes: np.ndarray, offsets: np.ndarray, luts: Any, dst: Any,
                  dst_offsets: np.ndarray) -> None:
        """out[.., c] = luts[i, c, in[.., c]] for uint8 images (channels last); ``luts``
        [N, max_channels, 256] uint8, on the host (uploaded with the descriptors) or the device."""
        n = len(shapes)
        desc = descriptors(n, 4)
        desc[:, 0] = offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = volumes(shapes)
        desc[:, 3] = shapes[:, -1] if shapes.shape[1] >= 3 else 1
        on_host = isinstance(luts, np.ndarray)
        self._launch_batch("point_ops", "apply_lut", desc[:, 2], desc, (src, dst),
                           ((lambda p: p[0]) if on_host else luts, np.int32(luts.shape[1])),
                           (np.ascontiguousarray(luts, np.uint8),) if on_host else ())

    def sharpness(self, pool: Any, src: Any, shapes: np.ndarray, offsets: np.ndarray, factors: np.ndarray,
                  dst: Any, dst_offsets: np.ndarray) -> None:
        """PIL's sharpness on uint8 HWC images, one factor per sample (the CPU kernel's float math)."""
        if shapes.shape[1] != 3:
            raise ValueError("sharpness: images must be HWC")
        desc = descriptors(len(shapes), 6)
        desc[:, 0] = offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = volumes(shapes)
        desc[:, 3:6] = shapes
        self._launch_batch("point_ops", "sharpness", desc[:, 2], desc, (src, dst), (lambda p: p[0],),
                           (np.asarray(factors, np.float32).reshape(len(shapes)),))
