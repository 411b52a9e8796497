"""``random_resized_crop``: a random window (area fraction and aspect ratio drawn per sample, the
Inception-style algorithm of ``decoders.image_random_crop``, reused from there) resized to ``size``;
``random_crop_generator`` gives such windows as outputs, ``roi_random_crop`` windows of a given
shape placed at random around a region of interest."""
from __future__ import annotations

import math

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from .._batch import contiguous, zero_rows
from ..tensors import TensorListCPU
from .crop import layout_of, per_sample_list
from .image_decode import random_crop_windows
from .resize import FILTER_ARGS, filters, resize_batch, spatial_layout

WINDOW_ARGS = [
    Arg("random_area", ArgType.FLOAT_LIST, (0.08, 1.0), doc="range of the window's area fraction"),
    Arg("random_aspect_ratio", ArgType.FLOAT_LIST, (0.75, 1.333333), doc="range of the window's w/h"),
    Arg("num_attempts", ArgType.INT, 10, doc="draws before falling back to the whole (clamped) image"),
]


def _round(x: float) -> int:
    return int(math.floor(x + 0.5))


def check_window_args(op) -> tuple[tuple[float, float], tuple[float, float], int]:
    area, ratio, attempts = op.args["random_area"], op.args["random_aspect_ratio"], op.args["num_attempts"]
    area = (area[0], area[0]) if len(area) == 1 else tuple(area)
    ratio = (ratio[0], ratio[0]) if len(ratio) == 1 else tuple(ratio)
    # an area above 1 is allowed: draws that do not fit the image count as failed attempts
    if len(area) != 2 or not 0 < area[0] <= area[1]:
        raise ValueError(f"{op.label}: random_area must be [min, max] with 0 < min <= max")
    if len(ratio) != 2 or not 0 < ratio[0] <= ratio[1]:
        raise ValueError(f"{op.label}: random_aspect_ratio must be [min, max] with 0 < min <= max")
    return area, ratio, max(attempts, 0)  # no attempts: straight to the whole-image fallback


RRC = OpSchema(
    "RandomResizedCrop", "Crops a random window (random area and aspect ratio) and resizes it to `size`.",
    args=[Arg("size", ArgType.FLOAT_LIST, doc="output size (h, w)")] + WINDOW_ARGS + FILTER_ARGS,
    devices=("cpu", "gpu"), is_random=True)


@register(RRC, device=("cpu", "gpu"))
class RandomResizedCrop(Operator):
    def setup(self):
        self.window_args = check_window_args(self)
        size = self.args["size"]
        size = (size[0], size[0]) if len(size) == 1 else tuple(size)
        if len(size) != 2 or min(size) <= 0:
            raise ValueError(f"{self.label}: size must be (h, w) with positive values")
        self.size = tuple(_round(v) for v in size)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = layout_of(src)
        letters, first, _ = spatial_layout(self, layout, src.ndim())
        if letters != "HW":
            raise ValueError(f"{self.label}: expects images or sequences of images, got layout '{layout}'")
        # the images' heights and widths, their windows' regions and the one output size without the
        # [N, k] numpy tables on which a pipeline thread gives the GIL away
        hw = src._shapes if first == 0 else _engine.with_columns(zero_rows(len(src), 2), 0, src._shapes, first, 2)
        rois = _engine.window_regions(random_crop_windows(ws.rng, hw, *self.window_args))
        minf, magf = filters(ws)
        return [resize_batch(ws, src, layout, np.array(self.size, np.int64), rois, minf, magf, self.args["antialias"],
                             self.args["dtype"])]


# ---- crop windows as outputs ------------------------------------------------------------------

RANDOM_CROP_GENERATOR = OpSchema(
    "RandomCropGenerator",
    "A random crop window (area fraction and aspect ratio drawn as random_resized_crop draws them) for each input "
    "shape (a 1-D HW or HWC tensor of integers): outputs the window's anchor and shape (H, W), int32.",
    args=WINDOW_ARGS, num_outputs=2, is_random=True)


@register(RANDOM_CROP_GENERATOR)
class RandomCropGenerator(Operator):
    def setup(self):
        self.window_args = check_window_args(self)

    def run(self, ws):
        shapes = contiguous(ws.inputs[0])
        if shapes.ndim() != 1 or not ((shapes._shapes[:, 0] == 2) | (shapes._shapes[:, 0] == 3)).all():
            raise RuntimeError(f"{self.label}: expects a 1-D tensor of 2 or 3 values per sample (an HW or HWC shape)")
        if shapes._buf.dtype.kind not in "iu":
            raise RuntimeError(f"{self.label}: the shapes must be integers, got {shapes.dtype.name}")
        n = len(shapes)
        hw = np.stack([shapes._buf[shapes._offsets], shapes._buf[shapes._offsets + 1]], axis=1).astype(np.int64)
        win = random_crop_windows(ws.rng, hw, *self.window_args)
        return [TensorListCPU(win[:, :2].astype(np.int32).reshape(n, 2)),
                TensorListCPU(win[:, 2:].astype(np.int32).reshape(n, 2))]


ROI_RANDOM_CROP = OpSchema(
    "ROIRandomCrop",
    "A crop window of crop_shape placed at random so that it holds as much of the region of interest as it can "
    "(inside the ROI when the ROI is larger), within in_shape or the input's shape when given: outputs its start "
    "(int64).",
    args=[Arg("crop_shape", ArgType.INT_LIST, tensor=True, doc="the window's shape"),
          Arg("roi_start", ArgType.INT_LIST, tensor=True, doc="ROI start"),
          Arg("roi_end", ArgType.INT_LIST, optional=True, tensor=True, doc="ROI end (or roi_shape)"),
          Arg("roi_shape", ArgType.INT_LIST, optional=True, tensor=True, doc="ROI shape (or roi_end)"),
          Arg("in_shape", ArgType.INT_LIST, optional=True, tensor=True, doc="the shape of the data to crop")],
    min_inputs=0, max_inputs=1, is_random=True, fn_name="roi_random_crop")


@register(ROI_RANDOM_CROP)
class ROIRandomCrop(Operator):
    def setup(self):
        if self.given("roi_end") == self.given("roi_shape"):
            raise ArgumentValueError(f"{self.label}: Either ROI end or ROI shape should be defined, but not both")

    def _vector(self, ws, name: str, k: int | None) -> np.ndarray:
        v = per_sample_list(ws, name, np.int64)
        if k is not None and v.shape[1] == 1:  # one value for every dimension
            v = np.repeat(v, k, axis=1)
        if k is not None and v.shape[1] != k:
            raise ValueError(f"{self.label}: '{name}' needs {k} values, got {v.shape[1]}")
        return v.astype(np.int64)

    def _check(self, crop: np.ndarray, start: np.ndarray, end: np.ndarray, bounds: np.ndarray | None) -> None:
        """The refusals in DALI's words, each at its first (sample, dim)."""
        def first(bad: np.ndarray) -> tuple[int, int] | None:
            at = np.argwhere(bad)
            return (int(at[0][0]), int(at[0][1])) if at.size else None

        if bounds is not None and (at := first(bounds < 0)):
            raise ArgumentValueError(f"{self.label}: Input shape can't be negative. Got {bounds[at]} for d={at[1]}")
        if at := first(crop < 0):
            raise ArgumentValueError(f"{self.label}: Crop shape can't be negative. Got {crop[at]} for d={at[1]}")
        if bounds is None:
            return
        if at := first((start < 0) | (end > bounds)):
            raise ArgumentValueError(f"{self.label}: ROI can't be out of bounds. Got roi_start[{start[at]}], "
                                     f"roi_end[{end[at]}], sample_shape[{bounds[at]}], for d={at[1]}")
        if at := first(crop > bounds):
            raise ArgumentValueError(f"{self.label}: Cropping shape can't be bigger than the input shape. Got: "
                                     f"crop_shape[{crop[at]}] and sample_shape[{bounds[at]}] for d={at[1]}")

    def run(self, ws):
        crop = self._vector(ws, "crop_shape", None)
        k = crop.shape[1]
        start = self._vector(ws, "roi_start", k)
        end = self._vector(ws, "roi_end", k) if ws.has_arg("roi_end") else start + self._vector(ws, "roi_shape", k)
        bounds = None
        if ws.inputs:
            if ws.has_arg("in_shape"):
                raise ArgumentValueError(f"{self.label}: ``in_shape`` argument is incompatible with providing an "
                                         "input.")
            bounds = ws.inputs[0]._shapes[:, :k].astype(np.int64)
        elif ws.has_arg("in_shape"):
            bounds = self._vector(ws, "in_shape", k)
        self._check(crop, start, end, bounds)
        # a window inside a larger ROI, or a ROI inside a larger window
        lo = np.where(end - start >= crop, start, end - crop)
        hi = np.where(end - start >= crop, end - crop, start)
        if bounds is not None:
            lo, hi = np.clip(lo, 0, bounds - crop), np.clip(hi, 0, bounds - crop)
        anchors = lo + np.floor(ws.rng.uniform(0, 1, lo.shape) * (hi - lo + 1)).astype(np.int64)
        return [TensorListCPU(np.minimum(anchors, hi).reshape(-1, k))]
