"""``random_resized_crop``: a random window (area fraction and aspect ratio drawn per sample, the
Inception-style algorithm of ``decoders.image_random_crop``, reused from there) resized to ``size``."""
from __future__ import annotations

import math

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous
from .crop import layout_of
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
        n = len(src)
        win = random_crop_windows(ws.rng, src._shapes[:, first:first + 2], *self.window_args)
        rois = np.column_stack([win[:, :2], win[:, :2] + win[:, 2:]]).astype(np.float64)
        minf, magf = filters(ws)
        out_sizes = np.tile(np.array(self.size, np.int64), (n, 1))
        return [resize_batch(ws, src, layout, out_sizes, rois, minf, magf, self.args["antialias"],
                             self.args["dtype"])]
