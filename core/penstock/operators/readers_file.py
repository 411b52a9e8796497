"""``readers.file``: (encoded bytes, label) pairs from a directory tree, a file list or explicit files."""
from __future__ import annotations

import fnmatch
import io
import os
import posixpath
import re

import numpy as np

from .. import _engine
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, Reader

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


def _matches(name: str, patterns, case_sensitive: bool) -> bool:
    if case_sensitive:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p.lower()) for p in patterns)


@register(FILE_READER)
class FileReaderCPU(Reader):
    shuffles_list = True

    def scan(self) -> int:
        a = self.args
        root, file_list, files = a["file_root"], a["file_list"], a["files"]
        given = [x is not None for x in (file_list, files)]
        if sum(given) > 1:
            raise ValueError(f"{self.label}: give only one of 'file_list' and 'files'")
        if file_list is not None:
            base = root if root is not None else objects.dirname(file_list)
            names, labels = [], []
            for line_no, line in enumerate(self._list_lines(file_list), 1):
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
        remote = sum(map(objects.is_url, paths))
        if 0 < remote < len(paths):
            raise ValueError(f"{self.label}: the files listed mix URLs and local paths; give one kind")
        self._objects = objects.ObjectReads(self.label) if remote else None
        return len(paths)

    def _list_lines(self, file_list: str) -> list[str]:
        try:
            if objects.is_url(file_list):
                return list(io.StringIO(objects.read_object(self.label, file_list).decode("utf-8"), newline=None))
            with open(file_list, encoding="utf-8") as f:
                return list(f)
        except UnicodeDecodeError as e:
            raise ValueError(f"{self.label}: file_list '{file_list}' is not UTF-8 text: {e}") from None
        except OSError as e:
            raise RuntimeError(f"{self.label}: cannot read file_list '{file_list}': {e}") from None

    def _classes(self, names: list[str]) -> list[str]:
        """The class folders among ``names`` (sorted), as dir_filters takes them."""
        a = self.args
        classes = sorted(names)
        if a["dir_filters"]:
            classes = [d for d in classes if _matches(d, a["dir_filters"], a["case_sensitive_filter"])]
        return classes

    def _list_objects(self, root: str) -> tuple[list[str], list[int]]:
        """``_walk`` over an object store: the objects of each class folder under the URL ``root``,
        relative to it, in the order a local folder gives them."""
        a = self.args
        folders = objects.list_folders(self.label, root)
        names, labels = [], []
        for label, cls in enumerate(self._classes(list(folders))):
            found = sorted(k for k in folders[cls]
                           if _matches(posixpath.basename(k), a["file_filters"], a["case_sensitive_filter"]))
            names += found
            labels += [label] * len(found)
        return names, labels

    def _walk(self, root: str) -> tuple[list[str], list[int]]:
        a = self.args
        if not os.path.isdir(root):
            raise RuntimeError(f"{self.label}: file_root '{root}' is not a directory")
        paths, labels = [], []
        for label, cls in enumerate(self._classes([d for d in os.listdir(root)
                                                   if os.path.isdir(os.path.join(root, d))])):
            found = []
            for dirpath, dirnames, filenames in os.walk(os.path.join(root, cls), followlinks=True):
                dirnames.sort()
                found += [os.path.join(dirpath, f) for f in filenames
                          if _matches(f, a["file_filters"], a["case_sensitive_filter"])]
            found.sort()
            paths += found
            labels += [label] * len(found)
        return paths, labels

    def sources(self, indices) -> list[str]:
        return [self.names[i] for i in indices]

    def prefetch(self, indices: np.ndarray) -> None:
        if self._objects is not None:
            self._objects.prefetch([self.paths[i] for i in indices])

    def close(self) -> None:
        super().close()
        if getattr(self, "_objects", None) is not None:
            self._objects.close()

    def load(self, ws, indices: np.ndarray):
        paths = [self.paths[i] for i in indices]
        names = self.sources(indices)
        if self._objects is not None:
            buf, sizes = self._objects.read(paths)
        else:
            buf, sizes = _engine.read_files(ws.pool, paths)
        shapes = sizes.reshape(-1, 1)
        data = TensorListCPU._from_packed(buf, shapes, source_info=names)
        labels = TensorListCPU._from_packed(self.labels[indices].copy(), np.ones((len(indices), 1), np.int64),
                                            source_info=names)
        return [data, labels]
