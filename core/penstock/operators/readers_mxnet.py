"""``readers.mxnet``: images and labels from MXNet RecordIO files (.rec with their .idx indexes).

The index gives each record's offset; a record ends where the next one in its file starts (the last
at the end of the file). A batch's records are read as byte ranges and parsed by one native call
each (``read_file_ranges``, ``recordio_records``). The files and their indexes may be URLs of object
stores (s3://, gs://, az://, http(s)://): a batch's records are then fetched in ranges, those of one
file merged into few large GETs (``read_ranges``), all files' at once.
"""
from __future__ import annotations

import io
import os

import numpy as np

from .. import _engine
from .._operator import SampleError, sample_error_from_engine
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, Reader

MXNET_READER = OpSchema(
    "readers.MXNet", "Reads images (their encoded bytes) and labels from MXNet RecordIO files.",
    args=[Arg("path", ArgType.STR_LIST, doc="the .rec files"),
          Arg("index_path", ArgType.STR_LIST, doc="their .idx files (one per .rec, lines 'key<tab>offset')"),
          *READER_ARGS],
    min_inputs=0, num_outputs=2, is_reader=True, is_random=True, legacy_names=("MXNetReader",),
    fn_name="readers.mxnet")


def read_index(label: str, rec: str, idx: str) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, sizes) of the records of ``rec`` in the order its index lists them."""
    rows = [line.split() for line in objects.read_text(label, idx, "index file") if line.strip()]
    try:
        if objects.is_url(rec):
            with objects.open_file(label, rec) as f:  # its size: one HEAD request
                file_size = f.seek(0, io.SEEK_END)
        else:
            file_size = os.path.getsize(rec)
    except OSError as e:
        raise RuntimeError(f"{label}: cannot read '{idx}' or '{rec}': {e}") from None
    try:
        offsets = np.array([int(r[1]) for r in rows], np.int64)
    except (IndexError, ValueError):
        raise RuntimeError(f"{label}: '{idx}' is not an index of 'key<tab>offset' lines") from None
    if len(offsets) and (offsets.min() < 0 or offsets.max() >= file_size):
        raise RuntimeError(f"{label}: '{idx}' points outside '{rec}'")
    ends = np.append(np.unique(offsets), file_size)
    sizes = ends[np.searchsorted(ends, offsets, side="right")] - offsets
    return offsets, sizes


@register(MXNET_READER)
class MXNetReader(Reader):

    def scan(self) -> int:
        paths, indexes = self.args["path"], self.args["index_path"]
        if len(paths) != len(indexes):
            raise ValueError(f"{self.label}: give one index_path per path ({len(paths)} paths, {len(indexes)} indexes)")
        self._remote = objects.all_urls(self.label, "the files of 'path'", paths)
        files, offsets, sizes = [], [], []
        for rec, idx in zip(paths, indexes):
            o, s = read_index(self.label, rec, idx)
            files += [rec] * len(o)
            offsets.append(o)
            sizes.append(s)
        self.files = files
        self.rec_files = list(paths)
        self.file_of = np.repeat(np.arange(len(paths)), [len(o) for o in offsets])
        self.offsets = np.concatenate(offsets) if offsets else np.zeros(0, np.int64)
        self.sizes = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
        return len(files)

    def sources(self, indices) -> list[str]:
        return [f"{self.files[i]} at index {self.offsets[i]}" for i in indices]

    def load(self, ws, indices: np.ndarray):
        sizes = np.ascontiguousarray(self.sizes[indices])
        if self._remote:
            ranges = objects.read_ranges(self.label, self.rec_files, self.file_of[indices], self.offsets[indices],
                                         sizes, len(indices))
        else:
            ranges = _engine.read_file_ranges(ws.pool, [self.files[i] for i in indices],
                                              np.ascontiguousarray(self.offsets[indices]), sizes)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        info = self.sources(indices)
        try:
            images, image_sizes, labels, label_counts = _engine.recordio_records(ws.pool, ranges, starts, sizes)
        except _engine.SampleError as e:
            bad = sample_error_from_engine(e)
            raise SampleError(bad.sample, f"{self.label}: {bad.args[0]} (record {info[bad.sample]})") from None
        return [TensorListCPU._from_packed(images, image_sizes.reshape(-1, 1), source_info=info),
                TensorListCPU._from_packed(labels, label_counts.reshape(-1, 1), source_info=info)]
