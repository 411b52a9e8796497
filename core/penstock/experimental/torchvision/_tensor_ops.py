"""Normalization, blur, type conversion, and the conversions between PIL images and tensors."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ...types import DALIDataType
from .. import dynamic as ndd
from ._base import Spec, Transform
from ._params import Params


class Normalize(Transform):
    """(image - mean) / std per channel, for float images (as torchvision requires)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False, device: str = "cpu"):
        super().__init__(device)
        if inplace:
            raise NotImplementedError("Normalize(inplace=True): penstock's images are never changed in place")
        self.mean = [float(v) for v in np.asarray(mean, np.float64).reshape(-1)]
        self.std = [float(v) for v in np.asarray(std, np.float64).reshape(-1)]
        if any(s == 0 for s in self.std):
            raise ValueError(f"std evaluated to zero after conversion to float, leading to division by zero: {std}")
        self.inplace = inplace

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        if spec.dtype is not None and spec.dtype.kind != "f":
            raise TypeError(f"Input tensor should be a float tensor. Got {spec.dtype}.")
        shape = (-1, 1, 1) if spec.layout == "CHW" else (1, 1, -1)
        mean = np.asarray(self.mean, np.float32).reshape(shape)
        std = np.asarray(self.std, np.float32).reshape(shape)
        return (x - mean) / std


def _kernel_size(value: Any) -> tuple[int, int]:
    """(width, height) of torchvision's kernel_size: an int or a sequence of two, odd and positive."""
    sizes = [value, value] if isinstance(value, numbers.Integral) else list(value)
    if len(sizes) == 1:
        sizes *= 2
    if len(sizes) != 2 or not all(isinstance(v, numbers.Integral) and v > 0 and v % 2 for v in sizes):
        raise ValueError(f"Kernel size should be a tuple/list of two odd positive integers, got {value!r}")
    return int(sizes[0]), int(sizes[1])


class GaussianBlur(Transform):
    """A Gaussian blur of ``kernel_size`` (width, height) and a sigma drawn per image from ``sigma``
    (min, max) (one value: fixed); borders mirrored (reflect-101) as torchvision's are."""

    def __init__(self, kernel_size: Any, sigma: Any = (0.1, 2.0), device: str = "cpu"):
        super().__init__(device)
        self.kernel_size = _kernel_size(kernel_size)
        if isinstance(sigma, numbers.Real):
            sigma = (float(sigma), float(sigma))
        if len(sigma) != 2 or not 0.0 < float(sigma[0]) <= float(sigma[1]):
            raise ValueError(f"sigma should be a positive number or (min, max) with 0 < min <= max, got {sigma!r}")
        self.sigma = (float(sigma[0]), float(sigma[1]))

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        lo, hi = self.sigma
        sigma = lo if lo == hi else P.arg(P.uniform(lo, hi))
        width, height = self.kernel_size
        return P.ops.gaussian_blur(x, window_size=[height, width], sigma=sigma)


_TORCH_TYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool")


def numpy_type(dtype: Any) -> np.dtype:
    """A torch (or numpy, or dynamic-mode) element type as numpy's."""
    name = str(dtype).replace("torch.", "")
    if isinstance(dtype, ndd.DType):
        return dtype.numpy_type()
    if name not in _TORCH_TYPES and not isinstance(dtype, (np.dtype, type)):
        raise NotImplementedError(f"type {dtype!r}: penstock's images are of numpy's numeric types")
    return np.dtype(name) if name in _TORCH_TYPES else np.dtype(dtype)


def convert(x: Any, P: Params, source: np.dtype | None, target: np.dtype, scale: bool) -> Any:
    """torchvision's ``to_dtype``: values rescaled between the types' ranges with ``scale`` (integers
    as fractions of their maximum), else converted as torch converts (floats truncated)."""
    want = ndd.dtype(target).type_id
    source = source if source is not None else np.dtype(np.uint8)
    if source == target:
        return x
    if not scale:
        if target.kind in "iu" and source.kind == "f":  # torch truncates toward zero; cast rounds
            sign = P.ops.cast(x >= 0, dtype=DALIDataType.FLOAT) * 2.0 - 1.0
            x = P.math.floor(P.math.abs(x)) * sign
        return P.ops.cast(x, dtype=want)
    if source.kind == "f" and target.kind == "f":
        return P.ops.cast(x, dtype=want)
    if source.kind in "iu" and target.kind == "f":
        return P.ops.cast(x, dtype=want) / float(np.iinfo(source).max)
    if source.kind == "f" and target.kind in "iu":
        return P.ops.cast(P.math.floor(x * (float(np.iinfo(target).max) + 1.0 - 1e-3)), dtype=want)
    raise NotImplementedError(f"ToDtype(scale=True) from {source} to {target}: penstock scales between "
                              "integer and float types only")


class ToDtype(Transform):
    """Images converted to ``dtype`` (a torch type), rescaled between the types' ranges with ``scale``."""

    def __init__(self, dtype: Any, scale: bool = False, device: str = "cpu"):
        super().__init__(device)
        if isinstance(dtype, dict):
            raise NotImplementedError("ToDtype with a dict of types: penstock's transforms take images only")
        self.dtype, self.scale = dtype, bool(scale)
        self._target = numpy_type(dtype)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return convert(x, P, spec.dtype, self._target, self.scale)

    def out_spec(self, spec: Spec) -> Spec:
        return spec.with_(dtype=self._target)


def _to_chw(x: Any, P: Params, spec: Spec) -> Any:
    return x if spec.layout == "CHW" else P.ops.transpose(x, perm=[2, 0, 1])


class PILToTensor(Transform):
    """A PIL image as a uint8 CHW tensor."""
    output_kind = "tensor"

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return _to_chw(x, P, spec)

    def out_spec(self, spec: Spec) -> Spec:
        return spec.with_(layout="CHW", pil=False)


class ToTensor(Transform):
    """A PIL image (or uint8 tensor) as a float CHW tensor in [0, 1] (torchvision's deprecated v1 ToTensor)."""
    output_kind = "tensor"

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return convert(_to_chw(x, P, spec), P, spec.dtype, np.dtype(np.float32), scale=True)

    def out_spec(self, spec: Spec) -> Spec:
        return Spec("CHW", np.dtype(np.float32))


class ToPILImage(Transform):
    """A CHW tensor as a PIL image (floats scaled by 255 and truncated, as torchvision does)."""
    output_kind = "pil"

    def __init__(self, mode: str | None = None, device: str = "cpu"):
        super().__init__(device)
        if mode not in (None, "L", "RGB", "RGBA"):
            raise NotImplementedError(f"ToPILImage(mode={mode!r}): penstock makes L, RGB and RGBA images")
        self.mode = mode

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        if spec.layout == "CHW":
            x = P.ops.transpose(x, perm=[1, 2, 0])
        if spec.dtype is not None and spec.dtype.kind == "f":
            x = P.ops.cast(P.math.floor(x * 255.0), dtype=DALIDataType.UINT8)
        return x

    def out_spec(self, spec: Spec) -> Spec:
        return Spec("HWC", np.dtype(np.uint8), pil=True)


class ToPureTensor(Transform):
    """Images as plain tensors: penstock's images have no torchvision subclass to shed, so they are
    returned unchanged."""

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return x
