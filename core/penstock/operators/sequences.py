"""Sequence helpers: ``element_extract`` (frames of F... samples as separate outputs),
``sequence_rearrange`` (frames reordered, repeated or dropped) and ``per_frame`` (marks a batch
as per-frame by its layout)."""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from .._batch import contiguous, empty_batch


def gather_ranges(ws, src, starts: np.ndarray, outs: list, counts: np.ndarray, dst_elements: np.ndarray | None = None,
                  dst=None) -> None:
    """GPU: copies ``counts[k]`` elements of ``src`` from element ``starts[k]`` to sample
    ``k % N`` of output ``k // N`` (packed device batches), or with ``dst_elements``, to element
    ``dst_elements[k]`` of ``dst``; all in one launch."""
    es = src._buf.dtype.itemsize
    base = np.uint64(src._buf.data.ptr)
    src_addr = base + np.asarray(starts, np.uint64) * np.uint64(es)
    if dst_elements is not None:
        dst_addr = np.uint64(dst._buf.data.ptr) + np.asarray(dst_elements, np.uint64) * np.uint64(es)
    else:
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

SEQUENCE_REARRANGE = OpSchema(
    "SequenceRearrange", "Reorders the frames of sequences: output frame i is input frame new_order[i] "
                         "(frames may repeat or be dropped).",
    args=[Arg("new_order", ArgType.INT_LIST, tensor=True,
              doc="the input frame of each output frame, in [0, frames); not empty; per sample as a 1-D tensor")],
    devices=("cpu", "gpu"))

PER_FRAME = OpSchema(
    "PerFrame", "Marks the outermost axis as frames (layout 'F...'), so sequence operators take the "
                "tensor as one argument value per frame. The data is not touched.",
    args=[Arg("replace", ArgType.BOOL, False, doc="replace the first layout letter by 'F' instead of "
                                                  "requiring it to be 'F'")],
    devices=("cpu", "gpu"))


def _sequences(op: Operator, src, refusal: str) -> tuple[str, np.ndarray, np.ndarray]:
    """The layout, frame counts and frame volumes of a batch of sequences (``F...`` samples);
    ``refusal`` (formatted with the layout) says why a layout not starting with F is refused."""
    if src.ndim() < 1:
        raise ArgumentValueError(f"{op.label}: the input must be sequences (at least 1-D)")
    layout = src._layout
    if layout and layout[0] != "F":
        raise ArgumentValueError(f"{op.label}: " + refusal.format(layout=layout))
    inner = src._shapes[:, 1:]
    return layout, src._shapes[:, 0], (inner.prod(axis=1) if inner.shape[1] else np.ones(len(src), np.int64))


@register(ELEMENT_EXTRACT, device=("cpu", "gpu"))
class ElementExtract(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.ndim() < 2:
            raise ArgumentValueError(f"{self.label}: Input must have at least two dimensions - outermost for "
                                     "sequence and at least one for data elements.")
        layout, frames, frame_vol = _sequences(self, src, "Input layout must describe a sequence - it must start "
                                                          "with 'F', got '{layout}' instead.")
        inner = src._shapes[:, 1:]
        outs = []
        for e in self.args["element_map"]:
            if e < 0:
                raise ArgumentValueError(f"{self.label}: Negative indices in `element_map` are not allowed, "
                                         f"found: {e}.")
            bad = np.nonzero(e >= frames)[0]
            if bad.size:
                i = int(bad[0])
                raise SampleError(i, f"{self.label}: Index `{e}` from `element_map` is out of bounds for sample "
                                     f"with sequence length equal `{frames[i]}`.")
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


@register(SEQUENCE_REARRANGE, device=("cpu", "gpu"))
class SequenceRearrange(Operator):
    def _orders(self, ws) -> list[np.ndarray]:
        if "new_order" in ws.arg_inputs:
            tl = ws.arg_inputs["new_order"]
            if len(tl) != ws.batch_size:
                raise RuntimeError(f"{self.label}: argument input 'new_order' has {len(tl)} samples, the batch "
                                   f"has {ws.batch_size}")
            orders = []
            for i in range(len(tl)):
                order = np.asarray(tl[i])
                if order.ndim != 1:
                    raise ArgumentValueError(f"{self.label}: Input with dimension ({order.ndim}) cannot be "
                                             "converted to dimension (1). ('new_order' must be 1-D per sample)")
                if order.dtype.kind not in "iu":
                    raise ValueError(f"{self.label}: 'new_order' of sample {i} must be a 1-D integer tensor, "
                                     f"got {order.dtype} of shape {order.shape}")
                orders.append(order.astype(np.int64))
            return orders
        return [np.asarray(self.args["new_order"], np.int64)] * ws.batch_size

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout, frames, frame_vol = _sequences(self, src, "Expected sequence as the input, where outermost "
                                                          "dimension represents frames dimension `F`, got data "
                                                          'with layout = "{layout}".')
        orders = self._orders(ws)
        per_sample = "new_order" in ws.arg_inputs
        for i, order in enumerate(orders):
            if order.size == 0:
                if not per_sample:
                    raise ArgumentValueError(f"{self.label}: Empty result sequences are not allowed.")
                raise SampleError(i, f"{self.label}: Empty `new_order` for sample {i} is not allowed.")
            bad = np.nonzero((order < 0) | (order >= frames[i]))[0]
            if bad.size:
                j = int(bad[0])
                raise SampleError(i, f"{self.label}: new_order[{j}] must be between 0 and input_sequence_length = "
                                     f"{int(frames[i])} for sample {i}, but it is: {int(order[j])}.")
        lengths = np.array([len(o) for o in orders], np.int64)
        shapes = src._shapes.copy()
        shapes[:, 0] = lengths
        out = ws.new_batch(shapes, src._buf.dtype, layout, src._source_info)
        sample = np.repeat(np.arange(len(orders)), lengths)
        src_starts = src._offsets[sample] + np.concatenate(orders) * frame_vol[sample]
        dst_starts = out._offsets[sample] + (np.arange(len(sample)) - np.repeat(np.cumsum(lengths) - lengths,
                                                                                 lengths)) * frame_vol[sample]
        counts = frame_vol[sample]
        if ws.gpu is not None:  # every output frame of the batch in one launch
            gather_ranges(ws, src, src_starts, [], counts, dst_elements=dst_starts, dst=out)
            return [out]
        es = src._buf.dtype.itemsize
        _engine.copy_ranges(ws.pool, src._buf, src_starts * es, out._buf, dst_starts * es, counts * es)
        return [out]


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
