"""``io.file.read``: the bytes of the files whose paths the input holds (a path per sample, its UTF-8
bytes as a 1-D int8 or uint8 array: ``np.frombuffer(path.encode(), np.int8)``)."""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType

READ = OpSchema(
    "io.file.Read", "Reads whole files; each input sample is a file path encoded as a 1-D int8/uint8 array.",
    args=[Arg("dont_use_mmap", ArgType.BOOL, False, "read with plain file I/O rather than mapping the file "
              "(penstock always reads with plain I/O, which is as fast for whole files)"),
          Arg("use_o_direct", ArgType.BOOL, False, "bypass the page cache (penstock reads through the cache)")])


@register(READ)
class FileRead(Operator):
    def run(self, ws):
        paths = ws.inputs[0]
        if paths.dtype not in (DALIDataType.INT8, DALIDataType.UINT8):
            raise TypeError(f"io.file.read ('{self.name}'): Unexpected input data type {paths.dtype.name}: a path "
                            "is a 1-D int8 or uint8 array of its UTF-8 bytes")
        if paths.ndim() != 1:
            raise ValueError(f"io.file.read ('{self.name}'): a path is a 1-D array of its UTF-8 bytes, got "
                             f"{paths.ndim()}-D samples")
        names = [np.asarray(paths.at(i)).tobytes().decode("utf-8", "surrogateescape") for i in range(len(paths))]
        buf, sizes = _engine.read_files(ws.pool, names)
        return [TensorListCPU._from_packed(buf, sizes.reshape(-1, 1))]
