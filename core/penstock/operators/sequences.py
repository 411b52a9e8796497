"""Sequence helpers: ``element_extract`` (frames of F... samples as separate outputs) and
``per_frame`` (marks a batch as per-frame by its layout)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from .._batch import contiguous, empty_batch


def gather_ranges(ws, src, starts: np.ndarray, outs: list, counts: np.ndarray) -> None:
    """GPU: copies ``counts[k]`` elements of ``src`` from element ``starts[k]`` to sample
    ``k % N`` of output ``k // N`` (packed device batches), all in one launch."""
    es = src._buf.dtype.itemsize
    base = np.uint64(src._buf.data.ptr)
    src_addr = base + np.asarray(starts, np.uint64) * np.uint64(es)
    dst_addr = np.concatenate([np.uint64(o._buf.data.ptr) + np.asarray(o._offsets, np.uint64) * np.uint64(es)
                               for o in outs]) if outs else np.zeros(0, np.uint64)
    ws.kernels.gather_ranges(src_addr, dst_addr, counts, es)

def _element_count(args: dict) -> int:
    """element_extract's number of outputs; checked when the graph is built (no outputs: no operator)."""
    n = len(args.get("element_map") or ())
    if n == 0:
        raise ArgumentValueError("element_extract: 'element_map' must name at least one element")
    return n


ELEMENT_EXTRACT = OpSchema(
    "ElementExtract", "Extracts frames of sequences: one output per index of element_map, without the F axis.",
    args=[Arg("element_map", ArgType.INT_LIST, doc="frame indices to extract")],
    num_outputs=lambda a: _element_count(a), devices=("cpu", "gpu"))

PER_FRAME = OpSchema(
    "PerFrame", "Marks the outermost axis as frames (layout 'F...'), so sequence operators take the "
                "tensor as one argument value per frame. The data is not touched.",
    args=[Arg("replace", ArgType.BOOL, False, doc="replace the first layout letter by 'F' instead of "
                                                  "requiring it to be 'F'")],
    devices=("cpu", "gpu"))


@register(ELEMENT_EXTRACT, device=("cpu", "gpu"))
class ElementExtract(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.ndim() < 1:
            raise ValueError(f"{self.label}: the input must be sequences (at least 1-D)")
        layout = src._layout
        if layout and layout[0] != "F":
            raise ValueError(f"{self.label}: the input layout '{layout}' does not start with 'F'")
        frames = src._shapes[:, 0]
        inner = src._shapes[:, 1:]
        frame_vol = inner.prod(axis=1) if inner.shape[1] else np.ones(len(src), np.int64)
        outs = []
        for e in self.args["element_map"]:
            bad = np.nonzero((e < 0) | (e >= frames))[0]
            if bad.size:
                i = int(bad[0])
                raise SampleError(i, f"{self.label}: element {e} is out of range for a sequence of {frames[i]} frames")
        if ws.gpu is not None:  # every requested frame of every sample in one launch
            outs = [ws.new_batch(inner.copy(), src._buf.dtype, layout[1:], src._source_info)
                    for _ in self.args["element_map"]]
            starts = [src._offsets + e * frame_vol for e in self.args["element_map"]]
            gather_ranges(ws, src, np.concatenate(starts) if starts else np.zeros(0, np.int64), outs,
                          np.tile(frame_vol, len(outs)))
            return outs
        for e in self.args["element_map"]:  # one gather per requested frame, over the whole batch
            out = empty_batch(inner.copy(), src._buf.dtype, layout[1:], src._source_info)
            starts = src._offsets + e * frame_vol
            take = np.repeat(starts - (np.cumsum(frame_vol) - frame_vol), frame_vol) + np.arange(int(frame_vol.sum()))
            out._buf[:take.size] = src._buf[take]
            outs.append(out)
        return outs


@register(PER_FRAME, device=("cpu", "gpu"))
class PerFrame(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        nd = src.ndim()
        if nd < 1:
            raise ValueError(f"{self.label}: per-frame data needs at least one dimension (the frames)")
        layout = src._layout
        if not layout:
            layout = "F" + "*" * (nd - 1)
        elif layout[0] != "F":
            if not self.args["replace"]:
                raise ValueError(f"{self.label}: the input layout '{layout}' does not start with 'F' "
                                 "(use replace=True to mark its first axis as frames)")
            layout = "F" + layout[1:]
        return [type(src)._from_packed(src._buf, src._shapes, src._offsets, layout, src._source_info)]
