"""``decoders.inflate``: LZ4-compressed samples decompressed into tensors of a given shape and type.

A sample (1-D uint8) is one compressed chunk, or several (``chunk_offsets`` / ``chunk_sizes``),
each of which inflates to ``shape`` elements of ``dtype``; a sample of chunks comes out with the
chunks as its outer dimension (``sequence_axis_name`` before ``layout``). Every chunk must inflate
to exactly its shape's bytes. On the CPU (beyond DALI, which has only the GPU operator) the engine
decompresses every chunk of a batch in one call (``inflate_lz4``); on the GPU nvCOMP's batched LZ4
decompressor does, in one call on the pipeline's stream (``_cuda/_nvcomp.py``).
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._batch import contiguous
from .._operator import Operator, SampleError, sample_error_from_engine
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, to_numpy_type

INFLATE = OpSchema(
    "decoders.Inflate", "Decompresses LZ4-compressed samples (1-D uint8; one chunk, or several of the same shape) "
    "into tensors of the given shape and type.",
    args=[Arg("shape", ArgType.INT_LIST, tensor=True, doc="the shape of an inflated chunk"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.UINT8, doc="the inflated elements' type"),
          Arg("algorithm", ArgType.STR, "LZ4", doc="the compression: LZ4 (its block format)"),
          Arg("chunk_offsets", ArgType.INT_LIST, optional=True, tensor=True,
              doc="where the sample's chunks start (without chunk_sizes: each ends where the next starts)"),
          Arg("chunk_sizes", ArgType.INT_LIST, optional=True, tensor=True,
              doc="the sample's chunks' sizes (without chunk_offsets: packed from the sample's start)"),
          Arg("layout", ArgType.LAYOUT, "", doc="layout of an inflated chunk"),
          Arg("sequence_axis_name", ArgType.LAYOUT, "F", doc="the chunks' axis, before `layout`, in a sample of "
              "chunks (with a layout)"),
          Arg("check_output_size", ArgType.BOOL, False,
              doc="GPU: also check that the chunks' inflated sizes fit before decompressing (the CPU always "
                  "checks every chunk's size)")],
    devices=("cpu", "gpu"), moved_from=("experimental",))


def _lists(ws, name: str, n: int) -> list[np.ndarray] | None:
    """A list argument's values per sample (int64), or None when it is not given."""
    if name in ws.arg_inputs:
        tl = contiguous(ws.arg_inputs[name].as_cpu())
        return [np.asarray(tl._sample_array(i), np.int64).reshape(-1) for i in range(len(tl))]
    value = ws.op.args[name]
    return None if value is None else [np.asarray(value, np.int64).reshape(-1)] * n


@register(INFLATE, device=("cpu", "gpu"))
class Inflate(Operator):
    def setup(self) -> None:
        if self.args["algorithm"].upper() != "LZ4":
            raise ArgumentValueError(f"{self.label}: Unknown inflate algorithm: {self.args['algorithm']} (only LZ4)")
        layout, axis = self.args["layout"], self.args["sequence_axis_name"]
        if layout and len(axis) != 1:
            raise ArgumentValueError(f"{self.label}: sequence_axis_name must be one letter, got '{axis}'")

    def plan(self, ws, src) -> tuple:
        """Per chunk: (input start, input size, output start in bytes, output size in bytes), the
        output's per-sample shapes and layout, and each chunk's sample."""
        n = len(src)
        if src.dtype != DALIDataType.UINT8 or src.ndim() != 1:
            raise TypeError(f"{self.label}: the input must be 1-D uint8 (compressed bytes), got {src.ndim()}-D "
                            f"{src.dtype.name}")
        shapes = _lists(ws, "shape", n)
        ranks = {len(s) for s in shapes}
        if len(ranks) > 1 or any((s < 0).any() for s in shapes):
            raise ValueError(f"{self.label}: 'shape' must give every sample the same number of non-negative "
                             f"extents, got {[s.tolist() for s in shapes]}")
        offsets, sizes = _lists(ws, "chunk_offsets", n), _lists(ws, "chunk_sizes", n)
        lengths = src._shapes[:, 0]
        chunked = offsets is not None or sizes is not None
        starts, counts = [], []
        for i in range(n):
            start, size = self._chunks(i, int(lengths[i]), None if offsets is None else offsets[i],
                                       None if sizes is None else sizes[i])
            starts.append(start + int(src._offsets[i]))
            counts.append(size)
        per_sample = np.array([len(s) for s in starts], np.int64)
        item = np.dtype(to_numpy_type(self.args["dtype"])).itemsize
        chunk_elems = np.array([int(np.prod(s)) for s in shapes], np.int64)
        out_shapes = np.array([([int(c)] if chunked else []) + s.tolist() for c, s in zip(per_sample, shapes)],
                              np.int64).reshape(n, -1)
        dst_sizes = np.repeat(chunk_elems * item, per_sample)
        dst_starts = np.concatenate([[0], np.cumsum(dst_sizes)[:-1]]).astype(np.int64)
        layout = self.args["layout"]
        if layout and len(layout) != len(shapes[0]):
            raise ValueError(f"{self.label}: layout '{layout}' does not describe {len(shapes[0])}-D chunks")
        if layout and chunked:
            layout = self.args["sequence_axis_name"] + layout
        return (np.concatenate(starts).astype(np.int64) if n else np.zeros(0, np.int64),
                np.concatenate(counts).astype(np.int64) if n else np.zeros(0, np.int64),
                dst_starts, dst_sizes, out_shapes, layout, np.repeat(np.arange(n), per_sample))

    def _chunks(self, i: int, length: int, offsets: np.ndarray | None, sizes: np.ndarray | None):
        if offsets is None and sizes is None:
            return np.array([0]), np.array([length])
        if offsets is None:
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        elif sizes is None:
            sizes = np.diff(np.append(offsets, length))
        if len(offsets) != len(sizes):
            raise ValueError(f"{self.label}: sample {i}: {len(offsets)} chunk_offsets and {len(sizes)} chunk_sizes")
        if ((offsets < 0) | (sizes < 0) | (offsets + sizes > length)).any():
            raise ValueError(f"{self.label}: sample {i}: a chunk lies outside the sample's {length} bytes "
                             f"(offsets {offsets.tolist()}, sizes {sizes.tolist()})")
        return offsets, sizes

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        src_starts, src_sizes, dst_starts, dst_sizes, shapes, layout, sample_of = self.plan(ws, src)
        out = ws.new_batch(shapes, to_numpy_type(self.args["dtype"]), layout, src._source_info)
        try:
            if ws.gpu is not None:
                from .._cuda._nvcomp import decompress_lz4
                decompress_lz4(ws, src._buf, src_starts, src_sizes, out._buf, dst_starts, dst_sizes,
                               self.args["check_output_size"])
            else:
                _engine.inflate_lz4(ws.pool, src._buf, src_starts, src_sizes, out._buf.view(np.uint8), dst_starts,
                                    dst_sizes)
        except (_engine.SampleError, SampleError) as e:
            bad = sample_error_from_engine(e) or e
            chunk = bad.sample
            first = int(np.searchsorted(sample_of, sample_of[chunk]))
            raise SampleError(int(sample_of[chunk]), f"{self.label}: chunk {chunk - first}: {bad.args[0]}") from None
        return [out]
