"""Reordering samples within a batch: ``batch_permutation`` draws the indices, ``permute_batch``
applies them."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from .._batch import contiguous, empty_batch
from .sequences import gather_ranges

BATCH_PERMUTATION = OpSchema(
    "BatchPermutation", "A random permutation of the sample indices of the batch (int32 scalar per sample).",
    args=[Arg("allow_repetitions", ArgType.BOOL, False, doc="draw indices with replacement"),
          Arg("no_fixed_points", ArgType.BOOL, False, doc="no sample maps to itself")],
    min_inputs=0, is_random=True, devices=("cpu",))

PERMUTE_BATCH = OpSchema(
    "PermuteBatch", "Output sample i is input sample indices[i].",
    args=[Arg("indices", ArgType.INT_LIST, tensor=True, doc="source sample of each output sample")],
    devices=("cpu", "gpu"))


@register(BATCH_PERMUTATION)
class BatchPermutationCPU(Operator):
    def run(self, ws):
        n = ws.batch_size
        rng = ws.rng
        fixed_free = self.args["no_fixed_points"]
        if fixed_free and n == 1:
            raise ValueError(f"{self.label}: a batch of one sample has no permutation without fixed points")
        if self.args["allow_repetitions"]:
            if fixed_free:  # uniform over the n - 1 other indices
                draw = rng.integers(0, n - 1, n)
                idx = draw + (draw >= np.arange(n))
            else:
                idx = rng.integers(0, n, n)
        else:
            idx = rng.permutation(n)
            while fixed_free and (idx == np.arange(n)).any():  # rejection: ~e^-1 of draws succeed
                idx = rng.permutation(n)
        out = empty_batch(np.zeros((n, 0), np.int64), np.int32)
        out._buf[:n] = idx
        return [out]


@register(PERMUTE_BATCH, device=("cpu", "gpu"))
class PermuteBatch(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n = len(src)
        idx = ws.per_sample("indices", np.int64) if "indices" in ws.arg_inputs else \
            np.asarray(self.args["indices"], np.int64)
        if len(idx) != n:
            raise ArgumentValueError(f"{self.label}: The number of sample indices {len(idx)} does not match the "
                                     f"current batch size, which is {n}")
        bad = np.nonzero((idx < 0) | (idx >= n))[0]
        if bad.size:
            i = int(bad[0])
            raise ArgumentValueError(f"{self.label}: Sample index out of range. indices[{i}] = {int(idx[i])} is not "
                                     f"a valid index for an input batch of {n} tensors.")
        shapes = src._shapes[idx]
        vols = src._volumes()
        if ws.gpu is not None:  # one launch copies every sample
            out = ws.new_batch(shapes, src._buf.dtype, src._layout, [src._source_info[i] for i in idx])
            gather_ranges(ws, src, src._offsets[idx], [out], vols[idx])
            return [out]
        out = empty_batch(shapes, src._buf.dtype, src._layout, [src._source_info[i] for i in idx])
        take = np.repeat(src._offsets[idx] - (np.cumsum(vols[idx]) - vols[idx]), vols[idx]) + \
            np.arange(int(vols[idx].sum()))
        out._buf[:take.size] = src._buf[take]
        return [out]
