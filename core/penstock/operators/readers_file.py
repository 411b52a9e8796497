"""``readers.file``: (encoded bytes, label) pairs from a directory tree, a file list or explicit files."""
from __future__ import annotations

import fnmatch
import os
import re

import numpy as np

from .. import _engine
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, FilesReader

_LABEL = re.compile(r"-?[0-9]+")
DEFAULT_FILTERS = ("*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm",
                   "*.pbm", "*.jp2", "*.webp", "*.flac", "*.ogg", "*.wav")

FILE_READER = OpSchema(
    "readers.File", "Reads files as raw bytes with integer labels.",
    args=[Arg("file_root", ArgType.STR, optional=True, doc="directory; each sub-directory is a class"),
          Arg("file_list", ArgType.STR, optional=True, doc="text file of 'path label' lines"),
          Arg("files", ArgType.STR_LIST, optional=True, doc="explicit list of paths"),
          Arg("labels", ArgType.INT_LIST, optional=True, doc="labels of `files` (default: 0..N-1)"),
          Arg("file_filters", ArgType.STR_LIST, DEFAULT_FILTERS, doc="glob patterns of files to take"),
          Arg("dir_filters", ArgType.STR_LIST, optional=True, doc="glob patterns of class directories"),
          Arg("case_sensitive_filter", ArgType.BOOL, False, doc="match filters case-sensitively"),
          *READER_ARGS],
    min_inputs=0, num_outputs=2, is_reader=True, is_random=True, legacy_names=("FileReader",))


def read_files(reader: FilesReader, ws, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The files ``paths`` of ``reader`` packed in one buffer, with their sizes: fetched from their
    object store (GETs started by ``prefetch``), or read from local disk by the engine's pool."""
    if reader.object_reads is not None:
        return reader.object_reads.read(paths)
    return _engine.read_files(ws.pool, paths)


def _matches(name: str, patterns, case_sensitive: bool) -> bool:
    if case_sensitive:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p.lower()) for p in patterns)


@register(FILE_READER)
class FileReaderCPU(FilesReader):
    shuffles_list = True
    _listed: tuple = (None, None)  # (self.paths, the engine's FileList of them)

    def scan(self) -> int:
        a = self.args
        root, file_list, files = a["file_root"], a["file_list"], a["files"]
        given = [x is not None for x in (file_list, files)]
        if sum(given) > 1:
            raise ValueError(f"{self.label}: give only one of 'file_list' and 'files'")
        if file_list is not None:
            base = root if root is not None else objects.dirname(file_list)
            names, labels = [], []
            for line_no, line in enumerate(objects.read_text(self.label, file_list, "file_list"), 1):
                parts = line.rsplit(None, 1)
                if not parts:
                    continue
                # labels are int32; a NUL would cut the path short when the file is opened
                if (len(parts) != 2 or not _LABEL.fullmatch(parts[1])
                        or not -2 ** 31 <= int(parts[1]) < 2 ** 31 or "\0" in parts[0]):
                    raise ValueError(f"{self.label}: line {line_no} of '{file_list}' is not "
                                     f"'path label' (label: a 32-bit integer): {line.strip()!r}")
                names.append(parts[0])
                labels.append(int(parts[1]))
            paths = [objects.join(base, n) for n in names]
        elif files is not None:
            names = list(files)
            paths = [objects.join(root, p) if root is not None else p for p in files]
            labels = list(a["labels"]) if a["labels"] is not None else list(range(len(paths)))
            if len(labels) != len(paths):
                raise ValueError(f"{self.label}: 'labels' has {len(labels)} entries, 'files' has {len(paths)}")
        elif root is not None and objects.is_url(root):
            names, labels = self._list_objects(root)
            paths = [objects.join(root, n) for n in names]
        elif root is not None:
            paths, labels = self._walk(root)
            names = [os.path.relpath(p, root) for p in paths]
        else:
            raise ValueError(f"{self.label}: one of 'file_root', 'file_list' or 'files' is required")
        if not paths:
            raise RuntimeError(f"{self.label}: No files found (file_root={root!r}, file_list={file_list!r})")
        self.paths = paths
        self.names = names  # source_info: the path as listed, relative to file_root (as DALI gives it)
        self.labels = np.asarray(labels, np.int32)
        self.fetch_remote()
        return len(paths)

    def _classes(self, names: list[str]) -> list[str]:
        """The classes among ``names`` (sorted), as dir_filters takes them."""
        a = self.args
        classes = sorted(names)
        if a["dir_filters"]:
            classes = [d for d in classes if _matches(d, a["dir_filters"], a["case_sensitive_filter"])]
        return classes

    def _discover(self, classes: dict[str, list[str]]) -> tuple[list[str], list[int]]:
        """Paths relative to file_root, and labels, of the files directly in each class folder
        (``classes``: folder -> the names of the files in it; DALI looks no deeper), as the
        filters take them, by class and then by name."""
        a = self.args
        names, labels = [], []
        for label, cls in enumerate(classes):
            found = sorted(f for f in classes[cls] if _matches(f, a["file_filters"], a["case_sensitive_filter"]))
            names += [f"{cls}/{f}" for f in found]
            labels += [label] * len(found)
        return names, labels

    def _list_objects(self, root: str) -> tuple[list[str], list[int]]:
        """Discovery under the URL ``root`` as DALI's readers do it in object stores: the objects
        directly in each folder under ``root`` and those directly under ``root`` (each its own
        class), sorted by key; a class's label is its rank among the classes with a sample, in
        the order of their first samples. One listing of the top level, then one of each folder,
        all at once."""
        a = self.args
        case = a["case_sensitive_filter"]
        folders = objects.list_folders(self.label, root, self._classes)
        top = [f for f in folders.pop("") if _matches(f, a["file_filters"], case)]
        names = sorted(self._classes(top) + [f"{c}/{f}" for c, found in folders.items() for f in found
                                             if _matches(f, a["file_filters"], case)])
        ranks: dict[str, int] = {}
        return names, [ranks.setdefault(n.split("/", 1)[0], len(ranks)) for n in names]

    def _walk(self, root: str) -> tuple[list[str], list[int]]:
        if not os.path.isdir(root):
            raise RuntimeError(f"{self.label}: file_root '{root}' is not a directory")
        classes = self._classes([d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))])
        names, labels = self._discover({c: [f for f in os.listdir(os.path.join(root, c))
                                            if os.path.isfile(os.path.join(root, c, f))] for c in classes})
        return [os.path.join(root, n) for n in names], labels

    def load(self, ws, indices: np.ndarray):
        return self._batch(indices, *read_files(self, ws, [self.paths[i] for i in indices]))

    def load_later(self, ws, indices: np.ndarray, background):
        if self.object_reads is not None:
            return None
        if self._listed[0] is not self.paths:  # the paths go to the engine once
            self._listed = (self.paths, _engine.FileList(self.paths))
        pending = _engine.read_files_later(background, ws.pool, self._listed[1], indices)
        return lambda: self._batch(indices, *pending.result())

    def _batch(self, indices: np.ndarray, buf: np.ndarray, sizes: np.ndarray) -> list:
        names = self.sources(indices)
        data = TensorListCPU._from_packed(buf, sizes.reshape(-1, 1), source_info=names)
        labels = TensorListCPU._from_packed(self.labels[indices].copy(), np.ones((len(indices), 1), np.int64),
                                            source_info=names)
        return [data, labels]
