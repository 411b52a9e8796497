"""Data types of the dynamic mode: ``ndd.float32``, ``ndd.uint8`` ... as ``DType`` values.

A ``DType`` describes an element type by kind and width; the ones penstock stores in tensors map
one to one to ``types.DALIDataType``, and the enum types (``DataType``, ``ImageType``,
``InterpType``) describe arguments that hold those enums.
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ...types import DALIDataType, to_dali_type, to_numpy_type

__all__ = ["DType", "dtype", "type_id", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "float16", "float32", "float64", "bfloat16", "bool",
           "DataType", "ImageType", "InterpType"]

_IEEE_EXPONENT = {8: 4, 16: 5, 32: 8, 64: 11}  # exponent bits of the IEEE 754 formats by width


class DType:
    """An element type: its kind, width in bits and, for floats, exponent and significand bits.

    ``str()`` gives the short name (``f32``, ``u8``, ``bool``); calling a type makes a tensor of it
    (``ndd.float32([1, 2])``)."""

    class Kind(enum.Enum):
        signed = enum.auto()
        unsigned = enum.auto()
        float = enum.auto()
        bool = enum.auto()
        enum = enum.auto()

    def __init__(self, kind: "DType.Kind", bits: int, exponent_bits: int | None = None,
                 significand_bits: int | None = None, *, type_id: DALIDataType | None = None,
                 name: str | None = None):
        self.kind = kind
        self.bits = int(bits)
        if kind is DType.Kind.float:
            self.exponent_bits = exponent_bits or _IEEE_EXPONENT[self.bits]
            self.significand_bits = significand_bits or self.bits - self.exponent_bits - 1
        else:
            self.exponent_bits = self.significand_bits = None
        self.type_id = type_id
        self.name = name or self._short_name()
        self.bytes = (self.bits + 7) // 8

    def _short_name(self) -> str:
        K = DType.Kind
        if self.kind is K.bool:
            return "bool"
        if self.kind is not K.float:
            return f"{'i' if self.kind is K.signed else 'u'}{self.bits}"
        if self.exponent_bits == _IEEE_EXPONENT.get(self.bits):
            return f"f{self.bits}"
        if (self.bits, self.exponent_bits) == (16, 8):
            return "bfloat16"
        return f"f{self.bits}e{self.exponent_bits}m{self.significand_bits}"

    # -- conversions
    @staticmethod
    def from_type_id(type_id: Any) -> "DType":
        try:
            return _BY_ID[DALIDataType(int(type_id))]
        except (KeyError, ValueError):
            raise KeyError(f"no dynamic-mode type corresponds to {type_id!r}") from None

    @staticmethod
    def from_fw_type(framework_type: Any) -> "DType":
        """The type of a numpy (or torch, through its name) element type."""
        if hasattr(framework_type, "is_floating_point") and not isinstance(framework_type, np.dtype):
            framework_type = str(framework_type).replace("torch.", "")  # torch.float32 -> "float32"
        return DType.from_type_id(to_dali_type(framework_type))

    @staticmethod
    def parse(name: str) -> "DType":
        if name in _BY_NAME:
            return _BY_NAME[name]
        try:
            return DType.from_fw_type(np.dtype(name))
        except TypeError:
            raise ValueError(f"not a type name: {name!r}") from None

    def numpy_type(self) -> np.dtype:
        """The numpy element type of data of this type (a TypeError for those without one)."""
        if self.type_id is None or self.kind is DType.Kind.enum:
            raise TypeError(f"type {self.name} has no numpy equivalent")
        return np.dtype(to_numpy_type(self.type_id))

    def __call__(self, data: Any, **kwargs: Any) -> Any:
        """A tensor of this type holding ``data`` (``ndd.float32([1, 2])``)."""
        if "dtype" in kwargs:
            raise ValueError("dtype cannot be given to a type: it is that type")
        from ._tensor import tensor
        return tensor(data, dtype=self, **kwargs)

    # -- identity
    def _key(self) -> tuple:
        return (self.kind, self.bits, self.exponent_bits, self.significand_bits,
                self.type_id if self.kind is DType.Kind.enum else None)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DALIDataType):
            return self.type_id == other
        return isinstance(other, DType) and self._key() == other._key()

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        parts = [f"kind={self.kind}", f"bits={self.bits}"]
        if self.exponent_bits is not None:
            parts += [f"exponent_bits={self.exponent_bits}", f"significand_bits={self.significand_bits}"]
        return f"DType({', '.join(parts)})"


K = DType.Kind
int8, int16, int32, int64 = (DType(K.signed, b, type_id=t) for b, t in
                             [(8, DALIDataType.INT8), (16, DALIDataType.INT16), (32, DALIDataType.INT32),
                              (64, DALIDataType.INT64)])
uint8, uint16, uint32, uint64 = (DType(K.unsigned, b, type_id=t) for b, t in
                                 [(8, DALIDataType.UINT8), (16, DALIDataType.UINT16),
                                  (32, DALIDataType.UINT32), (64, DALIDataType.UINT64)])
float16, float32, float64 = (DType(K.float, b, type_id=t) for b, t in
                             [(16, DALIDataType.FLOAT16), (32, DALIDataType.FLOAT), (64, DALIDataType.FLOAT64)])
bool = DType(K.bool, 8, type_id=DALIDataType.BOOL)  # noqa: A001 - DALI's name
bfloat16 = DType(K.float, 16, 8, 7)  # a type of arguments only: penstock stores no bfloat16 data
DataType = DType(K.enum, 32, type_id=DALIDataType.DATA_TYPE, name="DataType")
ImageType = DType(K.enum, 32, type_id=DALIDataType.IMAGE_TYPE, name="ImageType")
InterpType = DType(K.enum, 32, type_id=DALIDataType.INTERP_TYPE, name="InterpType")
del K

_ALL = [int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, bool,
        bfloat16, DataType, ImageType, InterpType]
_BY_ID = {t.type_id: t for t in _ALL if t.type_id is not None}
_BY_NAME = {t.name: t for t in _ALL}


def dtype(*args: Any) -> DType:
    """A ``DType`` from a ``DType``, a ``DALIDataType``, a name (``"f32"``, ``"float32"``) or a numpy
    (or torch) type; several arguments construct one (``dtype(DType.Kind.float, 16, 8, 7)``)."""
    if len(args) != 1:
        return DType(*args)
    value = args[0]
    if isinstance(value, DType):
        return value
    if isinstance(value, DALIDataType):
        return DType.from_type_id(value)
    if isinstance(value, str):
        return DType.parse(value)
    return DType.from_fw_type(value)


def type_id(value: Any) -> DALIDataType:
    """The ``DALIDataType`` of a ``DType`` (a ``DALIDataType`` is returned as is)."""
    if isinstance(value, DType):
        if value.type_id is None:
            raise ValueError(f"type {value.name} has no DALIDataType")
        return value.type_id
    if isinstance(value, DALIDataType):
        return value
    raise ValueError(f"not a data type: {value!r}")
