"""``reductions.*``: per-sample sum, mean, mean_square, rms, min, max, std_dev and variance over
chosen axes; the whole batch in one ``ws.kernels.reduce`` call on either device."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import to_numpy_type
from .._batch import contiguous

_AXES = [Arg("axes", ArgType.INT_LIST, optional=True, doc="axes to reduce (default: all)"),
         Arg("axis_names", ArgType.LAYOUT, optional=True, doc="axes to reduce, by layout letters"),
         Arg("keep_dims", ArgType.BOOL, False, doc="keep reduced axes with extent 1")]
_DTYPE = Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: see the operator)")


def _widened(dtype: np.dtype) -> np.dtype:
    """sum's default: 64-bit of the same kind, float32 for floats below 64 bits."""
    if dtype.kind == "u" or dtype.kind == "b":
        return np.dtype(np.uint64)
    if dtype.kind == "i":
        return np.dtype(np.int64)
    return np.dtype(np.float64 if dtype.itemsize == 8 else np.float32)


def _allowed_outputs(kind: str, dtype: np.dtype) -> list[np.dtype]:
    """The output types DALI 2.4 takes for ``dtype``: the input's own (not for mean_square), float32 and,
    for sum and mean_square of integers, the widened 64-bit type (DALI rejects the rest, e.g. uint8 -> int32)."""
    out = [dtype] if kind != "mean_square" else []
    out.append(_floating(dtype))
    if kind == "sum" or kind == "mean_square" and dtype.kind in "iub":
        out.append(_widened(dtype))
    return list(dict.fromkeys(out))


def _floating(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


class _Reduction(Operator):
    kind = ""

    def axes(self, src) -> tuple[int, ...]:
        nd = src.ndim()
        a = self.args
        if a["axis_names"] is not None:  # "" names no axis: nothing reduced, as axes=[]
            layout = src._layout
            missing = [c for c in a["axis_names"] if c not in layout]
            if missing:
                raise ValueError(f"{self.label}: axis_names '{a['axis_names']}' not in the layout '{layout}'")
            return tuple(sorted(layout.index(c) for c in a["axis_names"]))
        if a["axes"] is None:
            return tuple(range(nd))
        axes = sorted({x + nd if x < 0 else x for x in a["axes"]})
        if any(x < 0 or x >= nd for x in axes):
            raise IndexError(f"{self.label}: axes {list(a['axes'])} out of range for {nd}-D input")
        return tuple(axes)

    def out_type(self, dtype: np.dtype) -> np.dtype:
        if self.args.get("dtype") is not None:
            out = np.dtype(to_numpy_type(self.args["dtype"]))
            if out not in _allowed_outputs(self.kind, dtype):
                raise RuntimeError(f"{self.label}: dtype {out.name} is not supported for {dtype.name} input "
                                   f"(supported: {', '.join(t.name for t in _allowed_outputs(self.kind, dtype))})")
            return out
        if self.kind == "sum":
            return _widened(dtype)
        if self.kind in ("min", "max"):
            return dtype
        return _floating(dtype)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        axes = self.axes(src)
        n = len(src)
        keep = self.args["keep_dims"]
        out_shapes = src._shapes.copy()
        if keep:
            out_shapes[:, list(axes)] = 1
        else:
            out_shapes = np.delete(out_shapes, list(axes), axis=1)
        layout = src._layout
        if layout and not keep:
            layout = "".join(c for i, c in enumerate(layout) if i not in axes)
        out = ws.new_batch(out_shapes, self.out_type(src._buf.dtype), layout, src._source_info)
        if n == 0:
            return [out]
        vols = src._volumes()
        if self.kind in ("min", "max") and (vols == 0).any():
            raise ValueError(f"{self.label}: cannot take the {self.kind} of an empty sample")
        mean = mean_offsets = None
        ddof = 0
        if self.kind in ("variance", "std_dev"):
            mean_tl = contiguous(ws.inputs[1])
            want = out._volumes()
            bad = np.nonzero(mean_tl._volumes() != want)[0]
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"{self.label}: the mean of sample {i} has {mean_tl._volumes()[i]} values; "
                                 f"the reduced shape {tuple(int(e) for e in out_shapes[i])} has {want[i]}")
            ddof = self.args["ddof"]
            count = src._shapes[:, list(axes)].prod(axis=1)
            if (count - ddof <= 0).any():
                raise ValueError(f"{self.label}: ddof={ddof} leaves no degrees of freedom for "
                                 f"{int(count.min())} elements")
            mean, mean_offsets = mean_tl._buf, mean_tl._offsets
        ws.kernels.reduce(ws.pool, _KIND_CODES[self.kind], src._buf, src._shapes, src._offsets, axes, out._buf,
                          out._offsets, ddof, mean, mean_offsets)
        return [out]


_KIND_CODES = {"sum": 0, "mean": 1, "mean_square": 2, "rms": 3, "min": 4, "max": 5, "variance": 6, "std_dev": 7}


def _register(name: str, doc: str, kind: str, args=(), min_inputs=1):
    schema = OpSchema(f"reductions.{name}", doc, args=[*_AXES, *args], min_inputs=min_inputs,
                      devices=("cpu", "gpu"))

    @register(schema, device=("cpu", "gpu"))
    class _Op(_Reduction):
        pass

    _Op.kind = kind
    _Op.__name__ = _Op.__qualname__ = name
    return _Op


_DDOF = Arg("ddof", ArgType.INT, 0, doc="delta degrees of freedom")
_register("Sum", "Sum over the axes (integers widen to 64 bits).", "sum", [_DTYPE])
_register("Mean", "Mean over the axes.", "mean", [_DTYPE])
_register("MeanSquare", "Mean of the squares over the axes.", "mean_square", [_DTYPE])
_register("RMS", "Root mean square over the axes.", "rms", [_DTYPE])
_register("Min", "Minimum over the axes.", "min")
_register("Max", "Maximum over the axes.", "max")
_register("Variance", "Variance over the axes, given the mean (second input).", "variance", [_DDOF], min_inputs=2)
_register("StdDev", "Standard deviation over the axes, given the mean (second input).", "std_dev", [_DDOF],
          min_inputs=2)
