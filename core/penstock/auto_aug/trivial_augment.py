"""TrivialAugment Wide (Müller & Hutter): per sample, one operation and one magnitude bin picked
uniformly at random, with the wide magnitude ranges."""
from __future__ import annotations

import functools
from typing import Any, Sequence

from ..data_node import DataNode
from . import augmentations as a
from ._common import op_kwargs, random_index, seed_stream, translations, without
from .core import Augmentation, require_conditionals, select

__all__ = ["trivial_augment_wide", "apply_trivial_augment", "get_trivial_augment_wide_suite"]


def get_trivial_augment_wide_suite(use_shape: bool = False, max_translate_abs: float | None = None,
                                   max_translate_rel: float | None = None) -> list[Augmentation]:
    """The wide ranges: translation 32 px (or the whole size), shear 0.99, rotation 135 degrees,
    enhancements 0.01-0.99, posterize keeping 8 down to 2 bits."""
    tx, ty = translations(use_shape, max_translate_abs, max_translate_rel, 32, 1.0)
    wide = (0.01, 0.99)
    return [tx, ty, a.shear_x.augmentation(mag_range=(0, 0.99)), a.shear_y.augmentation(mag_range=(0, 0.99)),
            a.rotate.augmentation(mag_range=(0, 135)), a.brightness.augmentation(mag_range=wide),
            a.contrast.augmentation(mag_range=wide), a.color.augmentation(mag_range=wide),
            a.sharpness.augmentation(mag_range=wide), a.posterize.augmentation(mag_range=(8, 2)), a.solarize,
            a.equalize, a.auto_contrast, a.identity]


def apply_trivial_augment(augmentations: Sequence[Augmentation], data: DataNode, num_magnitude_bins: int = 31,
                          seed: Any = None, **kwargs: Any) -> DataNode:
    require_conditionals("trivial_augment_wide")
    if not augmentations:
        raise ValueError("trivial_augment: no augmentations")
    seeds = seed_stream(seed)
    magnitude_bin = random_index(num_magnitude_bins, next(seeds))
    ops = [functools.partial(aug, magnitude_bin=magnitude_bin, num_magnitude_bins=num_magnitude_bins,
                             seed=next(seeds), **kwargs) for aug in augmentations]
    return select(ops, random_index(len(ops), next(seeds)), data)


def trivial_augment_wide(data: DataNode, num_magnitude_bins: int = 31, shape: Any = None, fill_value: Any = 128,
                         interp_type: Any = None, max_translate_abs: float | None = None,
                         max_translate_rel: float | None = None, seed: Any = None,
                         excluded: Sequence[str] | None = None) -> DataNode:
    """TrivialAugment Wide; ``excluded`` drops operations by name."""
    suite = get_trivial_augment_wide_suite(shape is not None, max_translate_abs, max_translate_rel)
    return apply_trivial_augment(without(suite, excluded), data, num_magnitude_bins, seed,
                                 **op_kwargs(shape, fill_value, interp_type))
