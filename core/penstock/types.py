"""Data types, image types, interpolation types, layouts and the small value classes of the API.

Mirrors ``nvidia.dali.types``: the enums carry DALI's numbering and every member is also
exported at module level (``types.FLOAT``, ``types.RGB``, ``types.INTERP_LINEAR`` ...).
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np

from . import _hooks

__all__ = [
    "DALIDataType", "DALIImageType", "DALIInterpType", "PipelineAPIType", "TensorLayout",
    "SampleInfo", "BatchInfo", "Constant", "ConstantNode", "ScalarConstant", "CUDAStream",
    "to_numpy_type", "to_dali_type", "CPU_ONLY_DEVICE_ID",
]

CPU_ONLY_DEVICE_ID = -99999


class _ReprEnum(enum.IntEnum):
    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __repr__ = __str__


class DALIDataType(_ReprEnum):
    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    STRING = 12
    _BOOL_VEC = 13
    _INT32_VEC = 14
    _STRING_VEC = 15
    _FLOAT_VEC = 16
    FEATURE = 17
    _FEATURE_VEC = 18
    _FEATURE_DICT = 19
    IMAGE_TYPE = 20
    DATA_TYPE = 21
    INTERP_TYPE = 22
    TENSOR_LAYOUT = 23
    PYTHON_OBJECT = 24
    _TENSOR_LAYOUT_VEC = 25
    _DATA_TYPE_VEC = 26
    _INT64_VEC = 27


class DALIImageType(_ReprEnum):
    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4


class DALIInterpType(_ReprEnum):
    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5


class PipelineAPIType(_ReprEnum):
    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


# Module-level aliases of every enum member, as DALI exports them.
for _enum in (DALIDataType, DALIImageType, DALIInterpType):
    for _member in _enum:
        globals()[_member.name] = _member
        __all__.append(_member.name)
del _enum, _member

# Per-sample layout constants (a batch layout never contains "N").
NHWC = "HWC"
NCHW = "CHW"
NFHWC = "FHWC"
NFCHW = "FCHW"
SAME = ""
__all__ += ["NHWC", "NCHW", "NFHWC", "NFCHW", "SAME"]

_NUMPY_OF = {
    DALIDataType.UINT8: np.uint8, DALIDataType.UINT16: np.uint16,
    DALIDataType.UINT32: np.uint32, DALIDataType.UINT64: np.uint64,
    DALIDataType.INT8: np.int8, DALIDataType.INT16: np.int16,
    DALIDataType.INT32: np.int32, DALIDataType.INT64: np.int64,
    DALIDataType.FLOAT16: np.float16, DALIDataType.FLOAT: np.float32,
    DALIDataType.FLOAT64: np.float64, DALIDataType.BOOL: np.bool_,
}
_DALI_OF = {np.dtype(v): k for k, v in _NUMPY_OF.items()}


def to_numpy_type(dali_type: DALIDataType) -> type:
    """The numpy scalar type of a numeric (or BOOL) ``DALIDataType``."""
    try:
        return _NUMPY_OF[DALIDataType(dali_type)]
    except (KeyError, ValueError):
        raise TypeError(f"{dali_type} has no numpy equivalent") from None


def to_dali_type(dtype: Any) -> DALIDataType:
    """The ``DALIDataType`` of a numpy dtype (or anything ``np.dtype`` accepts)."""
    if isinstance(dtype, DALIDataType):
        return dtype
    try:
        return _DALI_OF[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"no DALIDataType corresponds to {dtype!r}") from None


def _type_size(dali_type: DALIDataType) -> int:
    return np.dtype(to_numpy_type(dali_type)).itemsize


def _is_float(t: DALIDataType) -> bool:
    return t in (DALIDataType.FLOAT16, DALIDataType.FLOAT, DALIDataType.FLOAT64)


def _is_int(t: DALIDataType) -> bool:
    return DALIDataType.UINT8 <= t <= DALIDataType.INT64


def _is_signed(t: DALIDataType) -> bool:
    return DALIDataType.INT8 <= t <= DALIDataType.INT64


class TensorLayout(str):
    """A layout string such as ``"HWC"``; compares equal to plain strings."""

    def __new__(cls, value: Any = "") -> "TensorLayout":
        return super().__new__(cls, "" if value is None else str(value))

    def __repr__(self) -> str:
        return f'TensorLayout("{str(self)}")'

    def find(self, dim: str, *args: Any) -> int:  # type: ignore[override]
        return str.find(self, dim, *args)


class SampleInfo(NamedTuple):
    """What a per-sample ``external_source`` callback is told about the sample it produces."""
    idx_in_epoch: int
    idx_in_batch: int
    iteration: int
    epoch_idx: int

    @property
    def iter_idx(self) -> int:
        """``iteration``, by the name the reference Pipeline page's callbacks read it with."""
        return self.iteration


class BatchInfo(NamedTuple):
    """What a batch ``external_source`` callback with ``batch_info=True`` receives."""
    iteration: int
    epoch_idx: int


class CUDAStream:
    """A CUDA stream handle passed through to GPU work (``ptr`` is the raw ``cudaStream_t``)."""

    def __init__(self, ptr: int = 0):
        self.ptr = int(ptr)


def _python_scalar_type(value: Any) -> DALIDataType:
    """The type a Python or numpy scalar takes in an expression (int literals are INT32)."""
    if isinstance(value, (bool, np.bool_)):
        return DALIDataType.BOOL
    if isinstance(value, np.generic):
        return to_dali_type(value.dtype)
    if isinstance(value, int):
        return DALIDataType.INT32
    if isinstance(value, float):
        return DALIDataType.FLOAT
    raise TypeError(f"{type(value).__name__} is not a scalar constant")


class ScalarConstant:
    """A scalar used inline in an arithmetic expression, with a pinned element type."""

    def __init__(self, value: Any, dtype: DALIDataType | None = None):
        if dtype is None:
            dtype = _python_scalar_type(value)
        self.dtype = DALIDataType(dtype)
        if _is_float(self.dtype):
            self.value = float(value)
        elif self.dtype == DALIDataType.BOOL:
            self.value = bool(value)
        else:
            self.value = int(value)

    def __repr__(self) -> str:
        return f"{self.value}:{self.dtype.name}"

    __str__ = __repr__

    def _as(self, dtype: DALIDataType) -> "ScalarConstant":
        return ScalarConstant(self.value, dtype)


for _name, _dt in [("bool", DALIDataType.BOOL), ("int8", DALIDataType.INT8),
                   ("int16", DALIDataType.INT16), ("int32", DALIDataType.INT32),
                   ("int64", DALIDataType.INT64), ("uint8", DALIDataType.UINT8),
                   ("uint16", DALIDataType.UINT16), ("uint32", DALIDataType.UINT32),
                   ("uint64", DALIDataType.UINT64), ("float16", DALIDataType.FLOAT16),
                   ("float32", DALIDataType.FLOAT), ("float64", DALIDataType.FLOAT64)]:
    setattr(ScalarConstant, _name, (lambda dt: lambda self: self._as(dt))(_dt))
del _name, _dt


def Constant(value: Any, dtype: DALIDataType | None = None, shape: Any = None,
             layout: str | None = None, device: str | None = None, **kwargs: Any):
    """A constant: an inline ``ScalarConstant`` for plain scalars, else a ``constant`` node."""
    is_scalar = isinstance(value, (bool, int, float, np.generic)) or (
        isinstance(value, np.ndarray) and value.ndim == 0)
    if is_scalar and shape is None and layout is None and device is None and not kwargs:
        if isinstance(value, np.ndarray):
            value = value[()]
        return ScalarConstant(value, dtype)
    return _hooks.constant_node(value, dtype=dtype, shape=shape, layout=layout, device=device, **kwargs)


def ConstantNode(device: str | None, value: Any, dtype: DALIDataType | None, shape: Any, layout: str | None,
                 **kwargs: Any):
    """A constant operator's output (a DataNode) holding ``value``, always a node (``Constant``
    inlines plain scalars)."""
    return _hooks.constant_node(value, dtype=dtype, shape=shape, layout=layout, device=device, **kwargs)
