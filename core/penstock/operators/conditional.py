"""Kernels of per-sample control flow (``enable_conditionals=True``): split a batch by a predicate,
merge branch results back into sample order, and the logical operators on predicates.

Internal operators: the conditional statements of a pipeline definition insert them; they are
declared in ``penstock._conditionals._schemas`` and not exported to ``fn``/``ops``.
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._conditionals._schemas import MERGE, PREDICATE, SPLIT
from .._operator import Operator
from .._registry import register
from ..tensors import TensorListCPU

def predicate_mask(tl: TensorListCPU, label: str, kind: str = "if") -> np.ndarray:
    """[N] bool: the samples of a predicate batch, which must be scalars (0-d)."""
    if tl.ndim() != 0:
        bad = next((i for i, s in enumerate(tl.shape()) if len(s)), 0)
        raise RuntimeError(f"{label}: conditions of `{kind}` are restricted to scalar (0-d tensors) inputs, "
                           f"that are placed on CPU; sample {bad} has shape {tl.shape()[bad]}")
    if kind in ("and", "or") and tl._buf.dtype != np.bool_:
        raise RuntimeError(f"{label}: logical expression `{kind}` is restricted to scalar (0-d tensors) "
                           f"inputs of bool type, that are placed on CPU; got {tl.dtype.name}")
    if not len(tl):
        return np.zeros(0, np.bool_)
    # a packed batch of scalars is its buffer's first N values (numpy's fancy indexing gives the GIL away)
    values = tl._buf[:len(tl)] if tl._is_packed_cached() else tl._buf[tl._offsets]
    return values != 0


@register(SPLIT, device=("cpu", "gpu"))
class Split(Operator):
    def run(self, ws):
        data, pred = ws.inputs
        mask = predicate_mask(pred, self.label)
        if len(mask) != len(data):
            raise RuntimeError(f"{self.label}: the predicate has {len(mask)} samples, the data {len(data)}")
        keep = np.flatnonzero(mask == self.args["branch"])
        infos = [data._source_info[i] for i in keep]
        # the kept rows taken by the engine (numpy's fancy indexing gives the GIL away)
        shapes, offsets = _engine.take_rows(data._shapes, keep), _engine.take_rows(data._offsets, keep)
        if len(keep) and keep[-1] - keep[0] + 1 == len(keep) and data._is_packed_cached():
            # a run of consecutive samples of a packed batch: a view, no copy
            start = data._offsets[keep[0]]
            view = type(data)._from_packed(data._buf[start:], shapes, offsets - start, data._layout, infos)
            if ws.gpu is not None:  # ordered like the batch it views
                view.stream, view._event = data.stream, data._event
            return [view]
        out = ws.new_batch(shapes, data._buf.dtype, data._layout, infos)
        if len(keep):  # kernels expect packed batches: one gather of the selected samples
            ws.kernels.concat(ws.pool, [data._buf], [shapes], [offsets], 0, out._buf, out._shapes, out._offsets)
        return [out]


@register(MERGE, device=("cpu", "gpu"))
class Merge(Operator):
    """Either side may also be the whole batch (a value the branch left unchanged): its samples
    are then taken at their own positions, which saves splitting it first."""

    def run(self, ws):
        false_part, true_part, pred = ws.inputs
        mask = predicate_mask(pred, self.label)
        what = f" for '{self.args['what']}'" if self.args["what"] else ""
        where = (np.flatnonzero(~mask), np.flatnonzero(mask))
        sides = []
        for part, idx in zip((false_part, true_part), where):
            if len(part) not in (len(idx), len(mask)):
                raise RuntimeError(f"{self.label}: branch results{what} have {len(true_part)} + {len(false_part)} "
                                   f"samples, the predicate selects {len(where[1])} + {len(where[0])}")
            if len(part) == len(mask):  # the whole batch: its samples at their own positions
                sides.append((part, idx, _engine.take_rows(part._shapes, idx), _engine.take_rows(part._offsets, idx), True))
            else:
                sides.append((part, idx, part._shapes, part._offsets, False))
        parts = [p for p, idx, *_ in sides if len(idx)]
        if len({p._buf.dtype for p in parts}) > 1 or len({p.ndim() for p in parts}) > 1:
            raise RuntimeError(f"{self.label}: the branches of a conditional produce different types or "
                               f"dimensionality{what}: {false_part.dtype.name}/{false_part.ndim()}-D in the "
                               f"false branch, {true_part.dtype.name}/{true_part.ndim()}-D in the true branch")
        layouts = {p._layout for p in parts if p._layout}
        if len(layouts) > 1:
            raise RuntimeError(f"{self.label}: the branches of a conditional produce different layouts{what}: "
                               f"{sorted(layouts)}")
        ref = parts[0] if parts else true_part
        shapes = _engine.zero_table(len(mask), ref.ndim())
        # the source names are Python strings: a list, where numpy's object arrays gave the GIL away
        infos: list = [""] * len(mask)
        for part, idx, part_shapes, _, whole in sides:
            if len(idx):  # a side no sample took may be a placeholder (see the executor)
                shapes = _engine.put_rows(shapes, idx, part_shapes)
                names = part._source_info
                for j, i in enumerate(idx.tolist()):
                    infos[i] = names[i if whole else j]
        out = ws.new_batch(shapes, ref._buf.dtype, layouts.pop() if layouts else "")
        for part, idx, part_shapes, part_offsets, _ in sides:
            if len(idx):  # one kernel call per side: copies each of its samples to its slot
                ws.kernels.concat(ws.pool, [part._buf], [part_shapes], [np.ascontiguousarray(part_offsets)], 0,
                                  out._buf, part_shapes, _engine.take_rows(out._offsets, idx))
        out._source_info = infos
        return [out]


@register(PREDICATE)
class PredicateCPU(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        kind, side = self.args["kind"], self.args["side"]
        mask = predicate_mask(src, f"{self.label} ({side} side of `{kind}`)" if side else self.label, kind)
        if kind != "not":
            return [src]
        return [TensorListCPU._from_packed(~mask, np.zeros((len(mask), 0), np.int64), None, "",
                                           src._source_info)]
