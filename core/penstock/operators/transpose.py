"""``transpose``: permutes the dimensions of every sample (one native call per batch)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous

TRANSPOSE = OpSchema(
    "Transpose", "Permutes the dimensions of each sample.",
    args=[Arg("perm", ArgType.INT_LIST, optional=True, doc="output dim d = input dim perm[d]; default: reversed"),
          Arg("transpose_layout", ArgType.BOOL, True, doc="permute the layout too"),
          Arg("output_layout", ArgType.LAYOUT, optional=True, doc="explicit output layout")],
    devices=("cpu", "gpu"))


@register(TRANSPOSE, device=("cpu", "gpu"))
class Transpose(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        nd = src.ndim()
        perm = list(self.args["perm"]) if self.args["perm"] is not None else list(range(nd))[::-1]
        if sorted(perm) != list(range(nd)):
            raise ValueError(f"{self.label}: perm {perm} is not a permutation of {nd} dimensions")
        if self.args["output_layout"]:
            layout = self.args["output_layout"]
        elif self.args["transpose_layout"] and src._layout:
            layout = "".join(src._layout[p] for p in perm)
        else:
            layout = src._layout  # transpose_layout=False copies the input layout unchanged
        shapes = np.empty_like(src._shapes)  # a column at a time: numpy's fancy indexing gives the GIL away
        for d, p in enumerate(perm):
            shapes[:, d] = src._shapes[:, p]
        out = ws.new_batch(shapes, src._buf.dtype, layout, src._source_info)
        if nd:
            ws.kernels.transpose(ws.pool, src._buf, src._shapes, src._offsets, perm,
                                 out._buf, out._shapes, out._offsets)
        else:  # scalars: the batch is already in order
            ws.kernels.copy(ws.pool, contiguous(src)._buf[:len(src)], out._buf)
        return [out]
