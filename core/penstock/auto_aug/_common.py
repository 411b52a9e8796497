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


def translations(use_shape: bool, max_translate_abs: float | None, max_translate_rel: float | None,
                 default_abs: float, default_rel: float) -> tuple[Augmentation, Augmentation]:
    if use_shape:
        rel = default_rel if max_translate_rel is None else max_translate_rel
        return (a.translate_x.augmentation(mag_range=(0, rel)), a.translate_y.augmentation(mag_range=(0, rel)))
    dist = default_abs if max_translate_abs is None else max_translate_abs
    return (a.translate_x_no_shape.augmentation(mag_range=(0, dist)),
            a.translate_y_no_shape.augmentation(mag_range=(0, dist)))


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
