"""Colour transforms: grayscale conversion and colour jitter, with torchvision's formulas for tensor
images (its luma weights, blends, clamping and truncation to the integer type) and PIL's for PIL
images, on penstock's arithmetic and reductions; hue on penstock's hue kernel."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ...types import DALIDataType
from .. import dynamic as ndd
from ._base import Spec, Transform, probability
from ._params import Params


def _max_value(spec: Spec) -> float:
    """The brightest value of the images' type (1.0 for floats), as torchvision clamps to."""
    dtype = spec.dtype if spec.dtype is not None else np.dtype(np.uint8)
    return 1.0 if dtype.kind == "f" else float(np.iinfo(dtype).max)


def _is_float(spec: Spec) -> bool:
    return spec.dtype is not None and spec.dtype.kind == "f"


def _as_type(values: Any, P: Params, spec: Spec) -> Any:
    """Float values (clamped, non-negative) as the images' type: truncated for integer types, as
    torch's ``.to(dtype)`` does."""
    if _is_float(spec):
        return values
    dtype = ndd.dtype(spec.dtype or np.uint8).type_id
    return P.ops.cast(P.math.floor(values), dtype=dtype)


def luma(x: Any, P: Params, spec: Spec, exact_type: bool) -> Any:
    """The grayscale plane of RGB images: PIL's integer luma for PIL images (HWC uint8), torchvision's
    float weights for tensors (rounded down for integer types). ``exact_type``: in the images'
    type (else float, as torchvision's blends use it)."""
    r, g, b = (P.plane(x, c) for c in range(3))
    if spec.pil:
        i32 = DALIDataType.INT32
        ri, gi, bi = (P.ops.cast(v, dtype=i32) for v in (r, g, b))
        value = (ri * 19595 + gi * 38470 + bi * 7471 + 32768) >> 16
        return P.ops.cast(value, dtype=ndd.dtype(spec.dtype or np.uint8).type_id) if exact_type else value
    value = r * 0.2989 + g * 0.587 + b * 0.114
    if _is_float(spec):
        return value
    return _as_type(value, P, spec) if exact_type else P.math.floor(value)


class Grayscale(Transform):
    """RGB images as grayscale, of 1 or 3 (equal) channels."""

    def __init__(self, num_output_channels: int = 1, device: str = "cpu"):
        super().__init__(device)
        if num_output_channels not in (1, 3):
            raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}")
        self.num_output_channels = num_output_channels

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return gray(x, P, spec, self.num_output_channels)


def gray(x: Any, P: Params, spec: Spec, channels: int) -> Any:
    """``x`` as grayscale of ``channels`` channels (1-channel images are repeated, not converted)."""
    one = P.channels() == 1
    if P.concrete and bool(np.all(one)):
        plane = x
    else:
        plane = luma(x, P, spec, exact_type=True)
    return plane if channels == 1 else P.ops.cat(*[plane] * channels, axis=P.c_axis)


class RandomGrayscale(Transform):
    """Each image made grayscale (with as many channels as it has) with probability ``p``."""

    def __init__(self, p: float = 0.1, device: str = "cpu"):
        super().__init__(device)
        self.p = probability(p)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        chosen = P.arg(P.coin(self.p), "int32")
        blended = chosen * gray(x, P, spec, 3) + (1 - chosen) * x
        dtype = ndd.dtype(spec.dtype or np.uint8).type_id
        return P.ops.cast(blended, dtype=dtype)


def _range(value: Any, name: str, center: float, bound: tuple[float, float] | None) -> tuple[float, float] | None:
    """torchvision's jitter range of a factor: ``value`` +- around ``center``, or (min, max)."""
    if isinstance(value, numbers.Real):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative, got {value}")
        lo, hi = center - float(value), center + float(value)
        if name != "hue":
            lo = max(lo, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2, got {value!r}")
    if bound is not None and not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {(lo, hi)}")
    return None if lo == hi == center else (lo, hi)


class ColorJitter(Transform):
    """Brightness, contrast, saturation and hue, each by a factor drawn per image from its range.

    Brightness, contrast and saturation use torchvision's formulas for tensor images (blends with
    black, the mean grey and the grey image, clamped, truncated to the type). Hue is penstock's hue
    rotation (in YIQ, as DALI's), close to torchvision's HSV rotation but not equal. torchvision
    applies the four in a random order per call: the dynamic mode does too; a pipeline applies
    them in the order given (brightness, contrast, saturation, hue)."""

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0,
                 device: str = "cpu"):
        super().__init__(device)
        self.brightness = _range(brightness, "brightness", 1.0, (0.0, float("inf")))
        self.contrast = _range(contrast, "contrast", 1.0, (0.0, float("inf")))
        self.saturation = _range(saturation, "saturation", 1.0, (0.0, float("inf")))
        self.hue = _range(hue, "hue", 0.0, (-0.5, 0.5))

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        steps = [self._brightness, self._contrast, self._saturation, self._hue]
        if P.concrete:  # one order per call, from the dynamic mode's random state
            rng = ndd.random.get_default_rng()
            steps = [steps[k] for k in np.argsort([rng() for _ in steps], kind="stable")]
        for step in steps:
            x = step(x, P, spec)
        return x

    def _factor(self, P: Params, bounds: tuple[float, float]) -> Any:
        lo, hi = bounds
        return lo if lo == hi else P.arg(P.uniform(lo, hi))

    def _brightness(self, x: Any, P: Params, spec: Spec) -> Any:
        if self.brightness is None:
            return x
        return _as_type(P.math.clamp(x * self._factor(P, self.brightness), 0.0, _max_value(spec)), P, spec)

    def _blend(self, x: Any, other: Any, factor: Any, P: Params, spec: Spec) -> Any:
        return _as_type(P.math.clamp(x * factor + other * (1.0 - factor), 0.0, _max_value(spec)), P, spec)

    def _contrast(self, x: Any, P: Params, spec: Spec) -> Any:
        if self.contrast is None:
            return x
        mean = P.ops.reductions.mean(luma(x, P, spec, exact_type=False), dtype=DALIDataType.FLOAT)
        return self._blend(x, mean, self._factor(P, self.contrast), P, spec)

    def _saturation(self, x: Any, P: Params, spec: Spec) -> Any:
        if self.saturation is None:
            return x
        return self._blend(x, luma(x, P, spec, exact_type=False), self._factor(P, self.saturation), P, spec)

    def _hue(self, x: Any, P: Params, spec: Spec) -> Any:
        if self.hue is None:
            return x
        lo, hi = self.hue
        degrees = lo * 360.0 if lo == hi else P.arg(P.uniform(lo, hi) * 360.0)
        if spec.layout == "CHW":  # the hue kernel takes channels last
            return P.ops.transpose(P.ops.hue(P.ops.transpose(x, perm=[1, 2, 0]), hue=degrees), perm=[2, 0, 1])
        return P.ops.hue(x, hue=degrees)
