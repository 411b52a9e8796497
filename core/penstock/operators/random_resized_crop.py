"""``random_resized_crop``: a random window (area fraction and aspect ratio drawn per sample, the
Inception-style algorithm shared with ``decoders.image_random_crop``) resized to ``size``."""
from __future__ import annotations

import math

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ._batch import contiguous
from .crop import layout_of
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
    if len(area) != 2 or not 0 < area[0] <= area[1] <= 1:
        raise ValueError(f"{op.label}: random_area must be [min, max] with 0 < min <= max <= 1")
    if len(ratio) != 2 or not 0 < ratio[0] <= ratio[1]:
        raise ValueError(f"{op.label}: random_aspect_ratio must be [min, max] with 0 < min <= max")
    if attempts < 1:
        raise ValueError(f"{op.label}: num_attempts must be at least 1")
    return area, ratio, attempts


def random_crop_window(h: int, w: int, area, ratio, attempts: int, rng: np.random.Generator):
    """(y, x, ch, cw) of one random window inside an h x w image."""
    if h <= 0 or w <= 0:
        return 0, 0, h, w
    min_r, max_r = ratio
    log_lo, log_hi = math.log(min_r), math.log(max_r)
    total = h * w
    for _ in range(attempts):
        s = rng.uniform(area[0], area[1])
        r = math.exp(rng.uniform(log_lo, log_hi))
        cw = max(1, _round(math.sqrt(s * total * r)))
        ch = max(1, _round(math.sqrt(s * total / r)))
        if cw <= w and ch <= h and min_r <= cw / ch <= max_r:
            break
    else:  # whole image, aspect clamped to the range, shrunk to at most the maximum area
        cw, ch = w, h
        if w / h > max_r:
            cw = max(1, min(w, _round(h * max_r)))
        elif w / h < min_r:
            ch = max(1, min(h, _round(w / min_r)))
        limit = area[1] * total
        if cw * ch > limit:
            f = math.sqrt(limit / (cw * ch))
            cw, ch = max(1, _round(cw * f)), max(1, _round(ch * f))
    x = int(rng.integers(0, w - cw + 1))
    y = int(rng.integers(0, h - ch + 1))
    return y, x, ch, cw


RRC = OpSchema(
    "RandomResizedCrop", "Crops a random window (random area and aspect ratio) and resizes it to `size`.",
    args=[Arg("size", ArgType.FLOAT_LIST, doc="output size (h, w)")] + WINDOW_ARGS + FILTER_ARGS,
    devices=("cpu", "gpu"), is_random=True)


@register(RRC)
class RandomResizedCropCPU(Operator):
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
        rng = ws.rng
        rois = np.zeros((n, 4))
        for i in range(n):
            h, w = (int(v) for v in src._shapes[i, first:first + 2])
            y, x, ch, cw = random_crop_window(h, w, *self.window_args, rng)
            rois[i] = (y, x, y + ch, x + cw)
        minf, magf = filters(ws)
        out_sizes = np.tile(np.array(self.size, np.int64), (n, 1))
        return [resize_batch(ws, src, layout, out_sizes, rois, minf, magf, self.args["antialias"],
                             self.args["dtype"])]
