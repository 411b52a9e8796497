"""Fused crop, mirror and normalize (csrc/cuda/crop_mirror_normalize.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _engine
from ._launch import ITEMS, TYPE_NAMES, KernelFamily, check_dims


class CropMirrorNormalizeKernels(KernelFamily):
    def crop_mirror_normalize(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray,
                              src_type: int, dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray,
                              dst_type: int, anchors: np.ndarray, mirror: np.ndarray, mean: np.ndarray,
                              std: np.ndarray, scale: float, shift: float, fill: np.ndarray, cdim: int,
                              pad: bool) -> None:
        n, nd = src_shapes.shape
        check_dims(src_shapes, "crop_mirror_normalize")
        if n == 0:
            return
        c = int(src_shapes[0, -1])
        desc, inv_std = _engine.crop_mirror_normalize_plan(src_shapes, src_offsets, dst_shapes, dst_offsets,
                                                           np.asarray(anchors, np.int64), mirror, std, float(scale),
                                                           cdim)
        self._launch_batch(
            "crop_mirror_normalize", f"cmn_{TYPE_NAMES[src_type]}_{TYPE_NAMES[dst_type]}", desc[:, 3], desc,
            (src, dst), (np.int32(nd), np.int32(c), np.int32(c + int(bool(pad))), np.int32(cdim),
                         lambda p: p[0], lambda p: p[1], np.float32(shift), lambda p: p[2]),
            (np.asarray(mean, np.float32), inv_std, np.asarray(fill, np.float32)), items=ITEMS)
