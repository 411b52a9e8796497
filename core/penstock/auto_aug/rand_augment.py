"""RandAugment (Cubuk et al.): per sample, ``n`` operations picked uniformly from the suite (with
replacement), each at magnitude bin ``m``, randomly negated where the operation allows it."""
from __future__ import annotations

import functools
from typing import Any, Sequence

from ..data_node import DataNode
from . import augmentations as a
from ._common import NON_MONOTONIC, op_kwargs, random_index, seed_stream, translations, without
from .core import Augmentation, require_conditionals, select

__all__ = ["rand_augment", "apply_rand_augment", "get_rand_augment_suite", "get_rand_augment_non_monotonic_suite"]


def get_rand_augment_suite(use_shape: bool = False, max_translate_abs: float | None = None,
                           max_translate_rel: float | None = None) -> list[Augmentation]:
    """The 14 operations of the RandAugment paper (translations up to 100 px or 100/224 of the size)."""
    tx, ty = translations(use_shape, max_translate_abs, max_translate_rel, 100, 100 / 224)
    return [tx, ty, a.shear_x, a.shear_y, a.rotate, a.brightness, a.contrast, a.color, a.sharpness,
            a.posterize.augmentation(mag_range=(8, 4)), a.solarize, a.equalize, a.auto_contrast, a.identity]


def get_rand_augment_non_monotonic_suite(use_shape: bool = False, max_translate_abs: float | None = None,
                                         max_translate_rel: float | None = None) -> list[Augmentation]:
    """get_rand_augment_suite with the AutoAugment paper's ranges for brightness, contrast, color,
    sharpness, posterize and solarize, where a larger bin is not always a stronger operation."""
    return [NON_MONOTONIC.get(aug.name, aug)
            for aug in get_rand_augment_suite(use_shape, max_translate_abs, max_translate_rel)]


def apply_rand_augment(augmentations: Sequence[Augmentation], data: DataNode, n: int, m: int,
                       num_magnitude_bins: int = 31, seed: Any = None, **kwargs: Any) -> DataNode:
    require_conditionals("rand_augment")
    if not augmentations:
        raise ValueError("rand_augment: no augmentations")
    if n < 0:
        raise ValueError(f"rand_augment: n must be non-negative, got {n}")
    if not 0 <= m < num_magnitude_bins:
        raise ValueError(f"rand_augment: m must lie in [0, num_magnitude_bins={num_magnitude_bins}), got {m}")
    seeds = seed_stream(seed)
    for _ in range(n):
        ops = [functools.partial(aug, magnitude_bin=m, num_magnitude_bins=num_magnitude_bins, seed=next(seeds),
                                 **kwargs) for aug in augmentations]
        data = select(ops, random_index(len(ops), next(seeds)), data)
    return data


def rand_augment(data: DataNode, n: int, m: int, num_magnitude_bins: int = 31, shape: Any = None,
                 fill_value: Any = 128, interp_type: Any = None, max_translate_abs: float | None = None,
                 max_translate_rel: float | None = None, seed: Any = None, monotonic_mag: bool = True,
                 excluded: Sequence[str] | None = None) -> DataNode:
    """RandAugment with the paper's suite (``monotonic_mag=False``: the non-monotonic suite);
    ``excluded`` drops operations by name."""
    suite = (get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite)(
        shape is not None, max_translate_abs, max_translate_rel)
    return apply_rand_augment(without(suite, excluded), data, n, m, num_magnitude_bins, seed,
                              **op_kwargs(shape, fill_value, interp_type))
