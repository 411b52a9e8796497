"""Geometric transforms: resizing, crops, padding and flips, as ``torchvision.transforms.v2`` defines
them (output sizes and crop positions computed as torchvision computes them), on penstock's resize,
slice, random_resized_crop and flip kernels."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

from ._base import Spec, Transform, probability, interp_type
from ._params import Params


def _pair(size: Any, what: str) -> tuple[int, int]:
    """(h, w) of an int or a sequence of one or two ints."""
    if isinstance(size, numbers.Integral):
        size = (int(size), int(size))
    elif isinstance(size, Sequence) and len(size) in (1, 2) and all(isinstance(v, numbers.Integral) for v in size):
        size = (int(size[0]), int(size[-1]))
    else:
        raise ValueError(f"{what} must be an int or a sequence of one or two ints, got {size!r}")
    if min(size) <= 0:
        raise ValueError(f"{what} must be positive, got {size}")
    return size


def resized_size(P: Params, size: int | None, max_size: int | None) -> tuple[Any, Any]:
    """torchvision's output size for an int ``size`` (the shorter side; the longer one keeps the
    aspect ratio, rounded down) and ``max_size`` (the most the longer side may be), per sample."""
    h, w = P.size()
    portrait = w <= h
    short, long = P.select(portrait, w, h), P.select(portrait, h, w)
    if size is None:
        new_long, new_short = max_size, (max_size * short) // long
    else:
        new_short, new_long = size, (size * long) // short
        if max_size is not None:
            over = new_long > max_size
            new_short = P.select(over, (max_size * new_short) // P.maximum(new_long, 1), new_short)
            new_long = P.select(over, max_size, new_long)
    return P.select(portrait, new_long, new_short), P.select(portrait, new_short, new_long)


class Resize(Transform):
    """Resizes to ``size``: (h, w), or the shorter side for an int (aspect ratio kept, the longer side
    at most ``max_size``), to torchvision's output sizes. penstock's filters antialias downscaling
    as torchvision's do (PIL images always); values differ from torchvision's (and PIL's) by 0.2
    levels on average, by up to 12 where a downscale's antialiasing filters differ; NEAREST_EXACT
    gives torchvision's values exactly, NEAREST is NEAREST_EXACT."""

    def __init__(self, size: Any, interpolation: Any = "bilinear", max_size: int | None = None,
                 antialias: bool | None = True, device: str = "cpu"):
        super().__init__(device)
        if size is None and max_size is None:
            raise ValueError("Resize needs size, or max_size when size is None")
        if isinstance(size, Sequence) and len(size) == 1:
            size = size[0]
        if isinstance(size, Sequence):
            if max_size is not None:
                raise ValueError("max_size applies only when size is an int (the shorter side) or None")
            self.size: Any = _pair(size, "size")
        else:
            self.size = None if size is None else _pair(size, "size")[0]
            if max_size is not None and self.size is not None and self.size > max_size:
                raise ValueError(f"max_size ({max_size}) must be larger than size ({self.size})")
        self.max_size = max_size
        self.interpolation = interpolation
        self.antialias = True if antialias is None else bool(antialias)
        self._interp = interp_type(interpolation)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        if isinstance(self.size, tuple):
            size = list(self.size)
        else:
            size = P.vector(*resized_size(P, self.size, self.max_size))
        antialias = self.antialias or spec.pil  # torchvision always antialiases PIL images
        return P.ops.resize(x, size=size, interp_type=self._interp, antialias=antialias)


def center_start(slack: Any, P: Params) -> Any:
    """Where a centred window starts, per sample, for ``slack`` = image size - window size:
    Python's round(slack / 2) (half to even, as torchvision) when the window fits; when it does
    not, torchvision pads floor(-slack / 2) before the image."""
    half = slack // 2
    return P.select(slack >= 0, half + (half % 2) * (slack % 2), 0 - ((0 - slack) // 2))


def window(x: Any, P: Params, top: Any, left: Any, shape: tuple[Any, Any], fill: Any = 0) -> Any:
    """The (h, w) window of every image starting at (top, left), areas outside the image filled."""
    fill_values = list(fill) if isinstance(fill, Sequence) else [fill]
    fixed = all(isinstance(v, numbers.Integral) for v in shape)
    return P.ops.slice(x, start=P.vector(top, left), shape=list(shape) if fixed else P.vector(*shape), axis_names="HW",
                       out_of_bounds_policy="pad", fill_values=fill_values)


class CenterCrop(Transform):
    """The centre (h, w) of the image, padded with zeros where the image is smaller."""

    def __init__(self, size: Any, device: str = "cpu"):
        super().__init__(device)
        self.size = _pair(size, "size")

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        h, w = P.size()
        return window(x, P, center_start(h - self.size[0], P), center_start(w - self.size[1], P), self.size)


def padding_ltrb(padding: Any) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of torchvision's padding: an int, (l/r, t/b) or (l, t, r, b)."""
    if isinstance(padding, numbers.Integral):
        padding = [int(padding)] * 4
    elif isinstance(padding, Sequence) and len(padding) in (1, 2, 4) and all(
            isinstance(v, numbers.Integral) for v in padding):
        padding = {1: list(padding) * 4, 2: list(padding) * 2, 4: list(padding)}[len(padding)]
    else:
        raise ValueError(f"padding must be an int or a sequence of 1, 2 or 4 ints, got {padding!r}")
    if min(padding) < 0:
        raise ValueError(f"padding must not be negative, got {padding}")
    return tuple(int(v) for v in padding)


def _constant_only(padding_mode: str) -> None:
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
    if padding_mode != "constant":
        raise NotImplementedError(f"padding_mode={padding_mode!r}: penstock pads with a constant only")


class Pad(Transform):
    """Pads the image's borders (left, top, right, bottom) with ``fill``."""

    def __init__(self, padding: Any, fill: Any = 0, padding_mode: str = "constant", device: str = "cpu"):
        super().__init__(device)
        self.padding = padding_ltrb(padding)
        _constant_only(padding_mode)
        self.fill, self.padding_mode = fill, padding_mode

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        left, top, right, bottom = self.padding
        h, w = P.size()
        return window(x, P, 0 - top, 0 - left, (h + top + bottom, w + left + right), self.fill)


class RandomCrop(Transform):
    """A window of ``size`` at a random place (drawn per image), after padding by ``padding`` (and,
    with ``pad_if_needed``, as much more as the window needs), as torchvision places it."""

    def __init__(self, size: Any, padding: Any = None, pad_if_needed: bool = False, fill: Any = 0,
                 padding_mode: str = "constant", device: str = "cpu"):
        super().__init__(device)
        self.size = _pair(size, "size")
        self.padding = padding_ltrb(padding) if padding is not None else (0, 0, 0, 0)
        self.pad_if_needed = bool(pad_if_needed)
        _constant_only(padding_mode)
        self.fill, self.padding_mode = fill, padding_mode

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        (ch, cw), (left, top, right, bottom) = self.size, self.padding
        h, w = P.size()
        padded_h, padded_w = h + top + bottom, w + left + right
        if self.pad_if_needed:
            more_h, more_w = P.maximum(ch - padded_h, 0), P.maximum(cw - padded_w, 0)
            top, left = top + more_h, left + more_w
            padded_h, padded_w = padded_h + 2 * more_h, padded_w + 2 * more_w
        elif P.concrete and (min(padded_h) < ch or min(padded_w) < cw):
            raise ValueError(f"Required crop size {self.size} is larger than the input image size "
                             f"({int(min(padded_h))}, {int(min(padded_w))}) after padding")
        row = P.floor_int(P.uniform(0.0, 1.0) * (padded_h - ch + 1))
        col = P.floor_int(P.uniform(0.0, 1.0) * (padded_w - cw + 1))
        return window(x, P, row - top, col - left, self.size, self.fill)


class RandomResizedCrop(Transform):
    """A random window (its area a fraction in ``scale`` of the image's, its aspect ratio in
    ``ratio``, 10 attempts, then a fallback) resized to ``size``: penstock's random_resized_crop,
    whose fallback window is DALI's (the whole image clamped to the ratio range), not torchvision's
    centre crop."""

    def __init__(self, size: Any, scale: Sequence[float] = (0.08, 1.0), ratio: Sequence[float] = (3 / 4, 4 / 3),
                 interpolation: Any = "bilinear", antialias: bool | None = True, device: str = "cpu"):
        super().__init__(device)
        self.size = _pair(size, "size")
        for name, rng in (("scale", scale), ("ratio", ratio)):
            if len(rng) != 2 or rng[0] > rng[1]:
                raise ValueError(f"{name} must be (min, max), got {rng!r}")
        self.scale, self.ratio = tuple(float(v) for v in scale), tuple(float(v) for v in ratio)
        self.interpolation = interpolation
        self.antialias = True if antialias is None else bool(antialias)
        self._interp = interp_type(interpolation)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        return P.ops.random_resized_crop(x, size=list(self.size), random_area=list(self.scale),
                                         random_aspect_ratio=list(self.ratio), interp_type=self._interp,
                                         antialias=self.antialias, num_attempts=10)


class _RandomFlip(Transform):
    horizontal = True

    def __init__(self, p: float = 0.5, device: str = "cpu"):
        super().__init__(device)
        self.p = probability(p)

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        flip = P.arg(P.coin(self.p), "int32")
        return P.ops.flip(x, horizontal=flip if self.horizontal else 0, vertical=0 if self.horizontal else flip)


class RandomHorizontalFlip(_RandomFlip):
    """Mirrors each image left to right with probability ``p``."""
    horizontal = True


class RandomVerticalFlip(_RandomFlip):
    """Mirrors each image top to bottom with probability ``p``."""
    horizontal = False
