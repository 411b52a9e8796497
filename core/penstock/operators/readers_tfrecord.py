"""``readers.tfrecord``: features of tf.train.Example records, located by index files.

Returns a dict of outputs keyed by feature name (``penstock.tfrecord`` declares them). Records
are read and parsed by the native engine for the whole batch; TensorFlow is not needed.
Numeric features come out as int64 / float32 arrays (a fixed-length feature reshaped to its
shape, ``()`` giving one value), strings as uint8 arrays of their bytes.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import _engine
from .._generate import OpsBase, call_op
from .._operator import SampleError
from .._registry import Arg, ArgType, OpSchema, register
from .. import tfrecord as tfrec
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, Reader

TFRECORD_READER = OpSchema(
    "readers.TFRecord", "Reads features of tf.train.Example records from TFRecord files (dict of outputs).",
    args=[Arg("path", ArgType.STR_LIST, doc="TFRecord files"),
          Arg("index_path", ArgType.STR_LIST, doc="index files, one per TFRecord file (see tfrecord2idx)"),
          Arg("features", ArgType.ANY, doc="dict: feature name -> tfrecord.FixedLenFeature / VarLenFeature"),
          Arg("use_o_direct", ArgType.BOOL, False, doc="performance hint: bypass the page cache (no effect)"),
          *READER_ARGS],
    min_inputs=0, num_outputs=lambda a: len(a.get("features") or {}), is_reader=True, is_random=True,
    legacy_names=("TFRecordReader",), aliases_hidden=False)

_KINDS = {tfrec.string: 0, tfrec.float32: 1, tfrec.int64: 2}
_NUMPY = {tfrec.string: np.uint8, tfrec.float32: np.float32, tfrec.int64: np.int64}


def _check_features(features: Any) -> dict:
    if not isinstance(features, dict) or not features:
        raise TypeError("readers.tfrecord: 'features' must be a non-empty dict of name -> tfrecord feature")
    for name, f in features.items():
        if not isinstance(f, tfrec.Feature):
            raise TypeError(f"readers.tfrecord: feature '{name}' must be tfrecord.FixedLenFeature or "
                            f"VarLenFeature, got {type(f).__name__}")
    return features


def read_index(label: str, index_path: str) -> np.ndarray:
    """[records, 2] int64 (offset, size) of one index file."""
    rows = [line.split() for line in objects.read_text(label, index_path, "index file") if line.strip()]
    try:
        table = np.array([(int(r[0]), int(r[1])) for r in rows], np.int64).reshape(-1, 2)
    except (ValueError, IndexError):
        raise RuntimeError(f"{label}: index file '{index_path}' is not 'offset size' lines") from None
    return table


@register(TFRECORD_READER)
class TFRecordReaderCPU(Reader):
    def scan(self) -> int:
        a = self.args
        self.features = _check_features(a["features"])
        paths, indexes = list(a["path"]), list(a["index_path"])
        if len(paths) != len(indexes):
            raise ValueError(f"{self.label}: {len(paths)} files in 'path' but {len(indexes)} in 'index_path'")
        tables = [read_index(self.label, p) for p in indexes]
        self.file_of = np.concatenate([np.full(len(t), k, np.int64) for k, t in enumerate(tables)])
        table = np.concatenate(tables) if tables else np.zeros((0, 2), np.int64)
        self.offsets, self.sizes = table[:, 0].copy(), table[:, 1].copy()
        self.files = paths
        self._remote = objects.all_urls(self.label, "the files of 'path'", paths)
        self.names = list(self.features)
        return len(table)

    def sources(self, indices) -> list[str]:
        indices = np.asarray(indices, np.int64)
        return [f"{self.files[k]} at offset {o}"
                for k, o in zip(self.file_of[indices], self.offsets[indices].tolist())]

    def load(self, ws, indices: np.ndarray):
        kinds = [_KINDS[self.features[n].dtype] for n in self.names]
        if self._remote:
            parsed = self._parse_fetched(ws, indices, kinds)
        else:
            paths = [self.files[k] for k in self.file_of[indices]]
            parsed = _engine.tfrecord_read(ws.pool, paths, self.offsets[indices], self.sizes[indices], self.names,
                                           kinds)
        info = self.sources(indices)
        return [self._output(name, self.features[name], values, counts, found, info)
                for name, (values, counts, found) in zip(self.names, parsed)]

    def _parse_fetched(self, ws, indices: np.ndarray, kinds: list[int]) -> list:
        """The records of a batch in object stores: fetched in merged ranges (one request per file),
        then checked and parsed by the engine's reader from an in-memory file."""
        sizes = self.sizes[indices]
        records = objects.read_ranges(self.label, self.files, self.file_of[indices], self.offsets[indices], sizes,
                                      len(indices))
        at = np.cumsum(sizes) - sizes
        fd = os.memfd_create("penstock-tfrecords", os.MFD_CLOEXEC)
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(memoryview(records))
            memory = f"/proc/self/fd/{fd}"
            try:
                return _engine.tfrecord_read(ws.pool, [memory] * len(indices), at, sizes, self.names, kinds)
            except _engine.SampleError as exc:  # named by its object and offset there, not the in-memory file's
                i = int(exc.args[1])
                url, offset = self.files[self.file_of[indices[i]]], int(self.offsets[indices[i]])
                raise SampleError(i, str(exc.args[0]).replace(memory, url).replace(f"offset {at[i]} ",
                                                                                  f"offset {offset} ")) from None
        finally:
            os.close(fd)

    def _output(self, name: str, feature: tfrec.Feature, values, counts, found, info) -> TensorListCPU:
        dtype = _NUMPY[feature.dtype]
        n = len(counts)
        if not found.all():  # missing features take the default value
            default = feature.default_value
            if feature.dtype == tfrec.string:
                fill = np.frombuffer(default.encode() if isinstance(default, str) else bytes(default), np.uint8)
            else:
                width = int(np.prod(feature.shape)) if feature.shape is not None else 1
                fill = np.full(width, default, dtype)
            starts = np.cumsum(counts) - counts
            pieces, new_counts = [], counts.copy()
            for i in range(n):
                pieces.append(values[starts[i]:starts[i] + counts[i]] if found[i] else fill)
                new_counts[i] = counts[i] if found[i] else len(fill)
            values, counts = np.concatenate(pieces).astype(dtype), new_counts
        if feature.shape is None or feature.dtype == tfrec.string:
            shapes = counts.reshape(-1, 1)
        else:
            shape = feature.shape or (1,)
            want = int(np.prod(shape))
            bad = np.nonzero(counts != want)[0]
            if bad.size:
                i = int(bad[0])
                raise SampleError(i, f"{self.label}: feature '{name}' of the record in {info[i]} has "
                                     f"{counts[i]} values; FixedLenFeature{tuple(shape)} needs {want}")
            shapes = np.tile(np.array(shape, np.int64), (n, 1))
        return TensorListCPU._from_packed(np.ascontiguousarray(values, dtype), shapes.astype(np.int64),
                                          source_info=info)


def _as_dict(outs: Any, kwargs: dict) -> dict:
    outs = outs if isinstance(outs, list) else [outs]
    return dict(zip(list(kwargs["features"]), outs))


def readers_tfrecord(*inputs: Any, **kwargs: Any) -> dict:
    """fn.readers.tfrecord: like DALI, a dict of outputs keyed by feature name."""
    _check_features(kwargs.get("features"))
    return _as_dict(call_op(TFRECORD_READER, inputs, kwargs), kwargs)


class TFRecord(OpsBase):
    """ops.readers.TFRecord: calling it gives the dict of outputs."""

    def __call__(self, *inputs: Any, **kwargs: Any) -> dict:
        merged = {**self._init_kwargs, **kwargs}
        _check_features(merged.get("features"))
        return _as_dict(call_op(self.schema, inputs, merged, default_device=self._device), merged)


TFRECORD_READER.fn_impl = readers_tfrecord
TFRECORD_READER.ops_impl = TFRecord
