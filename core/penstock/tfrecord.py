"""TFRecord feature specifications for ``fn.readers.tfrecord`` and the index files it needs.

    import penstock.tfrecord as tfrec
    features = {"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)}

Index files list each record as ``offset size`` (bytes) per line, as DALI's ``tfrecord2idx``
writes them; make them with :func:`make_index` or ``python -m penstock.tfrecord2idx IN OUT``.
Nothing here needs TensorFlow.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import numpy as np

from . import _engine

int64 = "int64"
float32 = "float32"
string = "string"
_TYPES = (int64, float32, string)


@dataclasses.dataclass(frozen=True)
class Feature:
    """A feature to read: its value type, fixed shape (None for variable length) and default."""
    dtype: str
    shape: tuple[int, ...] | None
    default_value: Any

    def __post_init__(self) -> None:
        if self.dtype not in _TYPES:
            raise TypeError(f"tfrecord feature type must be tfrecord.int64, float32 or string, got {self.dtype!r}")


def FixedLenFeature(shape: Sequence[int], dtype: str, default_value: Any) -> Feature:  # noqa: N802 (DALI's name)
    """A feature with a fixed number of values, reshaped to ``shape`` (a missing one is filled
    with ``default_value``)."""
    return Feature(dtype, tuple(int(s) for s in shape), default_value)


def VarLenFeature(dtype: str, default_value: Any) -> Feature:  # noqa: N802 (DALI's name)
    """A feature with any number of values, given as a 1-D array (``default_value`` when missing)."""
    return Feature(dtype, None, default_value)


def make_index(tfrecord_path: str, index_path: str) -> int:
    """Writes the index of a TFRecord file; returns the number of records. Each record's length is
    checked against its CRC before it is trusted: a damaged length field, or a file cut short,
    raises RuntimeError naming the file and the record's offset."""
    offsets, sizes = _engine.tfrecord_index(os.fspath(tfrecord_path))
    with open(index_path, "w") as out:
        out.writelines(f"{o} {s}\n" for o, s in zip(np.asarray(offsets).tolist(), np.asarray(sizes).tolist()))
    return len(offsets)
