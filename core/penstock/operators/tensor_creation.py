"""Tensor creation: ``zeros``, ``ones`` and ``full`` (a shape given, or taken per sample from an
argument input) and their ``_like`` forms (the shape, and for ``full_like`` the type, of an input).

``zeros``/``ones`` fill a new batch in one numpy call; ``full`` broadcasts each sample's fill value
to its output shape in one native call (``broadcast_samples``): shapes aligned at their last axes, a
fill extent of 1 repeated, and, as in DALI, the fill's first index taken where the output's extent is
1 or the fill has more axes than the output.
"""
from __future__ import annotations

import numpy as np

from .._batch import contiguous, empty_batch
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, to_numpy_type
from .cast import cast_batch
from .random import sample_shapes

_SHAPE = Arg("shape", ArgType.INT_LIST, optional=True, tensor=True,
             doc="shape of each sample (default: a scalar); an argument input gives one per sample")
_LAYOUT = Arg("layout", ArgType.LAYOUT, optional=True, doc="layout of the output")
_DTYPE = Arg("dtype", ArgType.DTYPE, DALIDataType.INT32, doc="output type")
_DTYPE_LIKE = Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: the input's)")

ZEROS = OpSchema("Zeros", "A batch of zeros of the given shape and type.", args=[_SHAPE, _DTYPE, _LAYOUT],
                 min_inputs=0)
ONES = OpSchema("Ones", "A batch of ones of the given shape and type.", args=[_SHAPE, _DTYPE, _LAYOUT], min_inputs=0)
FULL = OpSchema("Full", "Each sample's fill value (input 0) broadcast to the given shape (last axes aligned; where "
                "the output's extent is 1 the fill's first value along that axis is taken); the output has the fill "
                "value's type.", args=[_SHAPE, _LAYOUT])
ZEROS_LIKE = OpSchema("ZerosLike", "Zeros of the shape (and layout) of the input.", args=[_DTYPE_LIKE])
ONES_LIKE = OpSchema("OnesLike", "Ones of the shape (and layout) of the input.", args=[_DTYPE_LIKE])
FULL_LIKE = OpSchema("FullLike", "The fill value (input 1) broadcast to the shape of input 0, converted to its type "
                     "(rounding half away from zero, saturating); the layout is input 0's.", min_inputs=2)


def _output_dtype(op: Operator, like: DALIDataType | None) -> DALIDataType:
    dtype = op.args["dtype"] if op.args["dtype"] is not None else like
    try:
        to_numpy_type(dtype)
    except TypeError:
        raise RuntimeError(f"{op.label}: data type {dtype.name} is not supported; numeric types and BOOL are") from None
    return dtype


def _shapes(op: Operator, ws) -> np.ndarray:
    shapes = sample_shapes(op, ws)
    if (shapes < 0).any():
        raise RuntimeError(f"{op.label}: shape extents must not be negative, got {shapes[(shapes < 0).any(1)][0].tolist()}")
    return shapes


def _layout(op: Operator, ndim: int) -> str:
    layout = op.args["layout"] or ""
    if layout and len(layout) != ndim:
        raise RuntimeError(f"{op.label}: layout '{layout}' has {len(layout)} dimensions, the output {ndim}")
    return layout


def _constant_batch(ws, shapes: np.ndarray, dtype: DALIDataType, value: int, layout: str, source_info=None):
    out = empty_batch(shapes, to_numpy_type(dtype), layout, source_info)
    out._buf[...] = value
    return out


class _Constant(Operator):
    """zeros, ones: one value of a type, in shapes from ``shape``."""
    value = 0

    def run(self, ws):
        shapes = _shapes(self, ws)
        return [_constant_batch(ws, shapes, _output_dtype(self, None), self.value, _layout(self, shapes.shape[1]))]


class _ConstantLike(Operator):
    """zeros_like, ones_like: one value in the input's shapes and layout."""
    value = 0

    def run(self, ws):
        src = ws.inputs[0]
        return [_constant_batch(ws, src._shapes, _output_dtype(self, src.dtype), self.value, src._layout,
                                src._source_info)]


@register(ZEROS)
class Zeros(_Constant):
    value = 0


@register(ONES)
class Ones(_Constant):
    value = 1


@register(ZEROS_LIKE)
class ZerosLike(_ConstantLike):
    value = 0


@register(ONES_LIKE)
class OnesLike(_ConstantLike):
    value = 1


def broadcast_fill(op: Operator, ws, fill, shapes: np.ndarray, layout: str, source_info=None):
    """Each sample of ``fill`` broadcast to the matching row of ``shapes``."""
    fill = contiguous(fill)
    if len(fill) != len(shapes):
        raise RuntimeError(f"{op.label}: the fill value has {len(fill)} samples, the batch {len(shapes)}")
    out_nd, fill_nd = shapes.shape[1], fill.ndim()
    common = min(out_nd, fill_nd)  # the last axes, aligned; an output extent of 1 takes the fill's first index
    extents = fill._shapes.reshape(len(shapes), fill_nd)[:, fill_nd - common:]
    wanted = shapes[:, out_nd - common:]
    bad = ((extents != 1) & (extents != wanted) & (wanted != 1)).any(axis=1)
    bad |= (fill._volumes() == 0) & (shapes.prod(axis=1) > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RuntimeError(f"{op.label}: sample {i}: shapes {' x '.join(map(str, shapes[i]))} and "
                           f"{' x '.join(map(str, fill._shapes[i]))} can't be broadcast")
    out = ws.new_batch(shapes, fill._buf.dtype, layout, source_info)
    ws.kernels.broadcast_samples(ws.pool, fill._buf, fill._shapes, fill._offsets, out._buf, out._shapes, out._offsets)
    return out


@register(FULL)
class Full(Operator):
    def run(self, ws):
        shapes = _shapes(self, ws)
        return [broadcast_fill(self, ws, ws.inputs[0], shapes, _layout(self, shapes.shape[1]))]


@register(FULL_LIKE)
class FullLike(Operator):
    def run(self, ws):
        src, fill = ws.inputs
        if fill.dtype != src.dtype:
            fill = cast_batch(ws, contiguous(fill), src.dtype)
        return [broadcast_fill(self, ws, fill, src._shapes, src._layout, src._source_info)]
