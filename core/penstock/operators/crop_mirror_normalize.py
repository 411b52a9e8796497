"""``crop_mirror_normalize``: fused crop + horizontal mirror + ``(x - mean) / std * scale + shift``
+ layout change (CHW by default) + type conversion, in one native pass
(the crop_mirror_normalize kernel of each device)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentTypeError, ArgumentValueError, OpSchema, register
from ..types import DALIDataType as T, to_numpy_type
from .._batch import contiguous
from .crop import CROP_ARGS, crop_windows, layout_of, per_channel

IN_TYPES = (T.UINT8, T.INT16, T.UINT16, T.FLOAT)
OUT_TYPES = (T.UINT8, T.INT8, T.FLOAT16, T.FLOAT)  # DALI's: no INT16 / INT32 output

CMN = OpSchema(
    "CropMirrorNormalize",
    "Crops, optionally mirrors horizontally, normalizes per channel and changes layout and type in one pass.",
    args=CROP_ARGS + [
        Arg("mirror", ArgType.INT, 0, tensor=True, doc="1 = flip horizontally (per sample)"),
        Arg("mean", ArgType.FLOAT_LIST, (0.0,), tensor=True, doc="per-channel mean (or one for all)"),
        Arg("std", ArgType.FLOAT_LIST, (1.0,), tensor=True, doc="per-channel standard deviation (or one for all)"),
        Arg("scale", ArgType.FLOAT, 1.0, doc="multiplier applied after normalization"),
        Arg("shift", ArgType.FLOAT, 0.0, doc="added after scaling"),
        Arg("dtype", ArgType.DTYPE, T.FLOAT, aliases=("output_dtype",), ignored_aliases=("image_type",),
            doc="output type"),
        Arg("output_layout", ArgType.LAYOUT, "CHW", doc="'CHW' (planar) or 'HWC' (interleaved), or the full layout"),
        Arg("pad_output", ArgType.BOOL, False,
            doc="append one channel: its fill value under the 'pad' policy (the last or only one), else 0")],
    devices=("cpu", "gpu"))


def channel_placement(op, in_layout: str, requested: str) -> tuple[int, str]:
    """(output dim of the channel, output layout) for a channel-last input layout."""
    rest = in_layout[:-1]
    interleaved = in_layout
    first_spatial = next((i for i, c in enumerate(rest) if c in "DHW"), 0)
    planar = rest[:first_spatial] + "C" + rest[first_spatial:]
    if requested in ("", in_layout):
        return len(in_layout) - 1, interleaved
    if requested == planar:
        return first_spatial, planar
    # short forms ("CHW" / "HWC") for sequences and volumes: where C sits among the spatial dims
    spatial_req = "".join(c for c in requested if c in "DHWC")
    if sorted(requested) == sorted(spatial_req) and "C" in spatial_req:
        if spatial_req.endswith("C"):
            return len(in_layout) - 1, interleaved
        if spatial_req.startswith("C"):
            return first_spatial, planar
    raise ValueError(f"{op.label}: output_layout '{requested}' is not supported for input layout '{in_layout}' "
                     f"(use '{planar}' or '{interleaved}')")


@register(CMN, device=("cpu", "gpu"))
class CropMirrorNormalize(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = layout_of(src)
        if not layout.endswith("C") or not any(c in layout for c in "HW"):
            raise ValueError(f"{self.label}: expects channel-last images (HWC, FHWC, DHWC), got layout '{layout}'")
        if src.dtype not in IN_TYPES:
            raise TypeError(f"{self.label}: input type {src.dtype.name} is not supported "
                            f"(use {', '.join(t.name for t in IN_TYPES)})")
        dtype = self.args["dtype"]
        if dtype not in OUT_TYPES:
            raise ArgumentTypeError(f"{self.label}: output type {dtype.name} is not supported "
                                    f"(use {', '.join(t.name for t in OUT_TYPES)})")
        n, nd = src._shapes.shape
        channels = set(src._shapes[:, -1].tolist())
        if len(channels) > 1:
            raise ValueError(f"{self.label}: all samples need the same number of channels, got {sorted(channels)}")
        c = channels.pop() if channels else 0
        anchors, windows = crop_windows(ws, src, layout)
        cdim, out_layout = channel_placement(self, layout, self.args["output_layout"])
        pad = bool(self.args["pad_output"])
        out_shapes = np.insert(windows[:, :-1], cdim, c + pad, axis=1)
        # only the 'pad' policy fills, so only then must there be one value or one per output channel;
        # the pad_output channel takes its fill value everywhere (0 under the other policies)
        fill = np.asarray(self.args["fill_values"], np.float32)
        if self.args["out_of_bounds_policy"] != "pad" or fill.size == 0:
            fill = np.zeros(1, np.float32)
        if fill.size not in (1, c + pad):
            raise ArgumentValueError(f"{self.label}: 'fill_values' has {fill.size} values for {c + pad} output "
                                     "channels (give 1 or one per channel)")
        if np.dtype(to_numpy_type(dtype)).kind in "iu":  # DALI cuts fill values toward zero
            fill = np.trunc(fill)
        fill = np.ascontiguousarray(np.broadcast_to(fill, (c + pad,)))
        mean = per_channel(ws, "mean", c, spare=int(pad))
        std = per_channel(ws, "std", c, spare=int(pad))
        if (std == 0).any():
            raise ValueError(f"{self.label}: 'std' must not contain zeros")
        mirror = (ws.per_sample("mirror", np.int64) != 0).astype(np.uint8)
        out = ws.new_batch(out_shapes, to_numpy_type(dtype), out_layout, src._source_info)
        ws.kernels.crop_mirror_normalize(
            ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype), out._buf, out._shapes, out._offsets,
            int(dtype), np.ascontiguousarray(anchors[:, :-1]), mirror, np.ascontiguousarray(mean),
            np.ascontiguousarray(std), float(self.args["scale"]), float(self.args["shift"]), fill, cdim, pad)
        return [out]
