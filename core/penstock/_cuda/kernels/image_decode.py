"""The gather of decoded image windows into a packed batch (csrc/cuda/image_decode.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _engine
from ._launch import ITEMS, KernelFamily, Launch


class ImageDecodeKernels(KernelFamily):
    def gather_images(self, pointers: np.ndarray, pitches: np.ndarray, windows: np.ndarray,
                      channels: np.ndarray, reverse: np.ndarray, dst: Any, dst_offsets: np.ndarray) -> None:
        """Copies window (y, x, h, w) of uint8 HWC images at device addresses ``pointers`` (row
        pitch in bytes, ``channels`` each, channel order reversed where ``reverse``) into the packed
        batch ``dst`` (uint8, or float32 = v / 255)."""
        launch = self.gather_images_launch(pointers, pitches, windows, channels, reverse, dst, dst_offsets)
        launch.queue(self.ctx.stream)

    def gather_images_launch(self, pointers: np.ndarray, pitches: np.ndarray, windows: np.ndarray,
                             channels: np.ndarray, reverse: np.ndarray, dst: Any, dst_offsets: np.ndarray) -> Launch:
        """``gather_images``' launch, prepared but not queued."""
        desc = _engine.image_gather_descriptors(np.asarray(pointers, np.uint64), pitches, windows, channels, reverse,
                                                dst_offsets)
        return self._prepare_batch("image_decode", _gather_name(dst.dtype), desc[:, 6], desc, (dst,), (),
                                   items=ITEMS)[0]

    def load_gather(self, dtype: Any) -> None:
        """Compiles the gather into ``dtype`` batches (or loads it from CuPy's cache) ahead of its
        first use: a mixed decoder gathers its host part's pixels only once the host takes a share,
        which may be hundreds of batches in, and on a machine whose cache is cold the compile would
        then hold that batch up mid-run rather than the pipeline's start."""
        self._fn("image_decode", _gather_name(np.dtype(dtype)))


def _gather_name(dtype: np.dtype) -> str:
    return "gather_f32" if dtype == np.float32 else "gather_u8"
