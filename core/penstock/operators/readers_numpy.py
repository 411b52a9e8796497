"""``readers.numpy``: arrays from .npy files, whole or a region of interest of each (on the GPU: read
into host memory and uploaded); ``decoders.numpy``: the arrays of in-memory .npy files.

Headers are parsed and windows are read by the native engine for the whole batch; Fortran-order
arrays come out in C order. The region of interest follows ``slice``'s argument rules (absolute
or relative start/end/shape over ``roi_axes``, relative values scaled by the extent and rounded).
"""
from __future__ import annotations

import fnmatch
import os

import numpy as np

from .. import _engine
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType, to_numpy_type
from .._batch import contiguous, empty_batch
from . import _object_store as objects
from ._reader import READER_ARGS, FilesReader
from .cast import cast_batch
from .crop import round_half_away

_ROI = ("roi_start", "rel_roi_start", "roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape")

NUMPY_READER = OpSchema(
    "readers.Numpy", "Reads arrays from .npy files (optionally a region of interest of each).",
    args=[Arg("file_root", ArgType.STR, optional=True, doc="directory searched (recursively) for file_filter"),
          Arg("file_filter", ArgType.STR, "*.npy", doc="glob pattern of the file names taken from file_root"),
          Arg("file_list", ArgType.STR, optional=True, doc="text file listing one path per line"),
          Arg("files", ArgType.STR_LIST, optional=True, doc="explicit list of paths"),
          *[Arg(name, ArgType.FLOAT_LIST if name.startswith("rel") else ArgType.INT_LIST, optional=True,
                tensor=True, doc="region of interest " + name.replace("rel_roi_", "relative ").replace("roi_", ""))
            for name in _ROI],
          Arg("roi_axes", ArgType.INT_LIST, (), doc="dims the ROI values refer to (default: all, in order)"),
          Arg("out_of_bounds_policy", ArgType.STR, "error", doc="'error', 'pad' or 'trim_to_shape'"),
          Arg("fill_value", ArgType.FLOAT, 0.0, doc="value of the padded part of an ROI"),
          Arg("use_o_direct", ArgType.BOOL, False, doc="performance hint: bypass the page cache (no effect)"),
          Arg("register_buffers", ArgType.BOOL, True,
              doc="GPUDirect Storage hint (no effect: the GPU reader reads into host memory and uploads)"),
          Arg("cache_header_information", ArgType.BOOL, False, doc="performance hint: keep parsed headers"),
          *READER_ARGS],
    min_inputs=0, num_outputs=1, is_reader=True, is_random=True, legacy_names=("NumpyReader",), devices=("cpu", "gpu"))

_CODES = {int(t): t for t in DALIDataType}


def list_files(label: str, file_root: str | None, file_list: str | None, files, pattern: str | None) -> list[str]:
    """The sample paths of a reader given file_root (+ glob pattern), a file list or explicit files,
    on local disk or in an object store (s3://..., listed there)."""
    if file_list is not None and files is not None:
        raise ValueError(f"{label}: give only one of 'file_list' and 'files'")
    if files is not None:
        paths = [objects.join(file_root, p) if file_root else p for p in files]
    elif file_list is not None:
        base = file_root if file_root is not None else objects.dirname(file_list)
        paths = [objects.join(base, line.strip()) for line in objects.read_text(label, file_list, "file_list")
                 if line.strip()]
    elif file_root is not None and objects.is_url(file_root):
        paths = [objects.join(file_root, k) for k in objects.list_all(label, file_root)
                 if fnmatch.fnmatchcase(k.rsplit("/", 1)[-1], pattern) or fnmatch.fnmatchcase(k, pattern)]
    elif file_root is not None:
        if not os.path.isdir(file_root):
            raise RuntimeError(f"{label}: file_root '{file_root}' is not a directory")
        paths = []
        for dirpath, dirnames, filenames in os.walk(file_root, followlinks=True):
            dirnames.sort()
            rel = os.path.relpath(dirpath, file_root)
            paths += [os.path.join(dirpath, f) for f in filenames
                      if fnmatch.fnmatchcase(f, pattern) or fnmatch.fnmatchcase(os.path.normpath(os.path.join(rel, f)), pattern)]
        paths.sort(key=lambda p: os.path.relpath(p, file_root))
    else:
        raise ValueError(f"{label}: one of 'file_root', 'file_list' or 'files' is required")
    if not paths:
        raise RuntimeError(f"{label}: No files found (file_root={file_root!r}, file_list={file_list!r})")
    return paths


@register(NUMPY_READER, device=("cpu", "gpu"))
class NumpyReader(FilesReader):
    shuffles_list = True  # random_shuffle shuffles the file list first, as DALI's numpy reader does
    def scan(self) -> int:
        a = self.args
        if a["out_of_bounds_policy"] not in ("error", "pad", "trim_to_shape"):
            raise ValueError(f"{self.label}: out_of_bounds_policy must be 'error', 'pad' or 'trim_to_shape', "
                             f"got '{a['out_of_bounds_policy']}'")
        self.paths = list_files(self.label, a["file_root"], a["file_list"], a["files"], a["file_filter"])
        self._headers: dict[str, tuple] = {}
        self.fetch_remote()
        # source_info: in object stores, as DALI gives it there, the key under file_root
        root = (a["file_root"] or "").rstrip("/") + "/"
        self.names = [p[len(root):] if self.object_reads is not None and p.startswith(root) else p for p in self.paths]
        return len(self.paths)

    def run(self, ws):
        """On the GPU: the host batch (read ahead into host memory) uploaded on the pipeline's stream."""
        outs = super().run(ws)
        return outs if ws.gpu is None else [ws.from_host(o) for o in outs]

    def _read_headers(self, ws, paths: list[str]) -> tuple:
        if not self.args["cache_header_information"]:
            return _engine.npy_headers(ws.pool, paths)
        missing = [p for p in dict.fromkeys(paths) if p not in self._headers]
        if missing:
            codes, sizes, fortran, offsets, ndims, shapes = _engine.npy_headers(ws.pool, missing)
            for k, p in enumerate(missing):
                self._headers[p] = (codes[k], sizes[k], fortran[k], offsets[k], ndims[k], shapes[k, :ndims[k]])
        rows = [self._headers[p] for p in paths]
        nd = max(int(r[4]) for r in rows)
        shapes = np.zeros((len(rows), nd), np.int64)
        for k, r in enumerate(rows):
            shapes[k, :len(r[5])] = r[5]
        return (np.array([r[0] for r in rows], np.int32), np.array([r[1] for r in rows], np.int64),
                np.array([r[2] for r in rows], np.uint8), np.array([r[3] for r in rows], np.int64),
                np.array([r[4] for r in rows], np.int64), shapes)

    def load(self, ws, indices: np.ndarray):
        paths = [self.paths[i] for i in indices]
        if self.object_reads is not None:
            buf, lengths = self.object_reads.read(paths)
            files = TensorListCPU._from_packed(buf, lengths.reshape(-1, 1), source_info=paths)
            headers = _engine.npy_buffer_headers(ws.pool, files._buf, files._shapes, files._offsets)
        else:
            headers = self._read_headers(ws, paths)
        codes, sizes, fortran, offsets, ndims, shapes = headers
        for name, values in (("dtype", codes), ("number of dimensions", ndims)):
            bad = np.nonzero(values != values[0])[0]
            if bad.size:
                i = int(bad[0])
                raise RuntimeError(f"{self.label}: all arrays of a batch must have the same {name}: "
                                   f"'{paths[0]}' and '{paths[i]}' differ")
        dtype = _CODES[int(codes[0])]
        anchors, out_shapes = self._roi(ws, shapes, paths)
        if self.object_reads is not None and (anchors.any() or not np.array_equal(out_shapes, shapes)):
            raise NotImplementedError(f"{self.label}: regions of interest of arrays in object stores are not "
                                      "implemented: read whole arrays and slice them")
        np_type = to_numpy_type(dtype)
        fill = np.array(self.args["fill_value"])
        if np.dtype(np_type).kind in "iub":
            info = np.iinfo(np_type) if np.dtype(np_type).kind != "b" else None
            fill = round_half_away(fill)
            if info is not None:
                fill = np.clip(fill, info.min, info.max)
        fill = np.ascontiguousarray(fill.astype(np_type).reshape(1)).view(np.uint8)
        out = empty_batch(out_shapes, np_type, source_info=self.sources(indices))
        if self.object_reads is not None:  # whole arrays (no region of interest)
            _engine.npy_decode(ws.pool, files._buf, files._shapes, files._offsets, np.ascontiguousarray(offsets),
                               np.ascontiguousarray(fortran), out._buf, out._shapes, out._offsets, int(sizes[0]))
        else:
            _engine.npy_read(ws.pool, paths, offsets, fortran, np.ascontiguousarray(shapes), anchors,
                             out._buf, out._shapes, out._offsets, int(sizes[0]), fill)
        return [out]

    def _roi(self, ws, shapes: np.ndarray, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Anchors and output shapes [N, ndim] of the region of interest of each array."""
        from .crop import per_sample_list
        n, nd = shapes.shape
        given = {name: per_sample_list(ws, name) for name in _ROI}
        anchors = np.zeros((n, nd), np.int64)
        if all(v is None for v in given.values()):
            return anchors, shapes.copy()
        axes = list(self.args["roi_axes"]) or list(range(nd))
        axes = [x + nd if x < 0 else x for x in axes]
        if any(x < 0 or x >= nd for x in axes):
            raise ValueError(f"{self.label}: roi_axes {list(self.args['roi_axes'])} out of range for {nd}-D arrays")
        if given["roi_start"] is not None and given["rel_roi_start"] is not None or \
                sum(given[x] is not None for x in ("roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape")) > 1:
            raise ValueError(f"{self.label}: give at most one of roi_start/rel_roi_start and one of "
                             "roi_end/rel_roi_end/roi_shape/rel_roi_shape")
        ext = shapes[:, axes].astype(np.float64)

        def values(name):
            v = given[name]
            if v.shape[1] != len(axes):
                raise ValueError(f"{self.label}: '{name}' has {v.shape[1]} values for {len(axes)} ROI axes")
            return v * ext if name.startswith("rel") else v

        start = np.zeros_like(ext)
        for name in ("roi_start", "rel_roi_start"):
            if given[name] is not None:
                start = values(name)
        end = ext.copy()
        for name in ("roi_end", "rel_roi_end"):
            if given[name] is not None:
                end = values(name)
        for name in ("roi_shape", "rel_roi_shape"):
            if given[name] is not None:
                end = start + values(name)
        lo, hi = round_half_away(start), round_half_away(end)
        if (hi < lo).any():
            i = int(np.nonzero((hi < lo).any(axis=1))[0][0])
            raise SampleError(i, f"{self.label}: the region of interest of '{paths[i]}' ends before it starts "
                                 f"({lo[i].tolist()}..{hi[i].tolist()})")
        anchors[:, axes] = lo
        out = shapes.copy()
        out[:, axes] = hi - lo
        policy = self.args["out_of_bounds_policy"]
        outside = ((anchors < 0) | (anchors + out > shapes)).any(axis=1)
        if policy == "error" and outside.any():
            i = int(np.nonzero(outside)[0][0])
            raise SampleError(i, f"{self.label}: the region of interest {anchors[i].tolist()} + {out[i].tolist()} "
                                 f"lies outside the array of shape {shapes[i].tolist()} in '{paths[i]}' "
                                 "(use out_of_bounds_policy='pad' or 'trim_to_shape')")
        if policy == "trim_to_shape":
            lo2, hi2 = np.clip(anchors, 0, shapes), np.clip(anchors + out, 0, shapes)
            anchors, out = lo2, np.maximum(hi2 - lo2, 0)
        return np.ascontiguousarray(anchors), np.ascontiguousarray(out)


NUMPY_DECODER = OpSchema(
    "decoders.Numpy",
    "Decodes in-memory .npy files (1-D uint8 samples) into their arrays (C order, whatever the file's order).",
    args=[Arg("dtype", ArgType.DTYPE, optional=True,
              doc="output type: the arrays are converted to it (default: their own, the same for the whole batch)")])


@register(NUMPY_DECODER)
class NumpyDecoder(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.dtype != DALIDataType.UINT8 or src.ndim() != 1:
            raise RuntimeError(f"{self.label}: expects 1-D uint8 samples (the bytes of .npy files), got "
                               f"{src.ndim()}-D {src.dtype.name}")
        codes, sizes, fortran, offsets, ndims, shapes = _engine.npy_buffer_headers(ws.pool, src._buf, src._shapes,
                                                                                  src._offsets)
        wanted = self.args["dtype"]
        if len(src) and (ndims != ndims[0]).any():
            raise RuntimeError(f"{self.label}: all arrays of a batch must have the same number of dimensions")
        if len(src) and (codes != codes[0]).any() and wanted is None:
            raise RuntimeError(f"{self.label}: all arrays of a batch must have the same data type (or give dtype)")
        shapes = np.ascontiguousarray(shapes, np.int64)
        if not len(src) or (codes == codes[0]).all():
            dtype = _CODES[int(codes[0])] if len(src) else DALIDataType.UINT8
            out = self._decode(ws, src, np.arange(len(src)), shapes, offsets, fortran, dtype, int(sizes[0]) if len(src)
                               else 1)
            return [out if wanted is None or wanted == dtype else cast_batch(ws, out, wanted)]
        # arrays of several types: each type's arrays decoded and converted together, then put in place
        out = empty_batch(shapes, to_numpy_type(wanted), source_info=src._source_info)
        for code in np.unique(codes):
            idx = np.flatnonzero(codes == code)
            part = cast_batch(ws, self._decode(ws, src, idx, shapes[idx], offsets[idx], fortran[idx], _CODES[int(code)],
                                               int(sizes[idx[0]])), wanted)
            vols = part._volumes()
            at = np.repeat(out._offsets[idx] - part._offsets, vols) + np.arange(int(vols.sum()))
            out._buf[at] = part._buf[:int(vols.sum())]
        return [out]

    def _decode(self, ws, src, idx: np.ndarray, shapes: np.ndarray, offsets: np.ndarray, fortran: np.ndarray, dtype,
                elem_size: int):
        """The arrays of samples ``idx`` of ``src`` (all of type ``dtype``) as a packed batch."""
        out = empty_batch(np.ascontiguousarray(shapes, np.int64), to_numpy_type(dtype),
                          source_info=src._source_info if len(idx) == len(src) else None)
        _engine.npy_decode(ws.pool, src._buf, np.ascontiguousarray(src._shapes[idx]),
                           np.ascontiguousarray(src._offsets[idx]), np.ascontiguousarray(offsets),
                           np.ascontiguousarray(fortran), out._buf, out._shapes, out._offsets, elem_size)
        return out
