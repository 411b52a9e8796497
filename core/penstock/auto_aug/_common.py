"""Shared by the three policies: random picks, translation variants, exclusion by name."""
from __future__ import annotations

import itertools
from typing import Any, Iterator, Sequence

from .. import fn, types
from ..data_node import DataNode
from . import augmentations as a
from .core import Augmentation


def seed_stream(seed: Any) -> Iterator[Any]:
    """A distinct seed for each random operator of a policy when a seed is given (one shared seed
    would give them all the same stream)."""
    return itertools.count(seed) if seed is not None else itertools.repeat(None)


def random_index(count: int, seed: Any) -> DataNode:
    """A uniform per-sample pick from range(count)."""
    kwargs = {} if seed is None else {"seed": seed}
    return fn.random.uniform(values=list(range(count)), dtype=types.INT32, **kwargs)


def coin(probability: float, seed: Any) -> DataNode:
    kwargs = {} if seed is None else {"seed": seed}
    return fn.random.coin_flip(probability=probability, dtype=types.BOOL, **kwargs)


def translations(use_shape: bool, max_translate_abs: Any, max_translate_rel: Any,
                 default_abs: float, default_rel: float) -> tuple[Augmentation, Augmentation]:
    """translate_x and translate_y up to a fraction of the shape (``use_shape``) or a distance; a
    pair of limits is (height, width)."""
    if use_shape:
        if max_translate_abs is not None:
            raise ValueError("max_translate_abs is for translations without the shape; with a shape, give "
                             "max_translate_rel")
        limit, tx, ty = max_translate_rel, a.translate_x, a.translate_y
        default = default_rel
    else:
        if max_translate_rel is not None:
            raise ValueError("max_translate_rel is for translations by a fraction of the shape; without a shape, "
                             "give max_translate_abs")
        limit, tx, ty = max_translate_abs, a.translate_x_no_shape, a.translate_y_no_shape
        default = default_abs
    height, width = (limit if isinstance(limit, (tuple, list)) else (limit, limit)) if limit is not None else \
        (default, default)
    return tx.augmentation(mag_range=(0, width)), ty.augmentation(mag_range=(0, height))


def _factor(mag: Any) -> Any:
    return mag


# The AutoAugment paper's magnitude ranges where they differ from the monotonic ones: the
# enhancements' factor itself over [0.1, 1.9], posterize keeping 0-4 bits (at least one), solarize's
# threshold rising with the magnitude. Its policies and RandAugment's non-monotonic suite use them.
NON_MONOTONIC = {
    "brightness": a.brightness.augmentation(mag_range=(0.1, 1.9), randomly_negate=False, mag_to_param=_factor),
    "contrast": a.contrast.augmentation(mag_range=(0.1, 1.9), randomly_negate=False, mag_to_param=_factor),
    "color": a.color.augmentation(mag_range=(0.1, 1.9), randomly_negate=False, mag_to_param=_factor),
    "sharpness": a.sharpness.augmentation(mag_range=(0.1, 1.9), randomly_negate=False, mag_to_param=_factor),
    "posterize": a.posterize,
    "solarize": a.solarize.augmentation(mag_range=(0, 256)),
}


def without(augs: Sequence[Augmentation], excluded: Sequence[str] | None) -> list[Augmentation]:
    if not excluded:
        return list(augs)
    names = {x.name for x in augs}
    unknown = set(excluded) - names
    if unknown:
        raise ValueError(f"excluded names no augmentation of the suite: {sorted(unknown)} "
                         f"(the suite has {sorted(names)})")
    kept = [x for x in augs if x.name not in set(excluded)]
    if not kept:
        raise ValueError("every augmentation of the suite is excluded")
    return kept


def op_kwargs(shape: Any, fill_value: Any, interp_type: Any) -> dict:
    kwargs = {"fill_value": fill_value}
    if shape is not None:
        kwargs["shape"] = shape
    if interp_type is not None:
        kwargs["interp_type"] = interp_type
    return kwargs
