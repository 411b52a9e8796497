"""One-hot encoding of labels (csrc/cuda/one_hot.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import TYPE_NAMES, UNIT_NAMES, KernelFamily, descriptors, volumes


class OneHotKernels(KernelFamily):
    def one_hot(self, pool: Any, src: Any, src_type: int, shapes: np.ndarray, src_offsets: np.ndarray,
                dst: Any, dst_offsets: np.ndarray, classes: int, axis: int, on: np.ndarray, off: np.ndarray) -> None:
        """GPU only (the CPU one-hot is numpy): labels of ``shapes`` (the class axis goes in at
        ``axis``); ``on``/``off`` are scalars of the output type."""
        n = len(shapes)
        base = np.asarray(shapes, np.int64).reshape(n, -1)
        vols = volumes(base)
        desc = descriptors(n, 4)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = vols * classes
        desc[:, 3] = volumes(base[:, axis:]) if base.shape[1] > axis else 1
        es = dst.dtype.itemsize
        label = "u8" if src_type == 11 else TYPE_NAMES[src_type]
        udt = np.dtype(f"u{es}")
        on, off = (np.asarray(v, dst.dtype).reshape(1).view(udt)[0] for v in (on, off))
        src = src.view(np.uint8) if src_type == 11 else src
        self._launch_batch("one_hot", f"one_hot_{label}_{UNIT_NAMES[es]}", desc[:, 2], desc, (src, dst.view(udt)),
                           (np.int64(classes), on, off))
