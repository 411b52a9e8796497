"""``crop_mirror_normalize``: fused crop + horizontal mirror + ``(x - mean) / std * scale + shift``
+ layout change (CHW by default) + type conversion, in one native pass
(the crop_mirror_normalize kernel of each device)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentTypeError, ArgumentValueError, OpSchema, register
from ..types import DALIDataType as T, to_numpy_type
from .._batch import contiguous, zero_rows
from .._image_layout import input_layout
from .crop import CROP_ARGS, WINDOW_LAYOUTS, crop_windows, per_channel, per_sample_list

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
        Arg("output_layout", ArgType.LAYOUT, "CHW",
            doc="a permutation of the input layout ('CHW' planar, 'HWC' interleaved, 'FCHW' ...)"),
        Arg("pad_output", ArgType.BOOL, False,
            doc="append one channel: its fill value under the 'pad' policy (the last or only one), else 0")],
    devices=("cpu", "gpu"), input_layouts=WINDOW_LAYOUTS)


def output_order(requested: str, in_layout: str, interleaved: str) -> tuple[int, list | None]:
    """Where the kernel puts the channel of the channel-last ``interleaved`` layout, and the
    permutation of the kernel's output that gives ``requested`` (None: the kernel's output is it).
    The kernel moves the channel anywhere, keeping the other dims in order; other orders of the
    dims are a transposition after it."""
    if sorted(requested) != sorted(in_layout):
        raise ValueError("The requested output layout is not a permutation of input layout. "
                         f"(output_layout '{requested}', input layout '{in_layout}')")
    rest = interleaved[:-1]
    if requested.replace("C", "") == rest:
        return requested.index("C"), None
    return len(interleaved) - 1, [interleaved.index(c) for c in requested]


def _transposed(ws, src, perm: list, layout: str):
    out = ws.new_batch(src._shapes[:, perm], src._buf.dtype, layout, src._source_info)
    ws.kernels.transpose(ws.pool, src._buf, src._shapes, src._offsets, perm, out._buf, out._shapes, out._offsets)
    return out


class NormalizePlan(NamedTuple):
    """A batch's crop_mirror_normalize, planned from its samples' shapes (``CropMirrorNormalize.plan``)."""
    dtype: T
    out_layout: str
    out_shapes: np.ndarray
    anchors: np.ndarray  # [N, nd - 1]: the windows' starts in the spatial dims
    windows: np.ndarray  # [N, nd]: the windows' shapes (channels whole)
    mirror: np.ndarray  # [N] uint8
    fill: np.ndarray  # per output channel
    mean: np.ndarray  # [N, C]
    std: np.ndarray  # [N, C]
    pad: bool


@register(CMN, device=("cpu", "gpu"))
class CropMirrorNormalize(Operator):
    pairs_iterations = True
    _constant_normalization: tuple | None = None  # (batch size, channels, pad) and what _normalization gave for it
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        in_layout = input_layout(self, src)
        layout = in_layout.replace("C", "") + "C"
        cdim, after = output_order(self.args["output_layout"], in_layout, layout)
        if layout != in_layout:  # planar input: the kernel reads channel-last samples
            src = _transposed(ws, src, [in_layout.index(c) for c in layout], layout)
        plan = self.plan(ws, src._shapes, layout, src.dtype, cdim)
        out = ws.new_batch(plan.out_shapes, to_numpy_type(plan.dtype), plan.out_layout, src._source_info)
        ws.kernels.crop_mirror_normalize(
            ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype), out._buf, out._shapes, out._offsets,
            int(plan.dtype), plan.anchors, plan.mirror, plan.mean, plan.std, float(self.args["scale"]),
            float(self.args["shift"]), plan.fill, cdim, plan.pad)
        return [out if after is None else _transposed(ws, out, after, self.args["output_layout"])]

    def plan(self, ws, shapes: np.ndarray, layout: str, in_type: T, cdim: int) -> "NormalizePlan":
        """What normalizing channel-last samples of ``shapes`` (``layout``) takes, the channels put
        at ``cdim`` of the output."""
        if in_type not in IN_TYPES:
            raise TypeError(f"{self.label}: input type {in_type.name} is not supported "
                            f"(use {', '.join(t.name for t in IN_TYPES)})")
        dtype = self.args["dtype"]
        if dtype not in OUT_TYPES:
            raise ArgumentTypeError(f"{self.label}: output type {dtype.name} is not supported "
                                    f"(use {', '.join(t.name for t in OUT_TYPES)})")
        n, nd = shapes.shape
        channels = set(shapes[:, -1].tolist())
        if len(channels) > 1:
            raise ValueError(f"{self.label}: all samples need the same number of channels, got {sorted(channels)}")
        c = channels.pop() if channels else 0
        anchors, windows = crop_windows(ws, shapes, layout)
        # whole samples (no crop) start at the shared zeros: no copy of a batch's table
        spatial_anchors = (zero_rows(n, nd - 1) if anchors is zero_rows(n, nd)
                           else _engine.with_columns(zero_rows(n, nd - 1), 0, anchors, 0, nd - 1))
        out_layout = layout[:-1][:cdim] + "C" + layout[:-1][cdim:]
        pad = bool(self.args["pad_output"])
        if cdim == nd - 1:  # channels last, as they come: the windows with the padded channel count
            out_shapes = _engine.with_columns(windows, nd - 1, np.array([c + pad], np.int64))
        else:  # the sizes from cdim on move one column right for the channels (numpy's insert gave the GIL away)
            shifted = _engine.with_columns(windows, cdim + 1, windows, cdim, nd - 1 - cdim)
            out_shapes = _engine.with_columns(shifted, cdim, np.array([c + pad], np.int64))
        fill, mean, std = self._normalization(ws, c, pad, dtype)
        mirror = (ws.per_sample("mirror", np.int64) != 0).astype(np.uint8)
        return NormalizePlan(dtype, out_layout, out_shapes, spatial_anchors, windows, mirror, fill, mean, std, pad)

    def _normalization(self, ws, c: int, pad: bool, dtype) -> tuple:
        """The fill values (one per output channel) and per-sample means and deviations [N, c]; worked
        out once while they are constants (no argument inputs) and the batch keeps its size and channels."""
        constant = "mean" not in ws.arg_inputs and "std" not in ws.arg_inputs
        key = (ws.batch_size, c, pad)
        cached = self._constant_normalization
        if constant and cached is not None and cached[0] == key:
            return cached[1]
        # only the 'pad' policy fills: one value for every output channel, or one per output channel;
        # with a per-channel mean or std (as in DALI) fewer may be given, the rest being 0 (3 values
        # for the 4 channels of pad_output). The pad_output channel takes its value everywhere (0
        # under the other policies).
        fill = np.asarray(self.args["fill_values"], np.float32)
        if self.args["out_of_bounds_policy"] != "pad" or fill.size == 0:
            fill = np.zeros(1, np.float32)
        per_channel_norm = max(per_sample_list(ws, "mean").shape[1], per_sample_list(ws, "std").shape[1]) > 1
        if fill.size > c + pad or (fill.size not in (1, c + pad) and not per_channel_norm):
            raise ArgumentValueError(f"{self.label}: The number of per-channel arguments should match the number of "
                                     f"channels in the output slice: 'fill_values' has {fill.size} values for "
                                     f"{c + pad} output channels")
        if np.dtype(to_numpy_type(dtype)).kind in "iu":  # DALI cuts fill values toward zero
            fill = np.trunc(fill)
        fill = np.ascontiguousarray(np.broadcast_to(fill, (c + pad,)) if fill.size == 1 else
                                    np.pad(fill, (0, c + pad - fill.size)))
        mean = np.ascontiguousarray(per_channel(ws, "mean", c, spare=int(pad)))
        std = np.ascontiguousarray(per_channel(ws, "std", c, spare=int(pad)))
        if (std == 0).any():
            raise ValueError(f"{self.label}: 'std' must not contain zeros")
        if constant:
            self._constant_normalization = (key, (fill, mean, std))
        return fill, mean, std
