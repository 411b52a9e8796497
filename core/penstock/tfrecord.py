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
import struct
from typing import Any, Sequence

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
    """Writes the index of a TFRecord file; returns the number of records."""
    count = 0
    with open(tfrecord_path, "rb") as f, open(index_path, "w") as out:
        offset = 0
        while True:
            head = f.read(12)
            if not head:
                break
            if len(head) < 12:
                raise RuntimeError(f"'{tfrecord_path}' ends inside a record header at offset {offset}")
            (length,) = struct.unpack("<Q", head[:8])
            f.seek(length + 4, 1)
            size = 12 + length + 4
            if f.tell() != offset + size or offset + size > _size(f):
                raise RuntimeError(f"'{tfrecord_path}' ends inside the record at offset {offset}")
            out.write(f"{offset} {size}\n")
            offset += size
            count += 1
    return count


def _size(f) -> int:
    here = f.tell()
    f.seek(0, 2)
    end = f.tell()
    f.seek(here)
    return end
