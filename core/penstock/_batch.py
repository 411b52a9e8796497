"""Packed batch construction and shape arithmetic, shared by the operator kernels and the workspace."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _engine
from .tensors import TensorListCPU
from .tensors._host import POOLED_BYTES, host_buffer  # noqa: F401 - the operators' allocator
from .tensors._base import packed_offsets


def empty_batch(shapes: np.ndarray, dtype: Any, layout: str = "", source_info: Any = None,
                like: TensorListCPU | None = None) -> TensorListCPU:
    """A new packed batch with the given per-sample shapes, uninitialized.

    ``like``: a packed batch of the same shapes whose offsets (and size) can be reused.
    """
    if like is not None and like._shapes is shapes and len(like._buf) >= 0 and like._is_packed_cached():
        out = TensorListCPU._from_packed(host_buffer(like._volume_total(), dtype), shapes, like._offsets,
                                         layout, source_info)
        out._packed = True  # same shapes and offsets as a packed batch
        return out
    shapes = np.ascontiguousarray(shapes, dtype=np.int64)
    offsets = packed_offsets(shapes)
    total = int(_engine.shape_volumes(shapes).sum())  # numpy's prod would give the GIL away
    return TensorListCPU._from_packed(host_buffer(total, dtype), shapes, offsets, layout, source_info)


def _capacity(n: int) -> int:
    return 1 << max(8, (n - 1).bit_length())


@functools.lru_cache(maxsize=None)
def _zeros(capacity: int, width: int) -> np.ndarray:
    zeros = np.zeros((capacity, width), np.int64)
    zeros.flags.writeable = False
    return zeros


@functools.lru_cache(maxsize=None)
def _aranges(capacity: int) -> np.ndarray:
    out = np.arange(capacity, dtype=np.int64)
    out.flags.writeable = False
    return out


# The tables below are read-only views of a few arrays made once per power of two: a batch's parts
# vary in size from batch to batch, and numpy gives the GIL away to fill a new one. zero_rows gives
# the same object for the same size: callers test whether anchors are the shared zeros by identity.

@functools.lru_cache(maxsize=256)
def zero_rows(n: int, width: int) -> np.ndarray:
    """A read-only [n, width] int64 table of zeros, the same object for the same size: the anchors of
    whole samples, batch after batch."""
    return _zeros(_capacity(n), width)[:n]


def sample_positions(n: int) -> np.ndarray:
    """A read-only ``np.arange(n)`` (int64)."""
    return _aranges(_capacity(n))[:n]


def dense_batch(array: np.ndarray, layout: str = "") -> TensorListCPU:
    """Wraps an array with a leading batch dimension (no copy when contiguous)."""
    return TensorListCPU(np.ascontiguousarray(array), layout)


def contiguous(tl: Any) -> Any:
    """The batch itself when packed, else a packed copy (on the batch's device)."""
    if tl._is_packed_cached() and tl._buf.flags.c_contiguous:
        return tl
    if not isinstance(tl, TensorListCPU):  # device batches: one concatenation on the device
        return type(tl)([tl._sample_array(i) for i in range(len(tl))], tl._layout)
    out = empty_batch(tl._shapes, tl._buf.dtype, tl._layout, tl._source_info)
    for i in range(len(tl)):
        out._sample_array(i)[...] = tl._sample_array(i)
    return out


def same_layout_or_empty(layouts: list[str]) -> str:
    return layouts[0] if layouts and all(lay == layouts[0] for lay in layouts) else ""
