"""torchvision.transforms.v2.functional's image functions, on penstock's kernels: each runs the
matching transform with fixed parameters (in the dynamic mode for PIL images and torch tensors)."""
from __future__ import annotations

from typing import Any, Sequence

from .._base import Spec, Transform, is_pil, is_torch
from .._color import ColorJitter, Grayscale
from .._geometry import CenterCrop, Pad, Resize, window
from .._params import Params
from .._tensor_ops import GaussianBlur, Normalize, PILToTensor, ToDtype, ToPILImage, ToTensor

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "center_crop", "crop", "gaussian_blur",
           "get_dimensions", "get_image_size", "get_size", "horizontal_flip", "normalize", "pad", "pil_to_tensor",
           "resize", "resized_crop", "rgb_to_grayscale", "to_dtype", "to_grayscale", "to_pil_image", "to_tensor",
           "vertical_flip"]


class _Crop(Transform):
    """The window of (height, width) at (top, left), zeros outside the image."""

    def __init__(self, top: int, left: int, height: int, width: int):
        super().__init__()
        self.top, self.left, self.height, self.width = int(top), int(left), int(height), int(width)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return window(x, P, self.top, self.left, (self.height, self.width))


class _Flip(Transform):
    def __init__(self, horizontal: bool):
        super().__init__()
        self.horizontal = horizontal

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return P.ops.flip(x, horizontal=int(self.horizontal), vertical=int(not self.horizontal))


def resize(inpt: Any, size: Any, interpolation: Any = "bilinear", max_size: int | None = None,
           antialias: bool | None = True) -> Any:
    return Resize(size, interpolation, max_size, antialias)(inpt)


def center_crop(inpt: Any, output_size: Any) -> Any:
    return CenterCrop(output_size)(inpt)


def crop(inpt: Any, top: int, left: int, height: int, width: int) -> Any:
    return _Crop(top, left, height, width)(inpt)


def resized_crop(inpt: Any, top: int, left: int, height: int, width: int, size: Any,
                 interpolation: Any = "bilinear", antialias: bool | None = True) -> Any:
    return resize(crop(inpt, top, left, height, width), size, interpolation, antialias=antialias)


def horizontal_flip(inpt: Any) -> Any:
    return _Flip(True)(inpt)


def vertical_flip(inpt: Any) -> Any:
    return _Flip(False)(inpt)


def normalize(inpt: Any, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> Any:
    return Normalize(mean, std, inplace)(inpt)


def pad(inpt: Any, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> Any:
    return Pad(padding, fill, padding_mode)(inpt)


def gaussian_blur(inpt: Any, kernel_size: Any, sigma: Any = None) -> Any:
    """Without ``sigma``: torchvision's default for the kernel size, 0.3 * ((size - 1) / 2 - 1) + 0.8."""
    sizes = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
    if sigma is None:
        sigma = [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in sizes]
    sigmas = [sigma] * 2 if isinstance(sigma, (int, float)) else list(sigma)
    if len(set(sigmas)) > 1:
        raise NotImplementedError("gaussian_blur with different sigmas across and down: penstock's GaussianBlur "
                                  "takes one sigma for both")
    return GaussianBlur(kernel_size, float(sigmas[0]))(inpt)


def rgb_to_grayscale(inpt: Any, num_output_channels: int = 1) -> Any:
    return Grayscale(num_output_channels)(inpt)


to_grayscale = rgb_to_grayscale


def _jitter(inpt: Any, **factor: float) -> Any:
    (name, value), = factor.items()
    jitter = ColorJitter(**{name: (float(value), float(value))})
    return jitter(inpt)


def adjust_brightness(inpt: Any, brightness_factor: float) -> Any:
    return _jitter(inpt, brightness=brightness_factor)


def adjust_contrast(inpt: Any, contrast_factor: float) -> Any:
    return _jitter(inpt, contrast=contrast_factor)


def adjust_saturation(inpt: Any, saturation_factor: float) -> Any:
    return _jitter(inpt, saturation=saturation_factor)


def get_dimensions(inpt: Any) -> list[int]:
    """[channels, height, width]."""
    if is_pil(inpt):
        return [len(inpt.getbands()), inpt.height, inpt.width]
    if is_torch(inpt):
        return [int(v) for v in inpt.shape[-3:]]
    raise TypeError(f"expected a PIL image or a torch tensor, got {type(inpt).__name__}")


def get_size(inpt: Any) -> list[int]:
    """[height, width]."""
    return get_dimensions(inpt)[1:]


def get_image_size(inpt: Any) -> list[int]:
    """[width, height] (torchvision's v1 order)."""
    return get_dimensions(inpt)[:0:-1]


def pil_to_tensor(pic: Any) -> Any:
    return PILToTensor()(pic)


def to_tensor(pic: Any) -> Any:
    return ToTensor()(pic)


def to_pil_image(pic: Any, mode: str | None = None) -> Any:
    return ToPILImage(mode)(pic)


def to_dtype(inpt: Any, dtype: Any, scale: bool = False) -> Any:
    return ToDtype(dtype, scale)(inpt)
