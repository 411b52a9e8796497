"""Per-sample indexing and slicing of DataNodes: ``node[1:-1, ::2, newaxis, 0]``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _hooks
from .._graph import make_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..data_node import DataNode, newaxis
from ..tensors import TensorListCPU
from .._batch import dense_batch
from .crop import slice_batch

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


_hooks.install(subscript=subscript)  # DataNode.__getitem__


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

    def _window(self, src, per: dict) -> tuple | None:
        """The batch's indexing as one slice: per-sample anchors and window sizes over the input's
        axes, and the output shapes (integer-indexed axes dropped, new axes inserted). None when a
        slice has a step other than 1."""
        n, nd = src._shapes.shape
        anchors = np.zeros((n, nd), np.int64)
        sizes = src._shapes.copy()
        out_dims = []
        d = 0
        for k, (entry, value) in enumerate(zip(self.args["spec"], self.args["values"])):
            if entry[0] == "newaxis":
                out_dims.append(np.ones(n, np.int64))
                continue
            extent = src._shapes[:, d]
            if entry[0] == "int":
                at = per[f"at_{k}"] if entry[1] else np.full(n, value, np.int64)
                wrapped = np.where(at < 0, at + extent, at)
                bad = np.nonzero((wrapped < 0) | (wrapped >= extent))[0]
                if len(bad):
                    i = int(bad[0])
                    raise IndexError(f"index {int(at[i])} is out of bounds for axis {d} with size {int(extent[i])} "
                                     f"(sample {i})")
                anchors[:, d], sizes[:, d] = wrapped, 1
            else:
                lo, hi, step = (per[f"{kind}_{k}"] if has else None if v is None else np.full(n, v, np.int64)
                                for kind, has, v in zip(("lo", "hi", "step"), entry[1:], value))
                if step is not None and (step != 1).any():
                    return None
                start = np.zeros(n, np.int64) if lo is None else np.clip(np.where(lo < 0, lo + extent, lo), 0, extent)
                stop = extent if hi is None else np.clip(np.where(hi < 0, hi + extent, hi), 0, extent)
                anchors[:, d], sizes[:, d] = start, np.maximum(stop - start, 0)
                out_dims.append(sizes[:, d])
            d += 1
        out_dims += [src._shapes[:, j] for j in range(d, nd)]
        return anchors, sizes, np.column_stack(out_dims).astype(np.int64) if out_dims else np.zeros((n, 0), np.int64)

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
            window = self._window(src, per) if n else None
            if window is not None:  # one slice kernel call for the batch
                anchors, sizes, out_shapes = window
                cut = slice_batch(ws, src, anchors, sizes)
                out = type(cut)._from_packed(cut._buf, out_shapes, cut._offsets, layout, src._source_info)
                if not on_host:
                    out.stream = cut.stream
                return [out]
            # steps other than 1: sample by sample
            # array(), not ascontiguousarray(): the latter turns 0-d results into 1-d
            xp = np if on_host else ws.gpu.cp
            samples = [xp.array(src._sample_array(i)[self._key(ws, i, per)], order="C") for i in range(n)]
        except IndexError as e:
            raise IndexError(f"{self.label}: {e}") from None
        out = type(src)(samples, layout)
        out._source_info = list(src._source_info)
        return [out]
