"""AutoAugment (Cubuk et al.): per sample, one sub-policy of the policy is picked at random; each
of its operations is applied with its probability, at its fixed magnitude bin."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Sequence

from .._conditionals._runtime import if_exp
from ..data_node import DataNode
from . import augmentations as a
from ._common import coin, op_kwargs, random_index, seed_stream
from .core import Augmentation, require_conditionals, select

__all__ = ["Policy", "auto_augment", "auto_augment_image_net", "apply_auto_augment", "get_image_net_policy"]


@dataclasses.dataclass(frozen=True)
class Policy:
    """Sub-policies: sequences of (augmentation, probability, magnitude bin or None)."""
    name: str
    num_magnitude_bins: int
    sub_policies: Sequence[Sequence[tuple[Augmentation, float, int | None]]]

    def __post_init__(self) -> None:
        if not self.sub_policies:
            raise ValueError(f"policy {self.name}: no sub-policies")
        for sub in self.sub_policies:
            for aug, p, mag_bin in sub:
                if not 0 <= p <= 1:
                    raise ValueError(f"policy {self.name}: probability {p} of {aug.name} is not in [0, 1]")
                if aug.mag_range is not None and not (mag_bin is not None and 0 <= mag_bin < self.num_magnitude_bins):
                    raise ValueError(f"policy {self.name}: {aug.name} needs a magnitude bin in "
                                     f"[0, {self.num_magnitude_bins})")


def get_image_net_policy(use_shape: bool = False, max_translate_abs: float | None = None,
                         max_translate_rel: float | None = None) -> Policy:
    """The ImageNet policy of the AutoAugment paper (25 sub-policies, 11 magnitude bins). It has no
    translations, so the translation arguments (accepted for DALI's signature) change nothing."""
    subs = [
        ((a.posterize, 0.4, 8), (a.rotate, 0.6, 9)),
        ((a.solarize, 0.6, 5), (a.auto_contrast, 0.6, None)),
        ((a.equalize, 0.8, None), (a.equalize, 0.6, None)),
        ((a.posterize, 0.6, 7), (a.posterize, 0.6, 6)),
        ((a.equalize, 0.4, None), (a.solarize, 0.2, 4)),
        ((a.equalize, 0.4, None), (a.rotate, 0.8, 8)),
        ((a.solarize, 0.6, 3), (a.equalize, 0.6, None)),
        ((a.posterize, 0.8, 5), (a.equalize, 1.0, None)),
        ((a.rotate, 0.2, 3), (a.solarize, 0.6, 8)),
        ((a.equalize, 0.6, None), (a.posterize, 0.4, 6)),
        ((a.rotate, 0.8, 8), (a.color, 0.4, 0)),
        ((a.rotate, 0.4, 9), (a.equalize, 0.6, None)),
        ((a.equalize, 0.0, None), (a.equalize, 0.8, None)),
        ((a.invert, 0.6, None), (a.equalize, 1.0, None)),
        ((a.color, 0.6, 4), (a.contrast, 1.0, 8)),
        ((a.rotate, 0.8, 8), (a.color, 1.0, 2)),
        ((a.color, 0.8, 8), (a.solarize, 0.8, 7)),
        ((a.sharpness, 0.4, 7), (a.invert, 0.6, None)),
        ((a.shear_x, 0.6, 5), (a.equalize, 1.0, None)),
        ((a.color, 0.4, 0), (a.equalize, 0.6, None)),
        ((a.equalize, 0.4, None), (a.solarize, 0.2, 4)),
        ((a.solarize, 0.6, 5), (a.auto_contrast, 0.6, None)),
        ((a.invert, 0.6, None), (a.equalize, 1.0, None)),
        ((a.color, 0.6, 4), (a.contrast, 1.0, 8)),
        ((a.equalize, 0.8, None), (a.equalize, 0.6, None)),
    ]
    return Policy("ImageNet", 11, subs)


def apply_auto_augment(policy: Policy, data: DataNode, seed: Any = None, **kwargs: Any) -> DataNode:
    """Applies ``policy`` to ``data``: one random sub-policy per sample. Keyword arguments go to the
    augmentations that accept them (``fill_value``, ``interp_type``, ``shape`` ...)."""
    require_conditionals("auto_augment")
    seeds = seed_stream(seed)

    def sub_policy(sub: Sequence[tuple[Augmentation, float, int | None]]):
        def run(x: DataNode) -> DataNode:
            for aug, p, mag_bin in sub:
                if p <= 0:
                    continue
                op = functools.partial(aug, magnitude_bin=mag_bin, num_magnitude_bins=policy.num_magnitude_bins,
                                       seed=next(seeds), **kwargs)
                x = op(x) if p >= 1 else if_exp(coin(p, next(seeds)), lambda x=x, op=op: op(x), lambda x=x: x)
            return x
        return run

    return select([sub_policy(s) for s in policy.sub_policies], random_index(len(policy.sub_policies), next(seeds)),
                  data)


def auto_augment(data: DataNode, policy_name: str = "image_net", shape: Any = None, fill_value: Any = 128,
                 interp_type: Any = None, max_translate_abs: float | None = None,
                 max_translate_rel: float | None = None, seed: Any = None, monotonic_mag: bool = True,
                 exclude: Sequence[str] | None = None) -> DataNode:
    """AutoAugment with a named policy (only ``"image_net"``)."""
    if policy_name != "image_net":
        raise ValueError(f"auto_augment: unknown policy_name {policy_name!r}; supported: 'image_net' "
                         "(use apply_auto_augment for a custom Policy)")
    return auto_augment_image_net(data, shape, fill_value, interp_type, max_translate_abs, max_translate_rel, seed,
                                  monotonic_mag, exclude)


def auto_augment_image_net(data: DataNode, shape: Any = None, fill_value: Any = 128, interp_type: Any = None,
                           max_translate_abs: float | None = None, max_translate_rel: float | None = None,
                           seed: Any = None, monotonic_mag: bool = True,
                           exclude: Sequence[str] | None = None) -> DataNode:
    """AutoAugment with the ImageNet policy. ``monotonic_mag=False`` uses the original (non-monotonic)
    posterize and solarize magnitudes; ``exclude`` drops the named operations from the policy."""
    policy = get_image_net_policy(shape is not None, max_translate_abs, max_translate_rel)
    swap = {} if monotonic_mag else {
        a.posterize.name: a.posterize.augmentation(mag_range=(4, 8), mag_to_param=lambda m: m),
        a.solarize.name: a.solarize.augmentation(mag_range=(0, 256))}
    excluded = set(exclude or ())
    names = {aug.name for sub in policy.sub_policies for aug, _, _ in sub}
    if excluded - names:
        raise ValueError(f"auto_augment: exclude names operations the policy does not use: {sorted(excluded - names)}")
    subs = [[(swap.get(aug.name, aug), p, b) for aug, p, b in sub if aug.name not in excluded]
            for sub in policy.sub_policies]
    subs = [s for s in subs if s]
    if not subs:
        raise ValueError("auto_augment: every operation of the policy is excluded")
    policy = Policy(policy.name, policy.num_magnitude_bins, subs)
    return apply_auto_augment(policy, data, seed, **op_kwargs(shape, fill_value, interp_type))
