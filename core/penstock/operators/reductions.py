"""``reductions.*``: per-sample sum, mean, mean_square, rms, min, max, std_dev and variance over
chosen axes. On the CPU, samples are processed in groups of equal shape, each group by one numpy
call over [samples, ...] (a dense batch is one group); on the GPU the batch is one launch."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import to_numpy_type
from ._batch import contiguous

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


def _floating(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


class _Reduction(Operator):
    kind = ""

    def axes(self, src) -> tuple[int, ...]:
        nd = src.ndim()
        a = self.args
        if a["axis_names"]:
            layout = src._layout
            missing = [c for c in a["axis_names"] if c not in layout]
            if missing:
                raise ValueError(f"{self.label}: axis_names '{a['axis_names']}' not in the layout '{layout}'")
            return tuple(sorted(layout.index(c) for c in a["axis_names"]))
        if a["axes"] is None:
            return tuple(range(nd))
        axes = sorted({x + nd if x < 0 else x for x in a["axes"]})
        if any(x < 0 or x >= nd for x in axes):
            raise ValueError(f"{self.label}: axes {list(a['axes'])} out of range for {nd}-D input")
        return tuple(axes)

    def out_type(self, dtype: np.dtype) -> np.dtype:
        if self.args.get("dtype") is not None:
            return np.dtype(to_numpy_type(self.args["dtype"]))
        if self.kind == "sum":
            return _widened(dtype)
        if self.kind in ("min", "max"):
            return dtype
        return _floating(dtype)

    def reduce(self, x: np.ndarray, axes: tuple[int, ...], ws, group: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        axes = self.axes(src)
        n, nd = src._shapes.shape
        keep = self.args["keep_dims"]
        out_shapes = src._shapes.copy()
        if keep:
            out_shapes[:, list(axes)] = 1
        else:
            out_shapes = np.delete(out_shapes, list(axes), axis=1)
        layout = src._layout
        if layout and not keep:
            layout = "".join(c for i, c in enumerate(layout) if i not in axes)
        dtype = self.out_type(src._buf.dtype)
        out = ws.new_batch(out_shapes, dtype, layout, src._source_info)
        if n == 0:
            return [out]
        if ws.gpu is not None:
            self._on_gpu(ws, src, axes, out)
            return [out]
        shapes, group_of = np.unique(src._shapes, axis=0, return_inverse=True)
        group_of = group_of.reshape(-1)
        vols = src._volumes()
        out_vols = out._volumes() if out.ndim() else np.ones(n, np.int64)
        for g, shape in enumerate(shapes):  # one numpy reduction per distinct sample shape
            members = np.nonzero(group_of == g)[0]
            vol = int(vols[members[0]])
            take = (src._offsets[members][:, None] + np.arange(vol)).reshape(-1)
            x = np.asarray(src._buf[take]).reshape((len(members),) + tuple(shape))
            if self.kind in ("min", "max") and vol == 0:
                raise ValueError(f"{self.label}: cannot take the {self.kind} of an empty sample")
            r = self.reduce(x, tuple(a + 1 for a in axes), ws, members)
            r = np.asarray(r).reshape(len(members), -1)
            ov = int(out_vols[members[0]])
            dst = (out._offsets[members][:, None] + np.arange(ov)).reshape(-1)
            out._buf[dst] = r.reshape(-1).astype(dtype)
        return [out]

    def _on_gpu(self, ws, src, axes: tuple[int, ...], out) -> None:
        """The whole batch in one segmented-reduction launch (the checks of the CPU path first)."""
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
                                 f"the reduced shape has {want[i]}")
            ddof = self.args["ddof"]
            count = src._shapes[:, list(axes)].prod(axis=1)
            if (count - ddof <= 0).any():
                raise ValueError(f"{self.label}: ddof={ddof} leaves no degrees of freedom for "
                                 f"{int(count.min())} elements")
            mean, mean_offsets = mean_tl._buf, mean_tl._offsets
        ws.kernels.reduce(_KIND_CODES[self.kind], src._buf, src._shapes, src._offsets, axes, out._buf,
                          out._offsets, ddof, mean, mean_offsets)


_KIND_CODES = {"sum": 0, "mean": 1, "mean_square": 2, "rms": 3, "min": 4, "max": 5, "variance": 6, "std_dev": 7}


def _register(name: str, doc: str, kind: str, fn, args=(), min_inputs=1):
    schema = OpSchema(f"reductions.{name}", doc, args=[*_AXES, *args], min_inputs=min_inputs,
                      devices=("cpu", "gpu"))

    @register(schema, device=("cpu", "gpu"))
    class _Op(_Reduction):
        pass

    _Op.kind = kind
    _Op.reduce = fn
    _Op.__name__ = _Op.__qualname__ = name
    return _Op


def _acc(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def _sum(self, x, axes, ws, members):
    out = self.out_type(x.dtype)
    return x.sum(axis=axes, dtype=np.float64 if out.kind == "f" else out)


_register("Sum", "Sum over the axes (integers widen to 64 bits).", "sum", _sum, [_DTYPE])
_register("Mean", "Mean over the axes.", "mean", lambda self, x, axes, ws, m: _acc(x).mean(axis=axes), [_DTYPE])
_register("MeanSquare", "Mean of the squares over the axes.", "mean_square",
          lambda self, x, axes, ws, m: (_acc(x) ** 2).mean(axis=axes))
_register("RMS", "Root mean square over the axes.", "rms",
          lambda self, x, axes, ws, m: np.sqrt((_acc(x) ** 2).mean(axis=axes)))
_register("Min", "Minimum over the axes.", "min", lambda self, x, axes, ws, m: x.min(axis=axes))
_register("Max", "Maximum over the axes.", "max", lambda self, x, axes, ws, m: x.max(axis=axes))


def _central(self, x, axes, ws, members):
    """Mean squared deviation from the given mean (second input), with ddof."""
    mean_tl = contiguous(ws.inputs[1])
    reduced = tuple(1 if i + 1 in axes else s for i, s in enumerate(x.shape[1:]))
    want = int(np.prod(reduced))
    vols = mean_tl._volumes()
    if (vols[members] != want).any():
        i = int(members[np.nonzero(vols[members] != want)[0][0]])
        raise ValueError(f"{self.label}: the mean of sample {i} has {vols[i]} values; the reduced shape "
                         f"{reduced} has {want}")
    take = (mean_tl._offsets[members][:, None] + np.arange(want)).reshape(-1)
    mean = np.asarray(mean_tl._buf[take], np.float64).reshape((len(members),) + reduced)
    count = int(np.prod([x.shape[a] for a in axes]))
    dof = count - self.args["ddof"]
    if dof <= 0:
        raise ValueError(f"{self.label}: ddof={self.args['ddof']} leaves no degrees of freedom for "
                         f"{count} elements")
    return ((_acc(x) - mean) ** 2).sum(axis=axes) / dof


_DDOF = Arg("ddof", ArgType.INT, 0, doc="delta degrees of freedom")
_register("Variance", "Variance over the axes, given the mean (second input).", "variance", _central,
          [_DDOF], min_inputs=2)
_register("StdDev", "Standard deviation over the axes, given the mean (second input).", "std_dev",
          lambda self, x, axes, ws, m: np.sqrt(_central(self, x, axes, ws, m)), [_DDOF], min_inputs=2)
