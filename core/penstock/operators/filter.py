"""Neighbourhood filters over the spatial axes: ``filter`` (correlation with a per-sample filter),
``laplacian`` (second derivatives by separable derivative and smoothing windows),
``experimental.median_blur``, ``experimental.erode`` and ``experimental.dilate``.

Frames and channel-first planes are merged into an outer extent, a trailing channel axis stays
last (``_image_layout.as_outer_spatial_channels``); the windows, anchors and scales are planned
here for the whole batch and one kernel call (one launch per pass on the GPU) does the rest.
"""
from __future__ import annotations

from math import comb

import numpy as np

from .._batch import contiguous
from .._image_layout import as_outer_spatial_channels, convolution_axes, split_layout
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, to_numpy_type

BORDERS = {"reflect_101": 0, "reflect_1001": 1, "wrap": 2, "clamp": 3, "constant": 4}
# erode/dilate's names (OpenCV's) for the same border modes
MORPHOLOGY_BORDERS = {"reflect_101": 0, "reflect": 1, "wrap": 2, "replicate": 3, "constant": 4}
FILTER_TYPES = (DALIDataType.UINT8, DALIDataType.INT8, DALIDataType.UINT16, DALIDataType.INT16,
                DALIDataType.FLOAT16, DALIDataType.FLOAT)
MAX_WINDOW = 31  # the Laplacian's largest window (DALI's and OpenCV's)

FILTER = OpSchema(
    "Filter",
    "Correlates each sample with its filter (input 1: a 2-D filter for images and videos, 3-D for volumes, "
    "float32) over the spatial axes; the optional input 2 is the value outside the sample for border='constant'.",
    args=[Arg("anchor", ArgType.INT_LIST, (-1,), tensor=True,
              doc="the filter position over each output point, per filter axis; -1: the middle (rounded down)"),
          Arg("border", ArgType.STR, "reflect_101", doc="reflect_101, reflect_1001, wrap, clamp or constant"),
          Arg("mode", ArgType.STR, "same", doc="'same': output of the input's size; 'valid': only positions where "
              "the whole filter lies inside the sample"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type: the input's (default) or FLOAT")],
    min_inputs=2, max_inputs=3, devices=("cpu", "gpu"), host_inputs=(2,), moved_from=("experimental",))

LAPLACIAN = OpSchema(
    "Laplacian",
    "The sum of the second partial derivatives along the spatial axes, each approximated by a derivative window "
    "along its axis and smoothing windows along the others (reflect-101 borders, float arithmetic).",
    args=[Arg("window_size", ArgType.INT_LIST, (3,), tensor=True,
              doc="derivative window size (odd, 3-31), one value or one per axis"),
          Arg("smoothing_size", ArgType.INT_LIST, optional=True, tensor=True,
              doc="smoothing window size (odd, 1-31) per axis; default: the derivative's window size"),
          Arg("scale", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="factor of each partial derivative, one value or one per axis (default 1)"),
          Arg("normalized_kernel", ArgType.BOOL, False,
              doc="scale each partial derivative by 2^(-s + n + 2), s its window sizes' sum, n the number of axes"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type: the input's (default) or FLOAT")],
    devices=("cpu", "gpu"))

_RANK_LAYOUTS = ("HW", "HWC", "FHWC", "CHW", "FCHW")
MEDIAN_BLUR = OpSchema(
    "experimental.MedianBlur", "Replaces each value with the median of its window (per channel; edges replicated).",
    args=[Arg("window_size", ArgType.INT_LIST, (3, 3), tensor=True, doc="window (H, W), or one value for both")],
    devices=("cpu", "gpu"), input_layouts=_RANK_LAYOUTS)


def _morphology_schema(name: str, doc: str) -> OpSchema:
    return OpSchema(
        f"experimental.{name}", doc,
        args=[Arg("mask_size", ArgType.INT_LIST, (3, 3), tensor=True,
                  doc="structuring element (width, height), as OpenCV's ksize"),
              Arg("anchor", ArgType.INT_LIST, (-1, -1), tensor=True,
                  doc="the element's anchor (x, y); -1: its centre"),
              Arg("iterations", ArgType.INT, 1, doc="times the operation is repeated"),
              Arg("border_mode", ArgType.STR, "constant",
                  doc="constant (outside points never win), replicate, reflect, reflect_101 or wrap")],
        devices=("cpu", "gpu"), input_layouts=_RANK_LAYOUTS)


ERODE = _morphology_schema("Erode", "Erosion: the minimum over the structuring element, per channel.")
DILATE = _morphology_schema("Dilate", "Dilation: the maximum over the structuring element, per channel.")


def _spatial(op: Operator, src) -> tuple[int, int]:
    start, count = split_layout(op.label, src._layout, src.ndim())
    return start, count


def _output_type(op: Operator, src) -> DALIDataType:
    if src.dtype not in FILTER_TYPES:
        raise TypeError(f"{op.label}: input type {src.dtype.name} is not supported "
                        f"({', '.join(t.name for t in FILTER_TYPES)})")
    dtype = op.args["dtype"] if op.args["dtype"] is not None else src.dtype
    if dtype not in (src.dtype, DALIDataType.FLOAT):
        raise ArgumentValueError(f"{op.label}: Output data type must be same as input, FLOAT or skipped (defaults to "
                                 f"input type); got {dtype.name} for {src.dtype.name} input")
    return dtype


def per_axis(op: Operator, ws, name: str, count: int, dtype=np.int64) -> np.ndarray:
    """[N, count]: a per-sample or constant argument with one value (for every axis) or ``count``."""
    if name in ws.arg_inputs:
        tl = ws.arg_inputs[name]
        vols = tl._volumes()
        if (vols == 1).all():
            return np.repeat(ws.per_sample(name, dtype)[:, None], count, axis=1)
        bad = np.nonzero((vols != 1) & (vols != count))[0]
        if bad.size:
            i = int(bad[0])
            raise ArgumentValueError(f"{op.label}: Argument {name} for sample {i} is expected to have 1 or {count} "
                                     f"elements, got: {int(vols[i])}")
        if (vols == 1).any():  # one value for every axis in some samples, one per axis in others
            rows = [np.resize(np.asarray(tl._sample_array(i), dtype).reshape(-1), count) for i in range(len(tl))]
            return np.stack(rows)
        return ws.per_sample(name, dtype, count)
    value = np.asarray(op.args[name], dtype).reshape(-1)
    if value.size not in (1, count):
        raise ArgumentValueError(f'{op.label}: Argument "{name}" expects either a single value or a list of {count} '
                                 f"elements. {value.size} given.")
    return np.broadcast_to(np.resize(value, count), (ws.batch_size, count)).copy()


@register(FILTER, device=("cpu", "gpu"))
class Filter(Operator):
    def setup(self):
        if self.args["border"] not in BORDERS:
            raise ValueError(f"{self.label}: unknown border '{self.args['border']}' ({', '.join(BORDERS)})")
        if self.args["mode"] not in ("same", "valid"):
            raise ValueError(f"{self.label}: unknown mode '{self.args['mode']}' (same, valid)")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        filters = contiguous(ws.inputs[1])
        out_type = _output_type(self, src)
        start, k = _spatial(self, src)
        if k not in (2, 3):
            raise ValueError(f"{self.label}: expects 2 or 3 spatial dimensions, the layout '{src._layout}' has {k}")
        n = len(src)
        if filters.dtype != DALIDataType.FLOAT:
            raise TypeError(f"{self.label}: filters must be FLOAT, got {filters.dtype.name}")
        if filters.ndim() != k:
            raise ValueError(f"{self.label}: the filters must have {k} dimensions (one per spatial axis) for "
                             f"'{src._layout or 'HW'}' input, got {filters.ndim()}")
        fshapes = filters._shapes.reshape(n, k)
        if (fshapes < 1).any():
            raise ValueError(f"{self.label}: filters must not be empty")
        shapes = as_outer_spatial_channels(src._shapes, start, k)
        valid = self.args["mode"] == "valid"
        if valid:
            anchors = np.zeros((n, k), np.int64)
            out_spatial = shapes[:, 1:1 + k] - fshapes + 1
            if (out_spatial < 0).any():
                bad = int(np.flatnonzero((out_spatial < 0).any(1))[0])
                raise ValueError(f"{self.label}: sample {bad}: in 'valid' mode the filter {tuple(fshapes[bad])} "
                                 f"must fit in the sample's spatial extents {tuple(shapes[bad, 1:1 + k])}")
        else:
            anchors = per_axis(self, ws, "anchor", k)
            anchors = np.where(anchors == -1, fshapes // 2, anchors)
            if ((anchors < 0) | (anchors >= fshapes)).any():
                raise ValueError(f"{self.label}: the anchor must lie within the filter ([0, extent - 1] per axis), "
                                 f"got {anchors[((anchors < 0) | (anchors >= fshapes)).any(1)][0].tolist()}")
            out_spatial = shapes[:, 1:1 + k]
        fill = np.zeros(n, np.float64)
        if len(ws.inputs) > 2:
            fills = contiguous(ws.inputs[2])
            if fills.dtype != src.dtype or (fills._volumes() != 1).any():
                raise ValueError(f"{self.label}: fill_value must be one scalar per sample of the input's type "
                                 f"({src.dtype.name})")
            fill = fills.as_array().astype(np.float64).reshape(n)
        out_full = src._shapes.copy()
        out_full[:, start:start + k] = out_spatial
        out = ws.new_batch(out_full, to_numpy_type(out_type), src._layout, src._source_info)
        out_shapes = shapes.copy()
        out_shapes[:, 1:1 + k] = out_spatial
        ws.kernels.filter(ws.pool, src._buf, shapes, src._offsets, int(src.dtype), out._buf, out_shapes,
                          out._offsets, int(out_type), filters._buf, fshapes, filters._offsets,
                          np.ascontiguousarray(anchors), BORDERS[self.args["border"]], fill)
        return [out]


def smoothing_window(size: int) -> np.ndarray:
    """Binomial coefficients: the smoothing window of ``size`` taps."""
    return np.array([comb(size - 1, m) for m in range(size)], np.float64)


def derivative_window(size: int) -> np.ndarray:
    """The second-derivative window of ``size`` taps: [1, -2, 1] smoothed by a binomial window."""
    return np.convolve([1.0, -2.0, 1.0], smoothing_window(size - 2))


def laplacian_windows(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For window sizes [N, k, k] (entry [i, a, b]: the window along axis b of sample i's partial
    derivative along axis a): the distinct windows back to back (float32) and where each entry's
    window starts ([N, k, k])."""
    k = grid.shape[1]
    keys = grid * 2 + np.eye(k, dtype=np.int64)[None]  # odd keys: derivative windows
    unique, inverse = np.unique(keys, return_inverse=True)
    table = [derivative_window(int(key) // 2) if key % 2 else smoothing_window(int(key) // 2) for key in unique]
    sizes = unique // 2
    starts = np.zeros(len(unique), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    windows = np.concatenate(table).astype(np.float32) if table else np.zeros(1, np.float32)
    return windows, starts[inverse.reshape(grid.shape)]


@register(LAPLACIAN, device=("cpu", "gpu"))
class Laplacian(Operator):
    def setup(self):
        if self.args["normalized_kernel"] and self.given("scale"):
            raise ArgumentValueError(f"{self.label}: Parameter ``scale`` cannot be specified when "
                                     "``normalized_kernel`` is set to True")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        out_type = _output_type(self, src)
        start, k = convolution_axes(self.label, src._layout, src.ndim())
        sizes = per_axis(self, ws, "window_size", k)
        _check_odd(self, "Window", sizes, 3)
        # partial derivative a smooths along axis b with smoothing_size[b], or its own window size
        if ws.has_arg("smoothing_size"):
            smoothing = per_axis(self, ws, "smoothing_size", k)
            _check_odd(self, "Smoothing window", smoothing, 1)
            grid = np.repeat(smoothing[:, None, :], k, axis=1)
        else:
            grid = np.repeat(sizes[:, :, None], k, axis=2)
        diagonal = np.eye(k, dtype=bool)[None]
        grid = np.ascontiguousarray(np.where(diagonal, sizes[:, :, None], grid), np.int64)
        windows, starts = laplacian_windows(grid)
        if self.args["normalized_kernel"]:
            scales = np.exp2(-grid.sum(axis=2) + k + 2.0)
        elif ws.has_arg("scale"):
            scales = per_axis(self, ws, "scale", k, np.float64)
        else:
            scales = np.ones((len(src), k))
        out = ws.new_batch(src._shapes, to_numpy_type(out_type), src._layout, src._source_info)
        ws.kernels.laplacian(ws.pool, src._buf, as_outer_spatial_channels(src._shapes, start, k), src._offsets,
                             int(src.dtype), out._buf, out._offsets, int(out_type), windows, grid, starts,
                             np.ascontiguousarray(scales, np.float32).reshape(len(src), k))
        return [out]


def _check_odd(op: Operator, what: str, sizes: np.ndarray, low: int) -> None:
    """Odd window sizes in [low, MAX_WINDOW]; ``what``: "Window" or "Smoothing window" (DALI's words)."""
    bad = np.argwhere((sizes < low) | (sizes > MAX_WINDOW) | (sizes % 2 == 0))
    if bad.size:
        i, a = (int(v) for v in bad[0])
        raise ArgumentValueError(f"{op.label}: {what} size must be an odd integer between {low} and {MAX_WINDOW}, "
                                 f"got {int(sizes[i, a])} for sample: {i}.")


class _RankFilter(Operator):
    """median_blur, erode, dilate: one 2-D window per sample over (outer, H, W, C) planes."""
    rank = 0
    window_arg = "window_size"

    def _border(self) -> int:
        return 3  # replicate

    def _iterations(self) -> int:
        return 1

    def _windows(self, ws) -> np.ndarray:
        """Per sample, the window's (height, width)."""
        return per_axis(self, ws, self.window_arg, 2)

    def _anchors(self, ws, windows: np.ndarray) -> np.ndarray:
        return windows // 2

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.dtype not in FILTER_TYPES:
            raise TypeError(f"{self.label}: input type {src.dtype.name} is not supported "
                            f"({', '.join(t.name for t in FILTER_TYPES)})")
        start, k = _spatial(self, src)
        if k != 2:
            raise ValueError(f"{self.label}: expects images (2 spatial dimensions), got layout '{src._layout}'")
        windows = self._windows(ws)
        if (windows < 1).any():
            raise ValueError(f"{self.label}: {self.window_arg} must be positive, got {windows[windows < 1][0]}")
        anchors = self._anchors(ws, windows)
        out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.rank_filter(ws.pool, src._buf, as_outer_spatial_channels(src._shapes, start, k), src._offsets,
                               out._buf, out._offsets, int(src.dtype), self.rank, windows, anchors, self._border(),
                               self._iterations())
        return [out]


@register(MEDIAN_BLUR, device=("cpu", "gpu"))
class MedianBlur(_RankFilter):
    rank = 0

    def run(self, ws):
        windows = per_axis(self, ws, "window_size", 2)
        if (windows % 2 == 0).any() or (windows < 1).any():
            raise ValueError(f"{self.label}: window_size must be odd and positive, got {windows[0].tolist()}")
        return super().run(ws)


class _Morphology(_RankFilter):
    window_arg = "mask_size"

    def setup(self):
        if self.args["border_mode"] not in MORPHOLOGY_BORDERS:
            raise ValueError(f"{self.label}: unknown border_mode '{self.args['border_mode']}' "
                             f"({', '.join(MORPHOLOGY_BORDERS)})")
        if self.args["iterations"] < 1:
            raise ValueError(f"{self.label}: iterations must be at least 1, got {self.args['iterations']}")

    def _border(self) -> int:
        return MORPHOLOGY_BORDERS[self.args["border_mode"]]

    def _iterations(self) -> int:
        return self.args["iterations"]

    # mask_size and anchor are (x, y), as CV-CUDA's morphology (which DALI 2.4 runs) and OpenCV's
    # ksize and anchor take them: the kernel's windows are (rows, columns)
    def _windows(self, ws) -> np.ndarray:
        return np.ascontiguousarray(per_axis(self, ws, "mask_size", 2)[:, ::-1])

    def _anchors(self, ws, windows: np.ndarray) -> np.ndarray:
        anchors = per_axis(self, ws, "anchor", 2)[:, ::-1]
        anchors = np.where(anchors == -1, windows // 2, anchors)
        if ((anchors < 0) | (anchors >= windows)).any():
            raise ValueError(f"{self.label}: the anchor must lie within the structuring element")
        return np.ascontiguousarray(anchors)


@register(ERODE, device=("cpu", "gpu"))
class Erode(_Morphology):
    rank = 1


@register(DILATE, device=("cpu", "gpu"))
class Dilate(_Morphology):
    rank = 2
