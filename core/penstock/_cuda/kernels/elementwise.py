"""Casts and arithmetic, element by element (csrc/cuda/elementwise.cu)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _engine
from ._launch import TYPE_NAMES, KernelFamily, check_dims

FLOAT_CODES, INT_CODES = (8, 9, 10), range(0, 8)  # FLOAT16..FLOAT64; UINT8..INT64
COMPARISONS = range(9, 15)  # kEq .. kGe in the binary op codes


class ElementwiseKernels(KernelFamily):
    def cast(self, pool: Any, src: Any, src_code: int, dst: Any, dst_code: int, crop_conversion: bool = False) -> None:
        if src.size != dst.size:
            raise ValueError("cast: buffer sizes differ")
        # crop and slice's conversion differs only float -> integer (truncating) and to float16
        # (saturating): the pairs cast_trunc_* exist for
        differs = (src_code in FLOAT_CODES and dst_code in INT_CODES) or (
            dst_code == FLOAT_CODES[0] and src_code in (*INT_CODES, *FLOAT_CODES[1:]))
        kind = "cast_trunc" if crop_conversion and differs else "cast"
        self._grid_stride("elementwise", f"{kind}_{TYPE_NAMES[src_code]}_{TYPE_NAMES[dst_code]}", int(src.size),
                          src, dst)

    def unary(self, pool: Any, op: int, code: int, src: Any, dst: Any) -> None:
        if code == 8:
            raise TypeError("arithmetic on FLOAT16 is not supported")
        self._grid_stride("elementwise", f"unary_{TYPE_NAMES[code]}", int(src.size), np.int32(op), src, dst)

    def binary(self, pool: Any, op: int, code: int, a: Any, a_shapes: np.ndarray, a_offsets: np.ndarray,
               b: Any, b_shapes: np.ndarray, b_offsets: np.ndarray, out: Any, out_shapes: np.ndarray,
               out_offsets: np.ndarray) -> None:
        if code == 8:
            raise TypeError("arithmetic on FLOAT16 is not supported")
        nd = check_dims(out_shapes, "arithmetic")
        desc = _engine.binary_descriptors(out_shapes, out_offsets, a_shapes, np.asarray(a_offsets).reshape(-1),
                                          b_shapes, np.asarray(b_offsets).reshape(-1))
        kind = "compare" if op in COMPARISONS else "binary"
        self._launch_batch("elementwise", f"{kind}_{TYPE_NAMES[code]}", desc[:, 1], desc,
                           (np.int32(op), a, b, out), (np.int32(nd),))
