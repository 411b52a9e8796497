"""``readers.caffe`` and ``readers.caffe2``: the records of Caffe and Caffe2 LMDB databases.

The databases are read through the ``lmdb`` library (``pip install penstock-data[lmdb]``): the scan
lists every database's keys (LMDB keeps them sorted: the reader's order), and a batch's records are
fetched in one ``getmulti`` call per database and parsed by one native call (``caffe_datums``,
``caffe2_protos``: Caffe's Datum and Caffe2's TensorProtos protobufs, no protobuf library needed).

A database may be a URL prefix in an object store (s3://, gs://, az://, http(s)://; its ``data.mdb``
under it). LMDB reads nothing but a memory-mapped local file, and its records are found by walking
its B-tree page by page, so a remote database is fetched whole, once per process, when the first
reader of it is built: into a temporary folder (under ``TMPDIR``) removed when its last reader
closes, in ranged GETs of 64 MiB. A database larger than the free space there is refused up front;
one read by many jobs or processes is better copied to local disk once.
"""
from __future__ import annotations

import atexit
import io
import operator
import os
import shutil
import tempfile
import threading
from typing import Any

import numpy as np

from .. import _engine
from .._operator import SampleError, sample_error_from_engine
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, Reader

_PATH = Arg("path", ArgType.STR_LIST, doc="the LMDB directories, read one after another")
_IMAGE = Arg("image_available", ArgType.BOOL, True, "the records hold an image (output first)")

CAFFE_READER = OpSchema(
    "readers.Caffe", "Reads (image, label) pairs from Caffe LMDB databases of caffe.Datum records: the image's "
    "bytes as stored (encoded, or raw CHW pixels) and the int32 label.",
    args=[_PATH, _IMAGE, Arg("label_available", ArgType.BOOL, True, "the records hold a label (output last)"),
          *READER_ARGS],
    min_inputs=0, num_outputs=lambda a: int(a.get("image_available", True)) + int(a.get("label_available", True)),
    is_reader=True, is_random=True, legacy_names=("CaffeReader",))

# label_type values (Caffe2's)
SINGLE_LABEL, MULTI_LABEL_SPARSE, MULTI_LABEL_DENSE, MULTI_LABEL_WEIGHTED_SPARSE, NO_LABEL = range(5)


def _caffe2_outputs(a: dict) -> int:
    return (int(a.get("image_available", True)) + int(a.get("label_type", SINGLE_LABEL) != NO_LABEL)
            + max(0, a.get("additional_inputs", 0) or 0) + int(a.get("bbox", False)))


CAFFE2_READER = OpSchema(
    "readers.Caffe2", "Reads samples from Caffe2 LMDB databases of caffe2.TensorProtos records: the image (encoded "
    "bytes, or raw HWC pixels), the label(s), additional tensors and a bounding box, as the arguments say.",
    args=[_PATH, _IMAGE,
          Arg("label_type", ArgType.INT, SINGLE_LABEL, "0 one label (INT32 or FLOAT), 1 sparse indices of active "
              "labels (int32 0/1 vector of num_labels), 2 dense labels (as stored), 3 sparse indices and their "
              "weights (float vector of num_labels), 4 no label", range=(0, 4)),
          Arg("num_labels", ArgType.INT, 1, "the number of classes (the length of sparse labels' vectors)",
              range=(1, None)),
          Arg("additional_inputs", ArgType.INT, 0, "tensors (FLOAT, INT32 or INT64) after the label, each an output",
              range=(0, None)),
          Arg("bbox", ArgType.BOOL, False, "a bounding box (4 INT32 values) ends the record, the last output"),
          *READER_ARGS],
    min_inputs=0, num_outputs=_caffe2_outputs, is_reader=True, is_random=True, legacy_names=("Caffe2Reader",))

# the element types caffe2_protos reports (readers_caffe.h's Caffe2Type)
_CAFFE2_TYPES = (np.uint8, np.int32, np.float32, np.int64)


def _lmdb() -> Any:
    try:
        import lmdb
    except ImportError:
        raise RuntimeError("readers.caffe and readers.caffe2 read LMDB databases through the 'lmdb' package: "
                           "pip install lmdb (or penstock-data[lmdb])") from None
    return lmdb


FETCH_CHUNK = 64 << 20  # bytes per ranged GET of a remote database


def fetch_database(label: str, url: str) -> str:
    """A temporary local folder holding a copy of the database under ``url`` (its data.mdb)."""
    remote = objects.open_file(label, objects.join(url, "data.mdb"), chunk=FETCH_CHUNK)
    size = remote.seek(0, io.SEEK_END)
    remote.seek(0)
    folder = tempfile.mkdtemp(prefix="penstock-lmdb-")
    atexit.register(shutil.rmtree, folder, True)  # a reader never closed leaves no copy behind either
    try:
        free = shutil.disk_usage(folder).free
        if size > free:
            raise RuntimeError(f"{label}: the database '{url}' ({size} bytes) does not fit in the {free} bytes free "
                               f"in '{os.path.dirname(folder)}' (LMDB reads local files: it is fetched there first; "
                               "set TMPDIR to a larger disk, or copy the database to local disk)")
        with remote, open(os.path.join(folder, "data.mdb"), "wb") as local:
            shutil.copyfileobj(remote, local, FETCH_CHUNK)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


class _Environments:
    """LMDB allows one open environment per database and process: readers of the same database (several
    pipelines) share it, and the last one to close closes it (and removes the copy of a remote one)."""

    def __init__(self) -> None:
        # reentrant: a pipeline collected while the lock is held closes its readers in the same thread
        self._lock = threading.RLock()
        self._open: dict[str, list] = {}   # real path or URL -> [environment, users, local copy of a URL or None]
        self._opening: dict[str, threading.Event] = {}  # keys being fetched and opened, set when done

    def acquire(self, label: str, path: str) -> tuple[str, Any]:
        lmdb = _lmdb()
        remote = objects.is_url(path)
        key = path if remote else os.path.realpath(path)
        while True:
            with self._lock:
                entry = self._open.get(key)
                if entry is not None:
                    entry[1] += 1
                    return key, entry[0]
                opening = self._opening.get(key)
                if opening is None:
                    opening = self._opening[key] = threading.Event()
                    break
            opening.wait()  # another reader opens it: share what it opened (or try again where it failed)
        # Fetched and opened without the lock: the fetch waits on object-store threads, where the garbage
        # collector may finalize another pipeline whose readers' release takes the lock.
        try:
            env, local = self._open_database(lmdb, label, path, remote)
            with self._lock:
                self._open[key] = [env, 1, local if remote else None]
        finally:
            with self._lock:
                del self._opening[key]
            opening.set()
        return key, env

    @staticmethod
    def _open_database(lmdb: Any, label: str, path: str, remote: bool) -> tuple[Any, str]:
        local = fetch_database(label, path) if remote else path
        if not os.path.isdir(local):
            why = "No such file or directory" if not os.path.exists(local) else "Not a directory"
            raise RuntimeError(f"{label}: LMDB Error: {why}, with file: {path} (a database is the directory "
                               "of its data.mdb)")
        try:
            return lmdb.open(local, readonly=True, lock=False, readahead=False, subdir=True, max_dbs=0), local
        except lmdb.Error as e:
            if remote:
                shutil.rmtree(local, ignore_errors=True)
            raise RuntimeError(f"{label}: LMDB Error: {e}, with file: {path}") from None

    def release(self, key: str) -> None:
        with self._lock:
            entry = self._open.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._open[key]
                    entry[0].close()
                    if entry[2] is not None:
                        shutil.rmtree(entry[2], ignore_errors=True)


_ENVIRONMENTS = _Environments()


class _LmdbReader(Reader):
    """A reader of the records of LMDB databases, in key order, one database after another."""

    def setup(self) -> None:
        self._envs: list[tuple[str, Any]] = []
        # The pipeline's finalizer may close this reader on another thread while the read-ahead thread
        # is inside a transaction, and closing an environment under a transaction crashes the process:
        # reads and the release take turns; a release asked for inside a read (the garbage collector
        # finalizing the pipeline on the reading thread) waits for the read's end.
        self._reading = threading.Lock()
        self._reading_thread: int | None = None
        self._release_after_read = False
        super().setup()

    def scan(self) -> int:
        paths = self.args["path"]
        if not paths:
            raise ArgumentValueError(f"{self.label}: argument 'path' names no LMDB database")
        self._release()
        keys, firsts = [], []
        for path in paths:
            key, env = _ENVIRONMENTS.acquire(self.label, path)
            self._envs.append((key, env))
            firsts.append(len(keys))
            with env.begin() as txn:
                keys += txn.cursor().iternext(keys=True, values=False)
        self.paths = list(paths)
        self.keys = keys
        self.db_of = np.repeat(np.arange(len(paths)), np.diff(np.append(firsts, len(keys))))
        return len(keys)

    def sources(self, indices) -> list[str]:
        # as DALI names them; a key that is not text shows its bytes escaped
        return [f"{self.paths[self.db_of[i]]} at key {self.keys[i].decode('utf-8', 'backslashreplace')}"
                for i in indices]

    def records(self, indices: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The batch's records back to back, with their starts and sizes: one getmulti per database."""
        with self._reading:
            if not self._envs:
                raise RuntimeError(f"{self.label}: the reader was closed")
            self._reading_thread = threading.get_ident()
            try:
                values = self._values(indices)
            finally:
                self._reading_thread = None
                if self._release_after_read:
                    self._release_environments()
        sizes = np.fromiter(map(len, values), np.int64, len(values))
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return b"".join(values), starts, sizes

    def _values(self, indices: np.ndarray) -> list[bytes]:
        dbs = self.db_of[indices]
        parts = []
        for db in np.unique(dbs):
            at = np.flatnonzero(dbs == db)
            wanted = operator.itemgetter(*indices[at])(self.keys)
            with self._envs[db][1].begin() as txn:
                found = txn.cursor().getmulti([wanted] if len(at) == 1 else wanted)
            if len(found) != len(at):
                raise RuntimeError(f"{self.label}: records of '{self.paths[db]}' went missing since the reader "
                                   "listed its keys (was the database changed?)")
            parts.append((at, list(map(operator.itemgetter(1), found))))
        if len(parts) == 1:
            return parts[0][1]
        values = [b""] * len(indices)  # a batch across databases: back in the batch's order
        for at, found in parts:
            for k, value in zip(at.tolist(), found):
                values[k] = value
        return values

    def parse(self, ws, indices: np.ndarray, parser: Any, *args: Any) -> tuple:
        blob, starts, sizes = self.records(indices)
        try:
            return parser(ws.pool, np.frombuffer(blob, np.uint8), starts, sizes, *args)
        except _engine.SampleError as e:
            bad = sample_error_from_engine(e)
            raise SampleError(bad.sample, self.parse_error(self.sources([indices[bad.sample]])[0], bad.args[0])) \
                from None

    def parse_error(self, source: str, why: str) -> str:
        raise NotImplementedError

    def _release(self) -> None:
        if self._reading_thread == threading.get_ident():
            self._release_after_read = True
            return
        with self._reading:
            self._release_environments()

    def _release_environments(self) -> None:
        for key, _env in self._envs:
            _ENVIRONMENTS.release(key)
        self._envs = []
        self._release_after_read = False

    def close(self) -> None:
        super().close()
        self._release()


@register(CAFFE_READER)
class CaffeReader(_LmdbReader):
    def parse_error(self, source: str, why: str) -> str:
        return f"{self.label}: Error while parsing Caffe file: {source} ({why})"

    def load(self, ws, indices: np.ndarray):
        images, image_sizes, labels, label_counts = self.parse(ws, indices, _engine.caffe_datums)
        outputs = []
        if self.args["image_available"]:
            outputs.append(TensorListCPU._from_packed(images, image_sizes.reshape(-1, 1),
                                                      source_info=self.sources(indices)))
        if self.args["label_available"]:
            outputs.append(TensorListCPU._from_packed(labels, label_counts.reshape(-1, 1)))
        return outputs


@register(CAFFE2_READER)
class Caffe2Reader(_LmdbReader):
    def parse_error(self, source: str, why: str) -> str:
        return f"{self.label}: bad Caffe2 record {source}: {why}"

    def load(self, ws, indices: np.ndarray):
        a = self.args
        packed = self.parse(ws, indices, _engine.caffe2_protos, a["image_available"], a["label_type"],
                            a["num_labels"], a["additional_inputs"], a["bbox"])
        info = self.sources(indices)
        outputs = []
        for k in range(0, len(packed), 4):
            data, shapes, ranks, types = packed[k:k + 4]
            first = self._uniform(ranks, "ranks", info, k // 4), self._uniform(types, "element types", info, k // 4)
            rank, dtype = int(first[0]), _CAFFE2_TYPES[int(first[1])]
            outputs.append(TensorListCPU._from_packed(data.view(dtype), np.ascontiguousarray(shapes[:, :rank]),
                                                      source_info=info if k == 0 else None))
        return outputs

    def _uniform(self, values: np.ndarray, what: str, info: list[str], output: int) -> Any:
        """The value every sample of a batch has (an output's samples share their rank and type)."""
        odd = np.flatnonzero(values != values[0])
        if len(odd):
            raise SampleError(int(odd[0]), f"{self.label}: output {output} of {info[odd[0]]} differs in its "
                                           f"{what} from {info[0]} in the same batch")
        return values[0]
