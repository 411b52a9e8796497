"""``gaussian_blur``: separable Gaussian filter over the spatial axes, reflect-101 borders."""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import to_numpy_type
from .._batch import contiguous
from .._image_layout import as_outer_spatial_channels, convolution_axes

GAUSSIAN_BLUR = OpSchema(
    "GaussianBlur",
    "Blurs with a Gaussian kernel along every spatial axis (frames and channels are not blurred); "
    "borders reflect without repeating the edge (reflect 101).",
    args=[Arg("sigma", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="standard deviation, one value or one per spatial axis (0: from window_size)"),
          Arg("window_size", ArgType.INT_LIST, optional=True, tensor=True,
              doc="odd window size, one value or one per spatial axis (0: 2*ceil(3*sigma)+1)"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: the input type)")],
    devices=("cpu", "gpu"))


def _per_axis(ws, name: str, count: int, dtype) -> np.ndarray:
    """[N, count], or [1, count] for every sample: one value broadcast to every axis, or one per axis;
    zeros when not given."""
    if not ws.has_arg(name):
        return np.zeros((1, count), dtype)
    if name in ws.arg_inputs and (ws.arg_inputs[name]._volumes() == 1).all():
        return np.repeat(ws.per_sample(name, dtype)[:, None], count, axis=1)
    return ws.per_sample(name, dtype, count)


def resolve_windows(ws, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The sigmas (float32) and odd window sizes [N, count], each pair's missing half filled in as DALI
    does (by the engine: numpy's checks of the [N, k] tables gave the GIL away a dozen times)."""
    sigma, window = _per_axis(ws, "sigma", count, np.float64), _per_axis(ws, "window_size", count, np.int64)
    try:
        return _engine.blur_windows(ws.batch_size, sigma, window)
    except ValueError as exc:
        raise ArgumentValueError(f"{ws.op.label}: {exc}") from None


@register(GAUSSIAN_BLUR, device=("cpu", "gpu"))
class GaussianBlur(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, k = convolution_axes(self.label, src._layout, src.ndim())
        sigma, window = resolve_windows(ws, k)
        out_type = self.args["dtype"] if self.args["dtype"] is not None else src.dtype
        out = ws.new_batch(src._shapes, to_numpy_type(out_type), src._layout, src._source_info)
        kshapes = as_outer_spatial_channels(src._shapes, start, k)
        ws.kernels.gaussian_blur(ws.pool, src._buf, kshapes, src._offsets, int(src.dtype),
                                 out._buf, out._offsets, int(out_type), sigma, window)
        return [out]
