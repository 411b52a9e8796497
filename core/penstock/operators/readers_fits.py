"""``experimental.readers.fits``: image HDUs of FITS files, through astropy's FITS reader.

Files are listed as readers.numpy lists them (file_root with file_filter, file_list, files). A
sample's outputs are the images of the HDUs ``hdu_indices`` names (numbered from 1, the primary HDU;
by default 2, the first extension), as astropy gives them: C order (NAXISn ... NAXIS1), native byte
order, scaled by BZERO/BSCALE where the header asks, tile-compressed images (RICE, GZIP, HCOMPRESS,
PLIO) decompressed. Each output has the type ``dtypes`` declares for it (UINT8 by default), and an
image of another type is an error of its sample. On the GPU the batch is read on the host and
uploaded. The files may be in object stores (s3://, gs://, az://, http(s)://: file_root a URL prefix
listed as readers.numpy lists it, or URLs in files/file_list): a batch's files are fetched whole,
with their GETs started as the batch is drawn, and astropy reads them from memory.
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from .._operator import SampleError
from .._registry import Arg, ArgType, ArgumentTypeError, ArgumentValueError, OpSchema, register
from .._batch import empty_batch
from ..types import DALIDataType, to_dali_type, to_numpy_type
from ._reader import READER_ARGS, FilesReader
from .readers_numpy import list_files

FITS_READER = OpSchema(
    "experimental.readers.Fits", "Reads image HDUs of FITS files (one output per HDU index) from a directory, "
    "a file list or explicit files.",
    args=[Arg("file_root", ArgType.STR, optional=True, doc="directory searched (recursively) for file_filter"),
          Arg("file_filter", ArgType.STR, "*.fits", doc="glob pattern of the file names taken from file_root"),
          Arg("file_list", ArgType.STR, optional=True, doc="text file listing one path per line"),
          Arg("files", ArgType.STR_LIST, optional=True, doc="explicit list of paths"),
          Arg("hdu_indices", ArgType.INT_LIST, (2,), doc="the HDUs read, numbered from 1 (the primary HDU); one "
              "output each"),
          Arg("dtypes", ArgType.ANY, optional=True, doc="the outputs' types, one per HDU index (default: UINT8)"),
          *READER_ARGS],
    min_inputs=0, num_outputs=lambda a: len(a.get("hdu_indices") or (2,)), is_reader=True, is_random=True,
    devices=("cpu", "gpu"))


def _astropy_fits() -> Any:
    try:
        from astropy.io import fits
    except ImportError:
        raise RuntimeError("experimental.readers.fits reads FITS files through astropy: pip install astropy "
                           "(or penstock-data[fits])") from None
    return fits


@register(FITS_READER, device=("cpu", "gpu"))
class FitsReader(FilesReader):
    def setup(self) -> None:
        a = self.args
        if not a["hdu_indices"] or any(i < 1 for i in a["hdu_indices"]):
            raise ArgumentValueError(f"{self.label}: hdu_indices must be HDU numbers from 1 (the primary HDU), got "
                                     f"{list(a['hdu_indices'])}")
        dtypes = a["dtypes"]
        if dtypes is None:
            self.dtypes = [DALIDataType.UINT8] * len(a["hdu_indices"])
        else:
            try:
                self.dtypes = [to_dali_type(t) for t in (dtypes if isinstance(dtypes, (list, tuple)) else [dtypes])]
            except (TypeError, ValueError, KeyError):
                raise ArgumentTypeError(f"{self.label}: dtypes must be a list of types, got {dtypes!r}") from None
            if len(self.dtypes) != len(a["hdu_indices"]):
                raise ArgumentValueError(f"{self.label}: give one of dtypes per HDU index ({len(self.dtypes)} dtypes, "
                                         f"{len(a['hdu_indices'])} HDU indices)")
        _astropy_fits()
        super().setup()

    def scan(self) -> int:
        a = self.args
        self.paths = self.names = list_files(self.label, a["file_root"], a["file_list"], a["files"],
                                             a["file_filter"])
        self.fetch_remote()
        return len(self.paths)

    def run(self, ws):
        """On the GPU: the host batch (read ahead into host memory) uploaded on the pipeline's stream."""
        outs = super().run(ws)
        return outs if ws.gpu is None else [ws.from_host(o) for o in outs]

    def load(self, ws, indices: np.ndarray):
        hdus = self.args["hdu_indices"]
        paths = [self.paths[i] for i in indices]
        if self.object_reads is None:
            sources = paths
        else:  # the fetched files, each as an in-memory file
            buf, sizes = self.object_reads.read(paths)
            ends = np.cumsum(sizes)
            sources = [io.BytesIO(buf[e - s:e]) for s, e in zip(sizes.tolist(), ends.tolist())]
        images = [self._images(k, path, source, hdus) for k, (path, source) in enumerate(zip(paths, sources))]
        outputs = []
        for out, dtype in enumerate(self.dtypes):
            samples = [sample[out] for sample in images]
            ranks = {s.ndim for s in samples}
            if len(ranks) > 1:
                raise RuntimeError(f"{self.label}: the images of HDU {hdus[out]} differ in their number of "
                                   f"dimensions within a batch ({sorted(ranks)})")
            shapes = np.array([s.shape for s in samples], np.int64).reshape(len(samples), -1)
            batch = empty_batch(shapes, to_numpy_type(dtype), "", paths)
            if len(samples):
                np.concatenate([s.reshape(-1) for s in samples], out=batch._buf[:int(shapes.prod(axis=1).sum())])
            outputs.append(batch)
        return outputs

    def _images(self, sample: int, path: str, source: Any, hdus) -> list[np.ndarray]:
        """The images of ``path``'s HDUs ``hdus`` (read from ``source``: the path, or the file's bytes
        as a file object), each of its output's type, native-endian."""
        fits = _astropy_fits()
        try:
            with fits.open(source, memmap=False, lazy_load_hdus=True) as hdul:
                out = []
                for k, index in enumerate(hdus):
                    try:
                        hdu = hdul[index - 1]
                    except IndexError:
                        raise SampleError(sample, f"{self.label}: '{path}' has {len(hdul)} HDUs; hdu_indices asks "
                                                  f"for HDU {index}") from None
                    data = hdu.data if hdu.is_image else None
                    if data is None or data.ndim == 0:
                        raise SampleError(sample, f"{self.label}: HDU {index} of '{path}' holds no image (NAXIS "
                                                  "must be greater than 0)")
                    want = np.dtype(to_numpy_type(self.dtypes[k]))
                    if data.dtype.newbyteorder("=") != want:
                        raise SampleError(sample, f"{self.label}: HDU {index} of '{path}' holds {data.dtype.name} "
                                                  f"data, its output is declared {self.dtypes[k].name} (dtypes)")
                    out.append(np.ascontiguousarray(data, want))
                return out
        except OSError as e:
            raise SampleError(sample, f"{self.label}: cannot read '{path}' as a FITS file: {e}") from None
