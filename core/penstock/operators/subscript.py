"""Per-sample indexing and slicing of DataNodes: ``node[1:-1, ::2, newaxis, 0]``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._graph import make_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..data_node import DataNode, newaxis
from ..tensors import TensorListCPU
from ._batch import dense_batch

_MAX_DIMS = 16
SUBSCRIPT = OpSchema(
    "_TensorSubscript", "Python-style indexing of each sample.",
    args=[Arg("spec", ArgType.ANY, doc="per index entry: ('int',), ('slice', has_lo, has_hi, has_step), "
                                       "('newaxis', name) with constant bounds in 'values'"),
          Arg("values", ArgType.ANY, doc="constant bounds, None where a DataNode gives them")]
    + [Arg(f"{kind}_{k}", ArgType.INT, optional=True, tensor=True)
       for k in range(_MAX_DIMS) for kind in ("at", "lo", "hi", "step")],
    devices=("cpu", "gpu"), internal=True)


def subscript(node: DataNode, index: Any) -> DataNode:
    items = index if isinstance(index, tuple) else (index,)
    spec, values, arg_nodes = [], [], {}
    for k, item in enumerate(items):
        if item is Ellipsis:
            raise NotImplementedError("indexing a DataNode with Ellipsis (...) is not supported")
        if item is None or item is newaxis or isinstance(item, newaxis):
            spec.append(("newaxis", item.name if isinstance(item, newaxis) else None))
            values.append(None)
        elif isinstance(item, slice):
            parts = []
            for kind, v in (("lo", item.start), ("hi", item.stop), ("step", item.step)):
                if isinstance(v, DataNode):
                    arg_nodes[f"{kind}_{k}"] = v
                    parts.append(None)
                elif v is None or isinstance(v, (int, np.integer)):
                    parts.append(None if v is None else int(v))
                else:
                    raise TypeError(f"slice bounds must be ints or DataNodes, got {type(v).__name__}")
            spec.append(("slice",) + tuple(f"{kind}_{k}" in arg_nodes for kind in ("lo", "hi", "step")))
            values.append(tuple(parts))
        elif isinstance(item, DataNode):
            arg_nodes[f"at_{k}"] = item
            spec.append(("int", True))
            values.append(None)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            spec.append(("int", False))
            values.append(int(item))
        else:
            raise TypeError(f"a DataNode index must be an int, a slice, None/newaxis or a DataNode, "
                            f"got {type(item).__name__}")
    if len(items) > _MAX_DIMS:
        raise ValueError(f"at most {_MAX_DIMS} index entries are supported")
    return make_op(SUBSCRIPT, (node,), {"spec": tuple(spec), "values": tuple(values), **arg_nodes,
                                        "device": node.device})[0]


@register(SUBSCRIPT, device=("cpu", "gpu"))
class Subscript(Operator):
    def _key(self, ws, i: int, per: dict) -> tuple:
        key = []
        for k, (entry, value) in enumerate(zip(self.args["spec"], self.args["values"])):
            if entry[0] == "newaxis":
                key.append(None)
            elif entry[0] == "int":
                key.append(int(per[f"at_{k}"][i]) if entry[1] else value)
            else:
                bounds = [int(per[f"{kind}_{k}"][i]) if has else v
                          for kind, has, v in zip(("lo", "hi", "step"), entry[1:], value)]
                key.append(slice(*bounds))
        return tuple(key)

    def _layout(self, src: TensorListCPU) -> str:
        if not src._layout:
            return ""
        out, d = [], 0
        for entry in self.args["spec"]:
            if entry[0] == "newaxis":
                if entry[1] is None:
                    return ""
                out.append(entry[1])
            elif entry[0] == "int":
                d += 1
            else:
                out.append(src._layout[d])
                d += 1
        return "".join(out) + src._layout[d:]

    def run(self, ws):
        src = ws.inputs[0]
        n = len(src)
        dims_used = sum(1 for e in self.args["spec"] if e[0] != "newaxis")
        if dims_used > src.ndim():
            raise IndexError(f"{self.label}: {dims_used} indices for {src.ndim()}-D samples")
        per = {name: ws.per_sample(name, np.int64) for name in ws.arg_inputs}
        layout = self._layout(src)
        try:
            on_host = isinstance(src, TensorListCPU)
            if not per and src.is_dense_tensor() and n:
                key = self._key(ws, 0, per)
                dense = src.as_array() if on_host else src._dense_array()
                return [dense_batch(dense[(slice(None),) + key], layout) if on_host
                        else type(src)(dense[(slice(None),) + key], layout)]
            # array(), not ascontiguousarray(): the latter turns 0-d results into 1-d
            xp = np if on_host else ws.gpu.cp
            samples = [xp.array(src._sample_array(i)[self._key(ws, i, per)], order="C") for i in range(n)]
        except IndexError as e:
            raise IndexError(f"{self.label}: {e}") from None
        out = type(src)(samples, layout)
        out._source_info = list(src._source_info)
        return [out]
