"""``clahe``: contrast limited adaptive histogram equalization of uint8 HWC images (OpenCV's
algorithm; RGB through the L of CIE Lab by default). One native call, or three GPU launches
(planes, tile tables, blending), per batch."""
from __future__ import annotations

import numpy as np

from .._batch import contiguous
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType

CLAHE = OpSchema(
    "Clahe",
    "Contrast limited adaptive histogram equalization: per-tile histograms clipped at clip_limit times the mean bin "
    "count, their tables blended bilinearly between tile centres. Grey (1 channel) or RGB (3 channels) uint8 HWC "
    "images; RGB is equalized through its luminance (the L of CIE Lab) unless luma_only=False.",
    args=[Arg("tiles_x", ArgType.INT, doc="number of tiles across"),
          Arg("tiles_y", ArgType.INT, doc="number of tiles down"),
          Arg("clip_limit", ArgType.FLOAT, doc="histogram clip level, relative to the mean count per bin"),
          Arg("bins", ArgType.INT, 256, doc="histogram bins (a power of 2; 256 for uint8)"),
          Arg("luma_only", ArgType.BOOL, True, doc="RGB: equalize the luminance only (else each channel)")],
    devices=("cpu", "gpu"), input_layouts=("HWC",))


@register(CLAHE, device=("cpu", "gpu"))
class Clahe(Operator):
    def setup(self):
        for name in ("tiles_x", "tiles_y"):
            if self.args[name] < 1:
                raise ValueError(f"{self.label}: {name} must be positive, got {self.args[name]}")
        bins = self.args["bins"]
        if bins < 1 or bins & (bins - 1):
            raise ValueError(f"{self.label}: bins must be a power of 2, got {bins}")
        if bins != 256:
            raise NotImplementedError(f"{self.label}: bins={bins}: only 256 bins (uint8 values) are supported")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.dtype != DALIDataType.UINT8 or src.ndim() != 3:
            raise RuntimeError(f"{self.label}: expects uint8 HWC images, got {src.dtype.name} with {src.ndim()} "
                               "dimensions")
        channels = src._shapes[:, 2]
        if ((channels != 1) & (channels != 3)).any():
            raise RuntimeError(f"{self.label}: images must have 1 or 3 channels, got {int(channels[(channels != 1) & (channels != 3)][0])}")
        n = len(src)
        tiles = np.tile(np.array([self.args["tiles_x"], self.args["tiles_y"]], np.int32), (n, 1))
        limits = np.full(n, self.args["clip_limit"], np.float32)
        out = ws.new_batch(src._shapes, np.uint8, src._layout, src._source_info)
        ws.kernels.clahe(ws.pool, src._buf, src._shapes, src._offsets, out._buf, out._offsets, tiles, limits,
                         self.args["luma_only"])
        return [out]
