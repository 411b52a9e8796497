"""``normalize``: (x - mean) / stddev * scale + shift, with statistics computed per sample (or over
the batch) along chosen axes unless given."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, to_numpy_type
from ._batch import empty_batch
from .cast import cast_batch

NORMALIZE = OpSchema(
    "Normalize", "Normalizes to zero mean and unit deviation along the reduction axes, then scales and shifts.",
    args=[Arg("axes", ArgType.INT_LIST, optional=True, doc="reduction axes (default: all)"),
          Arg("axis_names", ArgType.LAYOUT, optional=True, doc="reduction axes by layout letter"),
          Arg("mean", ArgType.FLOAT, optional=True, tensor=True, doc="mean to use instead of computing it"),
          Arg("stddev", ArgType.FLOAT, optional=True, tensor=True, doc="deviation to use instead of computing it"),
          Arg("batch", ArgType.BOOL, False, doc="compute the statistics over the whole batch"),
          Arg("ddof", ArgType.INT, 0, doc="delta degrees of freedom of the variance"),
          Arg("epsilon", ArgType.FLOAT, 0.0, doc="added to the variance before the square root"),
          Arg("scale", ArgType.FLOAT, 1.0, doc="multiplies the normalized value"),
          Arg("shift", ArgType.FLOAT, 0.0, doc="added after scaling"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT, doc="output type")],
    devices=("cpu",))


def _restore(stat: np.ndarray, axes: tuple) -> np.ndarray:
    """Batch statistics of the kept axes, with the reduced axes back as unit dimensions."""
    return np.expand_dims(stat, axes) if axes else stat


@register(NORMALIZE)
class NormalizeCPU(Operator):
    def _axes(self, layout: str, ndim: int) -> tuple[int, ...]:
        if self.args["axis_names"]:
            missing = [c for c in self.args["axis_names"] if c not in layout]
            if missing:
                raise ValueError(f"{self.label}: axis_names {missing} are not in the layout '{layout}'")
            return tuple(layout.index(c) for c in self.args["axis_names"])
        if self.args["axes"] is not None:
            axes = tuple(a % max(ndim, 1) for a in self.args["axes"])
            if any(not -ndim <= a < ndim for a in self.args["axes"]):
                raise ValueError(f"{self.label}: axes {list(self.args['axes'])} are out of range for {ndim}-D input")
            return axes
        return tuple(range(ndim))

    def _given(self, ws, name: str, stats_shape: tuple, n: int):
        """A given mean/stddev as an array broadcastable to [N, *sample] (per sample or constant)."""
        if name in ws.arg_inputs:
            tl = ws.arg_inputs[name]
            arrs = [tl._sample_array(i).astype(np.float64) for i in range(n)]
            return [a.reshape(stats_shape) if a.size == int(np.prod(stats_shape)) else a for a in arrs]
        value = self.args[name]
        return None if value is None else [np.float64(value)] * n

    def run(self, ws):
        src = ws.inputs[0]
        n, ndim = len(src), src.ndim()
        axes = self._axes(src._layout, ndim)
        samples = [src._sample_array(i).astype(np.float64) for i in range(n)]
        a = self.args
        means = self._given(ws, "mean", (), n)
        stds = self._given(ws, "stddev", (), n)
        if a["batch"]:
            kept = [tuple(s.shape[d] for d in range(ndim) if d not in axes) for s in samples]
            if len(set(kept)) > 1:
                raise ValueError(f"{self.label}: batch=True needs equal extents on the non-reduced axes")
            # every sample's reduced elements stacked on axis 0: [total, *kept]
            joined = np.concatenate([np.moveaxis(s, axes, range(len(axes))).reshape((-1,) + kept[0])
                                     for s in samples])
            m = joined.mean(axis=0) if means is None else means[0]
            if stds is None:
                var = ((joined - m) ** 2).sum(axis=0) / max(joined.shape[0] - a["ddof"], 1) + a["epsilon"]
                stds = [_restore(np.sqrt(var), axes)] * n
            if means is None:
                means = [_restore(m, axes)] * n
        else:
            if means is None:
                means = [s.mean(axis=axes, keepdims=True) for s in samples]
            if stds is None:
                stds = []
                for s, m in zip(samples, means):
                    count = int(np.prod([s.shape[d] for d in axes])) if axes else 1
                    var = ((s - m) ** 2).sum(axis=axes, keepdims=True) / max(count - a["ddof"], 1)
                    stds.append(np.sqrt(var + a["epsilon"]))
        out = empty_batch(src._shapes, np.float32, src._layout)
        for i, s in enumerate(samples):
            with np.errstate(divide="ignore", invalid="ignore"):
                value = (s - means[i]) / stds[i] * a["scale"] + a["shift"]
            out._sample_array(i)[...] = value
        if a["dtype"] != DALIDataType.FLOAT:
            return [cast_batch(ws, out, a["dtype"])]
        return [out]
