"""``readers.webdataset``: samples of tar shards, one output per extension group.

A sample is the run of tar members sharing a key (the member path up to the first dot of its
file name); its components are told apart by extension (the rest of the name). ``ext`` lists one
group per output ("jpg;png": the first member with either extension). The shards are scanned
once at build (or their index files read); a batch is one native read of member byte ranges.
"""
from __future__ import annotations

import os
import tarfile

import numpy as np

from .. import _engine
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType, to_numpy_type
from . import _object_store as objects
from ._reader import READER_ARGS, Reader

WEBDATASET_READER = OpSchema(
    "readers.Webdataset", "Reads samples of WebDataset tar shards, one output per extension group.",
    args=[Arg("paths", ArgType.STR_LIST, doc="tar shards"),
          Arg("index_paths", ArgType.STR_LIST, (), doc="index files of the shards (optional)"),
          Arg("ext", ArgType.STR_LIST, doc="extension groups, one per output ('jpg;png')"),
          Arg("missing_component_behavior", ArgType.STR, "", doc="'empty' (default), 'skip' or 'error'"),
          Arg("dtypes", ArgType.ANY, optional=True, doc="type of each output (default UINT8: raw bytes)"),
          Arg("case_sensitive_extensions", ArgType.BOOL, True, doc="match extensions case-sensitively"),
          *READER_ARGS],
    min_inputs=0, num_outputs=lambda a: len(a.get("ext") or ()), is_reader=True, is_random=True)


def _split_name(member: str) -> tuple[str, str]:
    """(key, extension): the extension starts at the first dot of the file name."""
    directory, _, name = member.rpartition("/")
    stem, dot, ext = name.partition(".")
    return (directory + "/" + stem if directory else stem), (ext if dot else "")


def scan_tar(label: str, path: str) -> list[list[tuple[str, int, int]]]:
    """Samples of one shard in tar order: lists of (extension, data offset, size)."""
    samples: list[list[tuple[str, int, int]]] = []
    last_key = None
    try:
        # a shard in an object store is read through a buffer of large ranged GETs
        with objects.open_file(label, path) if objects.is_url(path) else open(path, "rb") as f, \
                tarfile.open(fileobj=f, mode="r:") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                key, ext = _split_name(m.name)
                if key != last_key:
                    samples.append([])
                    last_key = key
                samples[-1].append((ext, m.offset_data, m.size))
    except (OSError, tarfile.TarError) as e:
        raise RuntimeError(f"{label}: cannot read tar shard '{path}': {e}") from None
    except Exception as e:  # noqa: BLE001 - the object store client's errors
        raise RuntimeError(f"{label}: cannot read tar shard '{path}': {objects.describe_error(e)}") from None
    return samples


def read_wds_index(label: str, path: str) -> list[list[tuple[str, int, int]]]:
    """Samples listed by an index file: a 'v1.x N' header, then per sample groups of
    'ext offset size [name]' (name present from v1.2 on)."""
    lines = [line.split() for line in objects.read_text(label, path, "index file") if line.strip()]
    if not lines or not lines[0][0].startswith("v"):
        raise RuntimeError(f"{label}: index file '{path}' lacks its 'v1.x <samples>' header")
    width = 4 if lines[0][0] >= "v1.2" else 3
    samples = []
    for row in lines[1:]:
        if len(row) % width:
            raise RuntimeError(f"{label}: malformed line in index file '{path}': {' '.join(row)}")
        samples.append([(row[k], int(row[k + 1]), int(row[k + 2])) for k in range(0, len(row), width)])
    return samples


@register(WEBDATASET_READER)
class WebdatasetReaderCPU(Reader):
    def scan(self) -> int:
        a = self.args
        paths = list(a["paths"])
        index_paths = list(a["index_paths"])
        if index_paths and len(index_paths) != len(paths):
            raise ValueError(f"{self.label}: {len(paths)} shards but {len(index_paths)} index files")
        behaviour = a["missing_component_behavior"] or "empty"
        if behaviour not in ("empty", "skip", "error"):
            raise ValueError(f"{self.label}: missing_component_behavior must be 'empty', 'skip' or 'error', "
                             f"got '{behaviour}'")
        fold = (lambda s: s) if a["case_sensitive_extensions"] else str.lower
        groups = [[fold(e) for e in g.split(";") if e] for g in a["ext"]]
        if not groups or any(not g for g in groups):
            raise ValueError(f"{self.label}: 'ext' needs at least one non-empty extension group")
        dtypes = a["dtypes"]
        if dtypes is None:
            dtypes = [DALIDataType.UINT8] * len(groups)
        elif not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes] * len(groups)
        if len(dtypes) != len(groups):
            raise ValueError(f"{self.label}: {len(dtypes)} dtypes for {len(groups)} extension groups")
        self.dtypes = [np.dtype(to_numpy_type(DALIDataType(int(t)))) for t in dtypes]
        shard, offsets, sizes, names = [], [], [], []
        for k, path in enumerate(paths):
            samples = read_wds_index(self.label, index_paths[k]) if index_paths else scan_tar(self.label, path)
            for j, comps in enumerate(samples):
                row_off, row_size = [], []
                for g in groups:
                    hit = next(((o, s) for e, o, s in comps if fold(e) in g), None)
                    if hit is None:
                        if behaviour == "error":
                            raise RuntimeError(f"{self.label}: sample {j} of '{path}' has no component with "
                                               f"extension {'/'.join(g)}")
                        if behaviour == "skip":
                            break
                        hit = (0, 0)
                    row_off.append(hit[0])
                    row_size.append(hit[1])
                else:
                    shard.append(k)
                    offsets.append(row_off)
                    sizes.append(row_size)
                    names.append(f"{path}:{j}")
        self.shards = paths
        self._remote = objects.all_urls(self.label, "the files of 'paths'", paths)
        self.shard_of = np.asarray(shard, np.int64)
        self.offsets = np.asarray(offsets, np.int64).reshape(-1, len(groups))
        self.sizes = np.asarray(sizes, np.int64).reshape(-1, len(groups))
        self.names = names
        for g, dt in zip(range(len(groups)), self.dtypes):
            bad = np.nonzero(self.sizes[:, g] % dt.itemsize)[0]
            if bad.size:
                raise RuntimeError(f"{self.label}: component '{a['ext'][g]}' of sample {names[bad[0]]} has "
                                   f"{self.sizes[bad[0], g]} bytes, not a whole number of {dt.name} values")
        return len(names)

    def sources(self, indices) -> list[str]:
        return [self.names[i] for i in indices]

    def load(self, ws, indices: np.ndarray):
        info = self.sources(indices)
        if self._remote:  # every component of the batch at once: one request per shard, in merged ranges
            groups = len(self.dtypes)
            flat = objects.read_ranges(self.label, self.shards, np.tile(self.shard_of[indices], groups),
                                       self.offsets[indices].T.ravel(), self.sizes[indices].T.ravel(), len(indices))
            ends = np.cumsum(self.sizes[indices].sum(axis=0))
            parts = np.split(flat, ends[:-1])
        else:
            paths = [self.shards[k] for k in self.shard_of[indices]]
            parts = [_engine.read_file_ranges(ws.pool, paths, np.ascontiguousarray(self.offsets[indices, g]),
                                              np.ascontiguousarray(self.sizes[indices, g]))
                     for g in range(len(self.dtypes))]
        return [TensorListCPU._from_packed(buf.view(dt), (self.sizes[indices, g] // dt.itemsize).reshape(-1, 1),
                                           source_info=info)
                for g, (buf, dt) in enumerate(zip(parts, self.dtypes))]
