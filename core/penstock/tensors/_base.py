"""What host and device tensors and batches share: the sample and batch bases, layouts and packed offsets."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _engine
from ..types import DALIDataType, TensorLayout, to_dali_type, to_numpy_type


def layout_str(layout: Any) -> str:
    return "" if layout is None else str(layout)


def check_layout(layout: str, ndim: int, what: str) -> None:
    if layout and len(layout) != ndim:
        raise ValueError(f"{what}: layout '{layout}' has {len(layout)} dimensions but the "
                         f"data has {ndim}")


def reinterpreted_dtype(current: np.dtype, dtype: Any, what: str) -> np.dtype:
    """The numpy type of ``dtype`` when it has ``current``'s element size (a RuntimeError otherwise,
    as DALI raises)."""
    try:
        new = np.dtype(to_numpy_type(DALIDataType(dtype)))
    except TypeError:
        new = None
    if new is None or new.itemsize != current.itemsize:
        raise RuntimeError(f"{what}.reinterpret: cannot reinterpret {to_dali_type(current)} as "
                           f"{DALIDataType(dtype)}: the element size must not change")
    return new


class _Tensor:
    """What host and device tensors share: one sample held as an array (``_array``), a layout and
    its source (the file it came from)."""
    _array: Any
    _layout: str
    _source_info: str = ""

    def set_layout(self, layout: str | None) -> None:
        check_layout(layout_str(layout), self._array.ndim, f"{type(self).__name__}.set_layout")
        self._layout = layout_str(layout)

    def source_info(self) -> str:
        return self._source_info

    def get_property(self, key: str) -> Any:
        """A property by name ("layout", "source_info"); None where the tensor has none."""
        value = {"layout": self._layout, "source_info": self._source_info}.get(key)
        return value or None

    def reinterpret(self, dtype: DALIDataType) -> None:
        """Views the bytes as another type of the same element size, in place."""
        self._array = self._array.view(reinterpreted_dtype(self._array.dtype, dtype, type(self).__name__))

    def squeeze(self, dim: int | None = None) -> bool:
        """Removes unit dimensions in place (all, or ``dim`` if it is one); returns whether the
        shape changed."""
        before = tuple(self._array.shape)
        if dim is None:
            keep = [i for i, e in enumerate(before) if e != 1]
        else:
            if not -len(before) <= dim < len(before):
                raise RuntimeError(f"{type(self).__name__}.squeeze: axis {dim} is out of bounds for a tensor "
                                   f"with {len(before)} dimensions")
            d = dim % len(before)
            keep = [i for i in range(len(before)) if i != d or before[i] != 1]
        self._array = self._array.reshape([before[i] for i in keep])
        if self._layout:
            self._layout = "".join(self._layout[i] for i in keep)
        return tuple(self._array.shape) != before

    def shape(self) -> list[int]:
        return list(self._array.shape)

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._array.dtype)

    def ndim(self) -> int:
        return self._array.ndim

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)


class _Batch:
    """What host and device batches share: one packed buffer (``_buf``) with per-sample shapes
    ``_shapes`` [N, ndim] and element offsets ``_offsets`` [N], a layout and source infos."""
    _device: str  # "cpu" or "gpu", as shown by repr

    def _set(self, buf: Any, shapes: np.ndarray, offsets: np.ndarray, layout: str) -> None:
        self._packed = None
        self._buf = buf
        self._shapes = shapes
        self._offsets = offsets
        self._layout = layout_str(layout)
        check_layout(self._layout, shapes.shape[1], type(self).__name__)

    @classmethod
    def _from_packed(cls, buf: Any, shapes: np.ndarray, offsets: np.ndarray | None = None,
                     layout: str = "", source_info: Sequence[str] | None = None) -> Any:
        """Wraps an already packed buffer (no copy): the constructor kernels use."""
        tl = cls.__new__(cls)
        tl._init_device_state()
        if offsets is None:
            offsets = packed_offsets(shapes)
            tl._set(buf, shapes, offsets, layout)
            tl._packed = True
        else:
            tl._set(buf, shapes, offsets, layout)
        tl._source_info = list(source_info) if source_info is not None else [""] * len(shapes)
        return tl

    def _init_device_state(self) -> None:
        """Device batches record their producer's stream here."""

    # -- metadata
    def __len__(self) -> int:
        return len(self._shapes)

    def shape(self) -> list[tuple[int, ...]]:
        return [tuple(int(e) for e in s) for s in self._shapes]

    @property
    def dtype(self) -> DALIDataType:
        return to_dali_type(self._buf.dtype)

    def ndim(self) -> int:
        return int(self._shapes.shape[1])

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def set_layout(self, layout: str) -> None:
        check_layout(layout_str(layout), self.ndim(), f"{type(self).__name__}.set_layout")
        self._layout = layout_str(layout)

    def source_info(self, i: int) -> str:
        return self._source_info[i]

    def reinterpret(self, dtype: DALIDataType) -> None:
        """Views the bytes as another type of the same element size, in place."""
        self._buf = self._buf.view(reinterpreted_dtype(self._buf.dtype, dtype, type(self).__name__))

    def _volumes(self) -> np.ndarray:
        return _engine.shape_volumes(self._shapes)

    def _is_packed(self) -> bool:
        return bool(np.array_equal(self._offsets, packed_offsets(self._shapes)))

    def _is_packed_cached(self) -> bool:
        """Whether samples lie back to back from offset 0 (cached: batches are not mutated)."""
        packed = getattr(self, "_packed", None)
        if packed is None:
            packed = self._packed = self._is_packed()
        return packed

    def _volume_total(self) -> int:
        """Elements from the first sample's start to the last one's end (packed batches)."""
        n = len(self)
        if n == 0:
            return 0
        last = 1
        for extent in self._shapes[-1].tolist():
            last *= extent
        return int(self._offsets[-1]) + last

    def is_dense_tensor(self) -> bool:
        # every row as the one before, in the engine: numpy gives the GIL away on a batch's table
        return len(self) < 2 or _engine.first_differing_row(self._shapes[1:], self._shapes[:-1]) < 0

    def _sample_slice(self, i: int) -> tuple[int, int, tuple[int, ...]]:
        """(element offset, volume, shape) of sample ``i`` (negative indices count from the end)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        shape = tuple(int(e) for e in self._shapes[i % n])
        return int(self._offsets[i % n]), int(np.prod(shape, dtype=np.int64)), shape

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def reset(self) -> None:
        self._set(self._buf[:0].copy(), np.zeros((0, self.ndim()), np.int64), np.zeros((0,), np.int64),
                  self._layout)
        self._source_info = []

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(\n    dtype={self.dtype},\n    layout=\"{self._layout}\",\n"
                f"    device=\"{self._device}\",\n    num_samples={len(self)},\n    shape={self.shape()})")

    def _dense_shape(self) -> tuple[int, ...]:
        if not self.is_dense_tensor():
            raise RuntimeError(f"{type(self).__name__}: the samples of this batch have different shapes "
                               f"({self.shape()[:4]}...); only uniform batches form one tensor")
        return (len(self),) + (tuple(int(e) for e in self._shapes[0]) if len(self) else ())


def packed_offsets(shapes: np.ndarray) -> np.ndarray:
    """Where each sample of ``shapes`` [N, D] starts when the samples lie back to back (one engine
    call that keeps the GIL: numpy gives it away on arrays of a batch's size)."""
    return _engine.packed_offsets(shapes)
