"""``normalize``: (x - mean) / stddev * scale + shift, with statistics computed per sample (or over
the batch) along chosen axes unless given."""
from __future__ import annotations

import contextlib

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType
from .._batch import contiguous
from .cast import cast_batch

NORMALIZE = OpSchema(
    "Normalize", "Normalizes to zero mean and unit deviation along the reduction axes, then scales and shifts.",
    args=[Arg("axes", ArgType.INT_LIST, optional=True, doc="reduction axes, 0..ndim-1 (default: all)"),
          Arg("axis_names", ArgType.LAYOUT, optional=True, doc="reduction axes by layout letter"),
          Arg("mean", ArgType.FLOAT, optional=True, tensor=True, doc="mean to use instead of computing it"),
          Arg("stddev", ArgType.FLOAT, optional=True, tensor=True, doc="deviation to use instead of computing it"),
          Arg("batch", ArgType.BOOL, False, doc="compute the statistics over the whole batch"),
          Arg("ddof", ArgType.INT, 0, doc="delta degrees of freedom of the variance"),
          Arg("epsilon", ArgType.FLOAT, 0.0, doc="added to the variance before the square root"),
          Arg("scale", ArgType.FLOAT, 1.0, doc="multiplies the normalized value"),
          Arg("shift", ArgType.FLOAT, 0.0, doc="added after scaling"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT, doc="output type")],
    devices=("cpu", "gpu"))


def _xp(ws):
    """The array module of the operator's device: numpy on the CPU, CuPy on the GPU."""
    return np if ws.gpu is None else ws.gpu.cp


def _on_device(ws):
    """Where array-module calls allocate: the pipeline's GPU (nothing to enter on the CPU)."""
    return contextlib.nullcontext() if ws.gpu is None else ws.gpu


def _broadcast_strides(shape: tuple, sample: np.ndarray) -> np.ndarray:
    """Element strides of an array of ``shape`` broadcast (numpy rules) against a sample of shape
    ``sample``: 0 where it is broadcast."""
    nd = len(sample)
    if len(shape) > nd or any(g not in (1, e) for g, e in zip(shape[::-1], sample[::-1])):
        raise ValueError(f"shape {tuple(shape)} does not broadcast against a sample of shape {tuple(sample)}")
    full = (1,) * (nd - len(shape)) + tuple(shape)
    strides = np.zeros(nd, np.int64)
    step = 1
    for d in range(nd - 1, -1, -1):
        strides[d] = step if full[d] > 1 else 0
        step *= full[d]
    return strides


@register(NORMALIZE, device=("cpu", "gpu"))
class Normalize(Operator):
    def setup(self):
        if self.args["axes"] is not None and self.args["axis_names"] is not None:
            raise ArgumentValueError(f"{self.label}: 'axes' and 'axis_names' are mutually exclusive")

    def _axes(self, layout: str, ndim: int) -> tuple[int, ...]:
        if self.args["axis_names"]:
            missing = [c for c in self.args["axis_names"] if c not in layout]
            if missing:
                raise ValueError(f"{self.label}: axis_names {missing} are not in the layout '{layout}'")
            return tuple(layout.index(c) for c in self.args["axis_names"])
        if self.args["axes"] is not None:
            if not self.args["axes"]:
                raise ValueError(f"{self.label}: axes is empty; it must name at least one reduction axis")
            # as DALI, negative axes are refused, not counted from the end
            if any(not 0 <= a < ndim for a in self.args["axes"]):
                raise ValueError(f"{self.label}: axes {list(self.args['axes'])} are out of range for {ndim}-D input "
                                 f"(valid: 0..{ndim - 1})")
            return tuple(self.args["axes"])
        return tuple(range(ndim))

    def _given(self, ws, name: str, stats_shape: tuple, n: int):
        """A given mean/stddev as an array broadcastable to [N, *sample] (per sample or constant)."""
        if name in ws.arg_inputs:
            tl = ws.arg_inputs[name]
            arrs = [tl._sample_array(i).astype(np.float64) for i in range(n)]
            return [a.reshape(stats_shape) if a.size == int(np.prod(stats_shape)) else a for a in arrs]
        value = self.args[name]
        return None if value is None else [np.float64(value)] * n

    # statistics with the reduction kernels (float64), then one element-wise kernel call; the same
    # plan on both devices (ws.kernels: the native engine or the CUDA kernels)
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        axes = self._axes(src._layout, src.ndim())
        a = self.args
        n = len(src)
        out = ws.new_batch(src._shapes, np.float32, src._layout, src._source_info)
        if n == 0:
            return [out if a["dtype"] == DALIDataType.FLOAT else cast_batch(ws, out, a["dtype"])]
        stat_shapes = src._shapes.copy()
        stat_shapes[:, list(axes)] = 1
        counts = src._shapes[:, list(axes)].prod(axis=1) if axes else np.ones(n, np.int64)
        if a["batch"] and len({tuple(np.delete(s, list(axes))) for s in src._shapes}) > 1:
            raise ValueError(f"{self.label}: batch=True needs equal extents on the non-reduced axes")
        vols = stat_shapes.prod(axis=1)
        layout = (np.zeros(n, np.int64), np.stack([_broadcast_strides(tuple(s), s) for s in stat_shapes]))
        layout[0][1:] = np.cumsum(vols[:-1])  # computed statistics: packed per sample
        given_mean = self._given(ws, "mean", (), n)
        if given_mean is None:
            mean = self._computed_mean(ws, src, axes, vols, layout, counts)
        else:
            mean = self._upload_given(ws, "mean", given_mean, src._shapes)
        given_std = self._given(ws, "stddev", (), n)
        if given_std is not None and a["epsilon"]:  # as DALI: epsilon joins a given deviation's square too
            given_std = [np.sqrt(np.square(v) + a["epsilon"]) for v in given_std]
        if given_std is None:
            around = mean if given_mean is None else self._given_mean_per_stat(ws, given_mean, stat_shapes, layout)
            stddev = self._computed_stddev(ws, src, axes, vols, layout, counts, around)
        else:
            stddev = self._upload_given(ws, "stddev", given_std, src._shapes)
        ws.kernels.normalize(ws.pool, src._buf, int(src.dtype), src._shapes, src._offsets, out._buf, out._offsets,
                             *mean, *stddev, a["scale"], a["shift"])
        return [out if a["dtype"] == DALIDataType.FLOAT else cast_batch(ws, out, a["dtype"])]

    def _upload_given(self, ws, name: str, arrays: list, shapes: np.ndarray) -> tuple:
        """Given statistics (host arrays broadcast against each sample) as (float64 buffer on the
        operator's device, offsets, strides)."""
        try:
            strides = np.stack([_broadcast_strides(np.shape(v), s) for v, s in zip(arrays, shapes)])
        except ValueError as exc:
            raise ValueError(f"{self.label}: argument '{name}': {exc}") from None
        sizes = np.array([np.size(v) for v in arrays], np.int64)
        offsets = np.zeros(len(arrays), np.int64)
        np.cumsum(sizes[:-1], out=offsets[1:])
        flat = np.concatenate([np.asarray(v, np.float64).reshape(-1) for v in arrays])
        return ws.device_array(flat), offsets, strides

    def _given_mean_per_stat(self, ws, arrays: list, stat_shapes: np.ndarray, layout: tuple) -> tuple:
        """A given mean laid out like computed statistics, for the deviation around it (the batch
        mode uses the first sample's)."""
        if self.args["batch"]:
            arrays = arrays[:1] * len(arrays)
        try:
            flat = np.concatenate([np.broadcast_to(np.asarray(v, np.float64), tuple(s)).reshape(-1)
                                   for v, s in zip(arrays, stat_shapes)])
        except ValueError:
            raise NotImplementedError(f"{self.label}: a given 'mean' that varies along the reduced axes needs "
                                      "a given 'stddev' too") from None
        return ws.device_array(flat), layout[0], layout[1]

    def _computed_mean(self, ws, src, axes, vols, layout, counts) -> tuple:
        xp = _xp(ws)
        with _on_device(ws):
            stats = xp.empty(int(vols.sum()), np.float64)
        if not self.args["batch"]:
            ws.kernels.reduce(ws.pool, 1, src._buf, src._shapes, src._offsets, axes, stats, layout[0])  # means
            return (stats,) + layout
        ws.kernels.reduce(ws.pool, 0, src._buf, src._shapes, src._offsets, axes, stats, layout[0])  # sums
        with _on_device(ws):  # every sample's sums of the same kept elements: one mean for the batch
            stats = xp.ascontiguousarray(xp.broadcast_to(stats.reshape(len(src), -1).sum(axis=0) / float(counts.sum()),
                                                         (len(src), int(vols[0])))).reshape(-1)
        return (stats,) + layout

    def _computed_stddev(self, ws, src, axes, vols, layout, counts, mean) -> tuple:
        a = self.args
        xp = _xp(ws)
        with _on_device(ws):
            var = xp.empty(int(vols.sum()), np.float64)
        # sum of squares / count around the mean, then divided by count - ddof (as DALI: a variance of 0
        # where that is not positive)
        ws.kernels.reduce(ws.pool, 6, src._buf, src._shapes, src._offsets, axes, var, layout[0], 0, mean[0], mean[1])
        with _on_device(ws):
            squares = var * xp.asarray(np.repeat(counts.astype(np.float64), vols))
            if a["batch"]:
                factor = int(counts.sum()) - a["ddof"]
                total = squares.reshape(len(src), -1).sum(axis=0) / factor if factor > 0 else \
                    xp.zeros(int(vols[0]), np.float64)
                std = xp.ascontiguousarray(xp.broadcast_to(xp.sqrt(total + a["epsilon"]),
                                                           (len(src), int(vols[0])))).reshape(-1)
            else:
                factors = np.repeat((counts - a["ddof"]).astype(np.float64), vols)
                std = xp.sqrt(squares / xp.asarray(np.maximum(factors, 1)) * xp.asarray(factors > 0) + a["epsilon"])
            # a computed deviation of 0 normalizes to 0 (DALI scales by 0, not 1/0): dividing by inf does
            std = xp.where(std == 0, xp.inf, std)
        return (std,) + layout
