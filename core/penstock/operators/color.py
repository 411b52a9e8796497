"""Colour operators: ``brightness_contrast``, ``brightness``, ``contrast``, ``hsv``, ``hue``,
``saturation``, ``color_twist`` and ``color_space_conversion``.

All of them are one per-sample affine map of the channel vector (``out = M @ in + offset``),
built for the whole batch by the engine and applied by one native call (``color_matrix``);
math in float, outputs rounded half away from zero and saturated.
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, DALIImageType, _is_float, to_numpy_type
from .._batch import contiguous

_LAYOUTS = ("HWC", "FHWC", "DHWC")


def _dtype_arg(default=None):
    if default is None:
        return Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: the input type)")
    return Arg("dtype", ArgType.DTYPE, default, doc="output type")


def type_max(t: DALIDataType) -> float:
    """The value that stands for 'full intensity': 1 for floats, the type's maximum for integers."""
    return 1.0 if _is_float(t) else float(np.iinfo(to_numpy_type(t)).max)


def half_range(t: DALIDataType) -> float:
    """Mid-grey: 0.5 for floats, (max + 1) / 2 for integers (128 for uint8)."""
    return 0.5 if _is_float(t) else (type_max(t) + 1) / 2


def apply_color_matrix(op: Operator, ws, matrices: np.ndarray, out_type: DALIDataType,
                       out_channels: int | None = None):
    """Runs the colour kernel: ``matrices`` is [N, Cout, Cin + 1] (the last column is the offset)."""
    src = contiguous(ws.inputs[0])
    if src.ndim() < 1:
        raise ValueError(f"{op.label}: expected images with a channel dimension")
    shapes = src._shapes
    if out_channels is not None:  # (the engine writes the column: numpy gave the GIL away for it)
        shapes = _engine.with_columns(shapes, shapes.shape[1] - 1, np.array([out_channels], np.int64))
    out = ws.new_batch(shapes, to_numpy_type(out_type), src._layout, src._source_info)
    ws.kernels.color_matrix(ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype),
                            out._buf, out._shapes, out._offsets, int(out_type),
                            np.ascontiguousarray(matrices, dtype=np.float32))
    return [out]


def _channels(op: Operator, src, expected: int | None = None) -> int:
    chans = {int(s[-1]) for s in src._shapes} if len(src) else {expected or 3}
    if len(chans) != 1 or (expected is not None and chans != {expected}):
        raise ValueError(f"{op.label}: expected {expected or 'the same number of'} channels "
                         f"(last dimension), got {sorted(chans)}")
    return chans.pop()


class _BrightnessContrastBase(Operator):
    """out = brightness_shift * out_max + brightness * (center + contrast * (in - center))."""

    def run(self, ws):
        src = ws.inputs[0]
        out_type = self.args["dtype"] if self.args.get("dtype") is not None else src.dtype
        n = ws.batch_size
        ones, zeros = np.ones(1), np.zeros(1)  # for every sample (a zeroed [N] gives numpy the GIL away)
        declared = self.schema.arguments  # brightness / contrast declare only their own args
        b = ws.per_sample("brightness", np.float64) if "brightness" in declared else ones
        shift = ws.per_sample("brightness_shift", np.float64) if "brightness_shift" in declared else zeros
        c = ws.per_sample("contrast", np.float64) if "contrast" in declared else ones
        if ws.has_arg("contrast_center"):
            center = ws.per_sample("contrast_center", np.float64)
        else:
            center = np.full(n, half_range(src.dtype))
        gain = b * c
        offset = shift * type_max(out_type) + b * center * (1 - c)
        matrices = _engine.scaled_identity_matrices(n, gain, offset, _channels(self, src))
        return apply_color_matrix(self, ws, matrices, out_type)


_BRIGHTNESS = Arg("brightness", ArgType.FLOAT, 1.0, tensor=True, doc="brightness multiplier")
_SHIFT = Arg("brightness_shift", ArgType.FLOAT, 0.0, tensor=True,
             doc="additive shift, as a fraction of the output type's maximum (1.0 for float)")
_CONTRAST = Arg("contrast", ArgType.FLOAT, 1.0, tensor=True, doc="contrast multiplier (0 = uniform grey)")
_CENTER = Arg("contrast_center", ArgType.FLOAT, optional=True, tensor=True,
              doc="intensity unaffected by contrast, in input units (default: half the input "
                  "type's range, 128 for uint8, 0.5 for float)")


@register(OpSchema("BrightnessContrast", "Adjusts brightness and contrast: out = brightness_shift * "
                   "out_max + brightness * (contrast_center + contrast * (in - contrast_center)).",
                   args=[_BRIGHTNESS, _SHIFT, _CONTRAST, _CENTER, _dtype_arg()],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class BrightnessContrast(_BrightnessContrastBase):
    pass


@register(OpSchema("Brightness", "Adjusts brightness: out = brightness_shift * out_max + brightness * in.",
                   args=[_BRIGHTNESS, _SHIFT, _dtype_arg()], devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class Brightness(_BrightnessContrastBase):
    pass


@register(OpSchema("Contrast", "Adjusts contrast: out = contrast_center + contrast * (in - contrast_center).",
                   args=[_CONTRAST, _CENTER, _dtype_arg()], devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class Contrast(_BrightnessContrastBase):
    pass


# ---- hue / saturation / value: a linear approximation in YIQ space -------------------------

RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114],
                       [0.596, -0.274, -0.321],
                       [0.211, -0.523, 0.311]])
# the exact inverse (not the rounded textbook one), so that hue 0 / saturation 1 is the identity
YIQ_TO_RGB = np.linalg.inv(RGB_TO_YIQ)


class _ColorTwistBase(Operator):
    """brightness * contrast * HSV(in) + brightness * (1 - contrast) * half_range."""

    def run(self, ws):
        src = ws.inputs[0]
        _channels(self, src, 3)  # image_type does not change the transform (as in DALI)
        out_type = self.args["dtype"] if self.args.get("dtype") is not None else src.dtype
        n = ws.batch_size

        def arg(name, default):
            return ws.per_sample(name, np.float64) if name in self.schema.arguments else np.full(n, default)

        hue, sat, val = arg("hue", 0.0), arg("saturation", 1.0), arg("value", 1.0)
        b, c = arg("brightness", 1.0), arg("contrast", 1.0)
        # per sample: to YIQ, the IQ (chroma) plane rotated by the hue and scaled by the saturation,
        # everything by the value, back to RGB
        matrices = _engine.hsv_matrices(n, hue, sat, val, b * c, b * (1 - c) * half_range(src.dtype), YIQ_TO_RGB,
                                        RGB_TO_YIQ)
        return apply_color_matrix(self, ws, matrices, out_type)


_HUE = Arg("hue", ArgType.FLOAT, 0.0, tensor=True, doc="hue rotation, degrees (additive)")
_SAT = Arg("saturation", ArgType.FLOAT, 1.0, tensor=True, doc="saturation multiplier (0 = grey)")
_IMAGE_TYPE = Arg("image_type", ArgType.IMAGE_TYPE, DALIImageType.RGB,
                  doc="colour space of the images; accepted, but the transform is the RGB one for any value")


@register(OpSchema("Hsv", "Changes hue (additive, degrees), saturation and value (multipliers) of RGB "
                   "images, approximated by a linear transform in RGB space.",
                   args=[_HUE, _SAT, Arg("value", ArgType.FLOAT, 1.0, tensor=True, doc="value multiplier"),
                         _dtype_arg(DALIDataType.UINT8)],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class Hsv(_ColorTwistBase):
    pass


@register(OpSchema("Hue", "Rotates the hue of RGB images (degrees).", args=[_HUE, _IMAGE_TYPE, _dtype_arg()],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class Hue(_ColorTwistBase):
    pass


@register(OpSchema("Saturation", "Scales the saturation of RGB images.", args=[_SAT, _IMAGE_TYPE, _dtype_arg()],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class Saturation(_ColorTwistBase):
    pass


@register(OpSchema("ColorTwist", "Hue, saturation, contrast and brightness in one linear colour transform.",
                   args=[_HUE, _SAT, _CONTRAST, _BRIGHTNESS, _IMAGE_TYPE, _dtype_arg()],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class ColorTwist(_ColorTwistBase):
    pass


# ---- colour-space conversion (BT.601) ------------------------------------------------------

# RGB -> YCbCr, "studio" range, for 8-bit values: Y in [16, 235], Cb/Cr in [16, 240].
_YCBCR_FROM_RGB = np.array([[65.481, 128.553, 24.966],
                            [-37.797, -74.203, 112.0],
                            [112.0, -93.786, -18.214]]) / 255.0
_YCBCR_OFFSET = np.array([16.0, 128.0, 128.0]) / 255.0  # as fractions of full range
_LUMA = np.array([[0.299, 0.587, 0.114]])
_BGR = np.eye(3)[::-1]


def _to_rgb(kind: DALIImageType) -> tuple[np.ndarray, np.ndarray]:
    """(matrix [3, Cin], offset [3] as a fraction of full range) taking ``kind`` to RGB."""
    if kind == DALIImageType.RGB:
        return np.eye(3), np.zeros(3)
    if kind == DALIImageType.BGR:
        return _BGR, np.zeros(3)
    if kind == DALIImageType.GRAY:
        return np.ones((3, 1)), np.zeros(3)
    inv = np.linalg.inv(_YCBCR_FROM_RGB)
    return inv, -inv @ _YCBCR_OFFSET


def _from_rgb(kind: DALIImageType) -> tuple[np.ndarray, np.ndarray]:
    if kind == DALIImageType.RGB:
        return np.eye(3), np.zeros(3)
    if kind == DALIImageType.BGR:
        return _BGR, np.zeros(3)
    if kind == DALIImageType.GRAY:
        return _LUMA, np.zeros(1)
    return _YCBCR_FROM_RGB, _YCBCR_OFFSET


def conversion_matrix(src: DALIImageType, dst: DALIImageType, full_range: float) -> np.ndarray:
    """[Cout, Cin + 1] for values where ``full_range`` is white (255 for uint8, 1 for float)."""
    a, a_off = _to_rgb(src)
    b, b_off = _from_rgb(dst)
    return np.concatenate([b @ a, ((b @ a_off + b_off) * full_range)[:, None]], axis=1)


_CSC_TYPES = (DALIImageType.RGB, DALIImageType.BGR, DALIImageType.GRAY, DALIImageType.YCbCr)


@register(OpSchema("ColorSpaceConversion", "Converts from one to another of RGB, BGR, GRAY (full-range BT.601 luma) "
                   "and YCbCr (BT.601, limited range).",
                   args=[Arg("image_type", ArgType.IMAGE_TYPE, doc="input colour space"),
                         Arg("output_type", ArgType.IMAGE_TYPE, doc="output colour space")],
                   devices=("cpu", "gpu"), input_layouts=_LAYOUTS), device=("cpu", "gpu"))
class ColorSpaceConversion(Operator):
    def run(self, ws):
        src, dst = self.args["image_type"], self.args["output_type"]
        for t in (src, dst):
            if t not in _CSC_TYPES:
                raise ValueError(f"{self.label}: unsupported colour space {t} "
                                 "(supported: RGB, BGR, GRAY, YCbCr)")
        if src == dst:
            raise ArgumentValueError(f"{self.label}: image_type and output_type are both {src.name}; "
                                     "a conversion to the same colour space is not supported")
        dtype = ws.inputs[0].dtype
        if dtype not in (DALIDataType.UINT8, DALIDataType.FLOAT):
            raise TypeError(f"{self.label}: input type {dtype} is not supported (UINT8 or FLOAT)")
        cin = 1 if src == DALIImageType.GRAY else 3
        _channels(self, ws.inputs[0], cin)
        m = conversion_matrix(src, dst, type_max(dtype))
        mats = np.broadcast_to(m, (ws.batch_size,) + m.shape)
        return apply_color_matrix(self, ws, mats, dtype, out_channels=m.shape[0])
