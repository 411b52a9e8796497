"""``one_hot``: integer labels to one-hot vectors, inserted as a new axis (numpy over the batch on
the CPU, one kernel launch on the GPU)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, to_numpy_type
from .._batch import contiguous

ONE_HOT = OpSchema(
    "OneHot", "One-hot encodes labels: a new axis of num_classes values (on_value at the label).",
    args=[Arg("num_classes", ArgType.INT, 0, doc="length of the new axis"),
          Arg("axis", ArgType.INT, -1, doc="position of the new axis (-1: last)"),
          Arg("axis_name", ArgType.STR, optional=True, doc="layout letter of the new axis"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT, doc="output type"),
          Arg("on_value", ArgType.FLOAT, 1.0, doc="value at the label's position"),
          Arg("off_value", ArgType.FLOAT, 0.0, doc="value elsewhere")],
    devices=("cpu", "gpu"))


@register(ONE_HOT, device=("cpu", "gpu"))
class OneHot(Operator):
    def setup(self):
        name = self.args["axis_name"]
        if name is not None and len(name) != 1:
            raise ArgumentValueError(f'{self.label}: Unsupported axis_name value. It must be a single character, '
                                     f'got "{name}" instead.')

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        a = self.args
        k = a["num_classes"]
        if k < 0:
            raise ValueError(f"{self.label}: num_classes must not be negative, got {k}")
        shapes = src._shapes
        nd = src.ndim()
        # as DALI: scalars, or (with the default axis) a batch of single-element samples of any rank, give
        # plain vectors
        scalar = nd == 0 or (a["axis"] == -1 and len(shapes) > 0 and bool((shapes == 1).all()))
        in_nd = 0 if scalar else nd
        if not -1 <= a["axis"] <= in_nd:
            raise ArgumentValueError(f"{self.label}: Provided axis is outside of allowed range, got: {a['axis']}, "
                                     f"expected to be in range: [-1, {in_nd}].")
        axis = in_nd if a["axis"] == -1 else a["axis"]
        dtype = to_numpy_type(a["dtype"])
        base = np.zeros((len(src), 0), np.int64) if scalar else shapes
        out_shapes = np.insert(base, axis, k, axis=1)
        name = a["axis_name"]
        if not name:
            layout = ""
        elif scalar:
            layout = name
        elif len(src._layout) != nd:
            raise ArgumentValueError(f'{self.label}: Input layout mismatch - expected input layout to be of size {nd} '
                                     f'but instead got "{src._layout}", which is of size {len(src._layout)}.')
        else:
            layout = src._layout[:axis] + name + src._layout[axis:]
        out = ws.new_batch(out_shapes, dtype, layout, src._source_info)
        on, off = (_as_type(a[name], dtype) for name in ("on_value", "off_value"))
        if ws.gpu is not None:
            ws.kernels.one_hot(ws.pool, src._buf, int(src.dtype), base, src._offsets, out._buf, out._offsets,
                               k, axis, on, off)
            return [out]
        total = int(src._volumes().sum()) if len(src) else 0
        labels = np.asarray(src._buf[:total])
        labels = np.trunc(labels).astype(np.int64) if labels.dtype.kind == "f" else labels.astype(np.int64)
        rows = np.full((total, k), off, dtype)
        hit = (labels >= 0) & (labels < k)   # labels out of range: all off_value
        rows[np.nonzero(hit)[0], labels[hit]] = on
        if axis != in_nd and total:  # move the class axis into place, sample by sample shapes agree
            rows = _move_class_axis(rows, shapes, axis)
        out._buf[:rows.size] = rows.reshape(-1)
        return [out]


def _as_type(value: float, dtype) -> np.ndarray:
    """on_value / off_value in the output type: integers round half away from zero and saturate."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        value = np.clip(np.sign(value) * np.floor(np.abs(value) + 0.5), info.min, info.max)
    return np.asarray(value).astype(dtype)


def _move_class_axis(rows: np.ndarray, shapes: np.ndarray, axis: int) -> np.ndarray:
    """[sum V_i, K] rows (class axis last) -> each sample's values with the class axis at `axis`."""
    k = rows.shape[1]
    vols = shapes.prod(axis=1)
    pieces, at = [], 0
    for shape, v in zip(shapes.tolist(), vols.tolist()):  # a view per sample: the data moves in numpy
        block = rows[at:at + v].reshape(*shape, k)
        pieces.append(np.moveaxis(block, -1, axis).reshape(-1))
        at += v
    return np.concatenate(pieces)
