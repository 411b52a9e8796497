"""``debayer``: demosaicing of single-channel Bayer images (uint8 or uint16; sequences frame by frame)
into RGB, or into grey, with OpenCV's bilinear arithmetic (DALI's CPU algorithms bilinear_ocv and
gray_ocv). One native call or GPU launch per batch."""
from __future__ import annotations

import numpy as np

from .._batch import contiguous
from .._image_layout import input_layout
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType

ALGORITHMS = ("bilinear_ocv", "gray_ocv")
NOT_IMPLEMENTED = ("edgeaware_ocv", "vng_ocv", "default_npp")

DEBAYER = OpSchema(
    "Debayer",
    "Demosaics single-channel Bayer images (HW, HWC with one channel, FHW, FHWC) into RGB (HWC or FHWC): each "
    "pixel's missing colours are averages of its neighbours of those colours.",
    args=[Arg("blue_position", ArgType.INT_LIST, tensor=True,
              doc="(y, x) of blue in the 2 x 2 Bayer tile that starts at row 1, column 1: (0, 0) BGGR, (0, 1) GBRG, "
                  "(1, 0) GRBG, (1, 1) RGGB"),
          Arg("algorithm", ArgType.STR, optional=True,
              doc="bilinear_ocv (default) or gray_ocv (one grey channel); edgeaware_ocv, vng_ocv and default_npp "
                  "are not implemented")],
    devices=("cpu", "gpu"), input_layouts=("HW", "HWC", "FHW", "FHWC"), moved_from=("experimental",))


@register(DEBAYER, device=("cpu", "gpu"))
class Debayer(Operator):
    def setup(self):
        algorithm = self.args["algorithm"] or "bilinear_ocv"
        if algorithm in NOT_IMPLEMENTED:
            raise NotImplementedError(f"{self.label}: algorithm '{algorithm}' is not implemented "
                                      f"({', '.join(ALGORITHMS)} are)")
        if algorithm not in ALGORITHMS:
            raise ValueError(f"{self.label}: unknown algorithm '{algorithm}' "
                             f"({', '.join(ALGORITHMS + NOT_IMPLEMENTED)})")
        self.grey = algorithm == "gray_ocv"

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = input_layout(self, src)
        if src.dtype not in (DALIDataType.UINT8, DALIDataType.UINT16):
            raise RuntimeError(f"{self.label}: supported input types are UINT8 and UINT16, got {src.dtype.name}")
        n = len(src)
        shapes = src._shapes.reshape(n, src.ndim())
        if "C" in layout:
            if (shapes[:, -1] != 1).any():
                raise RuntimeError(f"{self.label}: Bayer images must have one channel, got {int(shapes[0, -1])}")
            shapes = shapes[:, :-1]
        odd = (shapes[:, -2:] % 2 != 0).any(axis=1)
        if odd.any():
            i = int(np.flatnonzero(odd)[0])
            raise RuntimeError(f"{self.label}: the height and width of Bayer images must be even; sample {i} is "
                               f"{shapes[i, -2]} x {shapes[i, -1]}")
        frames = shapes[:, 0] if layout.startswith("F") else np.ones(n, np.int64)
        planes = np.column_stack([frames, shapes[:, -2:]]).astype(np.int64)
        blue = ws.per_sample("blue_position", np.int64, 2)
        if ((blue < 0) | (blue > 1)).any():
            raise ValueError(f"{self.label}: blue_position must be (0 or 1, 0 or 1), got "
                             f"{blue[((blue < 0) | (blue > 1)).any(1)][0].tolist()}")
        channels = 1 if self.grey else 3
        out_layout = "FHWC" if layout.startswith("F") else "HWC"
        out_shapes = np.column_stack([shapes, np.full(n, channels, np.int64)])
        out = ws.new_batch(out_shapes, src._buf.dtype, out_layout, src._source_info)
        ws.kernels.debayer(ws.pool, src._buf, planes, src._offsets, int(src.dtype), out._buf, out._offsets,
                           blue.astype(np.int32), self.grey)
        return [out]
