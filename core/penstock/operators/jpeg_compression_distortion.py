"""``jpeg_compression_distortion``: JPEG artefacts by a libjpeg encode/decode round trip."""
from __future__ import annotations

import numpy as np

from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType
from .._batch import contiguous


@register(OpSchema(
    "JpegCompressionDistortion",
    "Encodes each image (or frame) as JPEG at `quality` and decodes it back (uint8, RGB or gray).",
    args=[Arg("quality", ArgType.INT, 50, tensor=True, doc="JPEG quality, 1-100 (values outside are clamped)")],
    devices=("cpu", "gpu"), input_layouts=("HWC", "FHWC")), device=("cpu", "gpu"))
class JpegCompressionDistortion(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.dtype != DALIDataType.UINT8:
            raise TypeError(f"{self.label}: input must be UINT8, got {src.dtype}")
        # out-of-range qualities are clamped (as libjpeg's quality scaling does), not rejected
        quality = np.clip(ws.per_sample("quality", np.int64), 1, 100)
        shapes = src._shapes if src.ndim() == 4 else np.column_stack(
            [np.ones(len(src), np.int64), src._shapes])
        bad = np.nonzero((shapes[:, 3] != 1) & (shapes[:, 3] != 3))[0]
        if len(bad):
            raise SampleError(int(bad[0]), f"{self.label}: expected 1 or 3 channels, got {shapes[bad[0], 3]}")
        out = ws.new_batch(src._shapes, np.uint8, src._layout, src._source_info)
        ws.kernels.jpeg_compression_distortion(ws.pool, src._buf, np.ascontiguousarray(shapes, np.int64),
                                               src._offsets, out._buf, out._offsets, quality)
        return [out]
