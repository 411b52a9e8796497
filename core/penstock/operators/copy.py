"""``copy``: the same data in a new buffer."""
from __future__ import annotations

from .._operator import Operator
from .._registry import OpSchema, register
from .._batch import contiguous

COPY = OpSchema("Copy", "Copies the input into a new buffer.", devices=("cpu", "gpu"))


@register(COPY, device=("cpu", "gpu"))
class Copy(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.copy(ws.pool, src._buf, out._buf)
        return [out]
