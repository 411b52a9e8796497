"""``gaussian_blur``: separable Gaussian filter over the spatial axes, reflect-101 borders."""
from __future__ import annotations

import numpy as np

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
    """[N, count]: one value broadcast to every axis, or one per axis; zeros when not given."""
    if not ws.has_arg(name):
        return np.zeros((ws.batch_size, count), dtype)
    if name in ws.arg_inputs and (ws.arg_inputs[name]._volumes() == 1).all():
        return np.repeat(ws.per_sample(name, dtype)[:, None], count, axis=1)
    return ws.per_sample(name, dtype, count)


def resolve_windows(label: str, sigma: np.ndarray, window: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fills the missing half of each (sigma, window) pair as DALI does."""
    if not (np.isfinite(sigma).all() and np.isfinite(window).all()):
        raise ValueError(f"{label}: sigma and window_size must be finite")
    # the first (sample, axis) at fault, in DALI's order and words
    bad = np.argwhere((sigma < 0) | (window < 0) | ((sigma == 0) & (window == 0)))
    if bad.size:
        i, a = (int(v) for v in bad[0])
        if sigma[i, a] < 0:
            raise ArgumentValueError(f"{label}: `sigma` must have non-negative values, got {sigma[i, a]:g} for "
                                     f"sample: {i}, axis: {a}.")
        if window[i, a] < 0:
            raise ArgumentValueError(f"{label}: `window_size` must have non-negative values, got {window[i, a]} for "
                                     f"sample: {i}, axis : {a}.")
        raise ArgumentValueError(f"{label}: `sigma` and `window_size` shouldn't be 0 at the same time for sample: {i}, "
                                 f"axis: {a}.")
    window = np.where(window > 0, window, 2 * np.ceil(sigma * 3) + 1).astype(np.int64)
    if (window % 2 == 0).any():
        raise ArgumentValueError(f"{label}: Kernel window should have odd length, got: {window[window % 2 == 0][0]}.")
    radius = (window - 1) // 2
    sigma = np.where(sigma > 0, sigma, (radius - 1) * 0.3 + 0.8)  # OpenCV's rule
    return np.ascontiguousarray(sigma, np.float32), np.ascontiguousarray(window, np.int64)


@register(GAUSSIAN_BLUR, device=("cpu", "gpu"))
class GaussianBlur(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, k = convolution_axes(self.label, src._layout, src.ndim())
        sigma, window = resolve_windows(self.label, _per_axis(ws, "sigma", k, np.float64),
                                        _per_axis(ws, "window_size", k, np.int64))
        out_type = self.args["dtype"] if self.args["dtype"] is not None else src.dtype
        out = ws.new_batch(src._shapes, to_numpy_type(out_type), src._layout, src._source_info)
        kshapes = as_outer_spatial_channels(src._shapes, start, k)
        ws.kernels.gaussian_blur(ws.pool, src._buf, kshapes, src._offsets, int(src.dtype),
                                 out._buf, out._offsets, int(out_type), sigma, window)
        return [out]
