"""``cat`` (join along an existing axis) and ``stack`` (join along a new axis)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register

_JOIN_ARGS = [Arg("axis", ArgType.INT, 0, doc="axis to join along"),
              Arg("axis_name", ArgType.STR, optional=True, doc="axis by layout letter (cat) / new axis letter (stack)")]
CAT = OpSchema("Cat", "Concatenates the inputs along an existing axis.", args=_JOIN_ARGS,
               min_inputs=1, max_inputs=-1, devices=("cpu", "gpu"))
STACK = OpSchema("Stack", "Stacks the inputs along a new axis.", args=_JOIN_ARGS,
                 min_inputs=1, max_inputs=-1, devices=("cpu", "gpu"))


def _join(op: Operator, ws, axis: int, new_axis: bool):
    ins = ws.inputs
    first = ins[0]
    for k, tl in enumerate(ins):
        if tl.dtype != first.dtype or tl.ndim() != first.ndim() or len(tl) != len(first):
            raise ValueError(f"{op.label}: input {k} differs from input 0 in type, dimensions or batch size")
    nd = first.ndim() + (1 if new_axis else 0)
    if not 0 <= axis < (nd if new_axis else max(nd, 1)) + (0 if new_axis else 0):
        raise ValueError(f"{op.label}: axis {axis} is out of range for {first.ndim()}-D inputs")
    shapes = []
    for tl in ins:
        s = tl._shapes
        shapes.append(np.insert(s, axis, 1, axis=1) if new_axis else s)
    others = [np.delete(s, axis, axis=1) for s in shapes]
    for k, o in enumerate(others[1:], 1):
        if not np.array_equal(o, others[0]):
            i = int(np.nonzero((o != others[0]).any(axis=1))[0][0])
            raise ValueError(f"{op.label}: sample {i} of input {k} has shape {tuple(ins[k]._shapes[i])}, "
                             f"input 0 has {tuple(first._shapes[i])}; only the joined axis may differ")
    out_shapes = shapes[0].copy()
    out_shapes[:, axis] = sum(s[:, axis] for s in shapes)
    if new_axis:
        name = op.args["axis_name"]
        layout = (first._layout[:axis] + name + first._layout[axis:]) if (name and first._layout) else ""
    else:
        layout = first._layout
    out = ws.new_batch(out_shapes, first._buf.dtype, layout, first._source_info)
    ws.kernels.concat(ws.pool, [tl._buf for tl in ins], [np.ascontiguousarray(s) for s in shapes],
                      [tl._offsets for tl in ins], axis, out._buf, out._shapes, out._offsets)
    return [out]


def _axis(op: Operator, layout: str) -> int:
    name = op.args["axis_name"]
    if op.schema is CAT and name:
        if name not in layout:
            raise ValueError(f"{op.label}: axis_name '{name}' is not in the layout '{layout}'")
        return layout.index(name)
    return op.args["axis"]


@register(CAT, device=("cpu", "gpu"))
class Cat(Operator):
    def run(self, ws):
        axis = _axis(self, ws.inputs[0]._layout)
        return _join(self, ws, axis % max(ws.inputs[0].ndim(), 1), new_axis=False)


@register(STACK, device=("cpu", "gpu"))
class Stack(Operator):
    def run(self, ws):
        axis = self.args["axis"]
        return _join(self, ws, axis % (ws.inputs[0].ndim() + 1), new_axis=True)
