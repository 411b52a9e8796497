"""AutoAugment (Cubuk et al.): per sample, one sub-policy of the policy is picked at random; each
of its operations is applied with its probability, at its fixed magnitude bin."""
from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any, Sequence

from .._conditionals._runtime import if_exp
from ..data_node import DataNode
from . import augmentations as a
from ._common import NON_MONOTONIC, coin, op_kwargs, random_index, seed_stream, translations
from .core import Augmentation, require_conditionals, select

__all__ = ["Policy", "auto_augment", "auto_augment_image_net", "apply_auto_augment", "get_image_net_policy",
           "get_reduced_cifar10_policy", "get_reduced_image_net_policy", "get_svhn_policy"]


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


def _paper_ops(use_shape: bool = False, max_translate_abs: Any = None, max_translate_rel: Any = None) -> Any:
    """The AutoAugment paper's operations with its magnitude ranges (translations up to 250 px or
    the whole size), by name, as its policies' magnitude bins index them."""
    tx, ty = translations(use_shape, max_translate_abs, max_translate_rel, 250, 1.0)
    return types.SimpleNamespace(
        shear_x=a.shear_x, shear_y=a.shear_y, translate_x=tx, translate_y=ty, rotate=a.rotate,
        solarize_add=a.solarize_add, invert=a.invert, equalize=a.equalize, auto_contrast=a.auto_contrast,
        **NON_MONOTONIC)


def _policy(name: str, ops: Any, table: Sequence[Sequence[tuple[str, float, int | None]]]) -> Policy:
    return Policy(name, 11, [[(getattr(ops, op), p, b) for op, p, b in sub] for sub in table])


def get_image_net_policy(use_shape: bool = False, max_translate_abs: Any = None,
                         max_translate_rel: Any = None) -> Policy:
    """The AutoAugment paper's ImageNet policy (25 sub-policies, 11 magnitude bins); translations
    by a fraction of the shape (``use_shape``, up to ``max_translate_rel``, default 1) or by up to
    ``max_translate_abs`` pixels (default 250); a pair of limits is (height, width)."""
    ops = _paper_ops(use_shape, max_translate_abs, max_translate_rel)
    return _policy("ImageNetPolicy", ops, [
        [("equalize", 0.8, None), ("shear_y", 0.8, 4)], [("color", 0.4, 9), ("equalize", 0.6, None)],
        [("color", 0.4, 1), ("rotate", 0.6, 8)], [("solarize", 0.8, 3), ("equalize", 0.4, None)],
        [("solarize", 0.4, 2), ("solarize", 0.6, 2)], [("color", 0.2, 0), ("equalize", 0.8, None)],
        [("equalize", 0.4, None), ("solarize_add", 0.8, 3)], [("shear_x", 0.2, 9), ("rotate", 0.6, 8)],
        [("color", 0.6, 1), ("equalize", 1.0, None)], [("invert", 0.4, None), ("rotate", 0.6, 0)],
        [("equalize", 1.0, None), ("shear_y", 0.6, 3)], [("color", 0.4, 7), ("equalize", 0.6, None)],
        [("posterize", 0.4, 6), ("auto_contrast", 0.4, None)], [("solarize", 0.6, 8), ("color", 0.6, 9)],
        [("solarize", 0.2, 4), ("rotate", 0.8, 9)], [("rotate", 1.0, 7), ("translate_y", 0.8, 9)],
        [("solarize", 0.8, 4)], [("shear_y", 0.8, 0), ("color", 0.6, 4)], [("color", 1.0, 0), ("rotate", 0.6, 2)],
        [("equalize", 0.8, None)], [("equalize", 1.0, None), ("auto_contrast", 0.6, None)],
        [("shear_y", 0.4, 7), ("solarize_add", 0.6, 7)], [("posterize", 0.8, 2), ("solarize", 0.6, 10)],
        [("solarize", 0.6, 8), ("equalize", 0.6, None)], [("color", 0.8, 6), ("rotate", 0.4, 5)]])


def get_reduced_cifar10_policy(use_shape: bool = False, max_translate_abs: Any = None,
                               max_translate_rel: Any = None) -> Policy:
    """The AutoAugment paper's policy found on reduced CIFAR-10 (translations as in get_image_net_policy)."""
    ops = _paper_ops(use_shape, max_translate_abs, max_translate_rel)
    return _policy("ReducedCifar10Policy", ops, [
        [("invert", 0.1, None), ("contrast", 0.2, 6)], [("rotate", 0.7, 2), ("translate_x", 0.3, 9)],
        [("sharpness", 0.8, 1), ("sharpness", 0.9, 3)], [("shear_y", 0.5, 8), ("translate_y", 0.7, 9)],
        [("auto_contrast", 0.5, None), ("equalize", 0.9, None)], [("shear_y", 0.2, 7), ("posterize", 0.3, 7)],
        [("color", 0.4, 3), ("brightness", 0.6, 7)], [("sharpness", 0.3, 9), ("brightness", 0.7, 9)],
        [("equalize", 0.6, None), ("equalize", 0.5, None)], [("contrast", 0.6, 7), ("sharpness", 0.6, 5)],
        [("color", 0.7, 7), ("translate_x", 0.5, 8)], [("equalize", 0.3, None), ("auto_contrast", 0.4, None)],
        [("translate_y", 0.4, 3), ("sharpness", 0.2, 6)], [("brightness", 0.9, 6), ("color", 0.2, 8)],
        [("solarize", 0.5, 2)], [("equalize", 0.2, None), ("auto_contrast", 0.6, None)],
        [("equalize", 0.2, None), ("equalize", 0.6, None)], [("color", 0.9, 9), ("equalize", 0.6, None)],
        [("auto_contrast", 0.8, None), ("solarize", 0.2, 8)], [("brightness", 0.1, 3), ("color", 0.7, 0)],
        [("solarize", 0.4, 5), ("auto_contrast", 0.9, None)], [("translate_y", 0.9, 9), ("translate_y", 0.7, 9)],
        [("auto_contrast", 0.9, None), ("solarize", 0.8, 3)], [("equalize", 0.8, None), ("invert", 0.1, None)],
        [("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)]])


def get_svhn_policy(use_shape: bool = False, max_translate_abs: Any = None, max_translate_rel: Any = None) -> Policy:
    """The AutoAugment paper's policy found on SVHN (translations as in get_image_net_policy)."""
    ops = _paper_ops(use_shape, max_translate_abs, max_translate_rel)
    return _policy("SvhnPolicy", ops, [
        [("shear_x", 0.9, 4), ("invert", 0.2, None)], [("shear_y", 0.9, 8), ("invert", 0.7, None)],
        [("equalize", 0.6, None), ("solarize", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
        [("equalize", 0.6, None), ("rotate", 0.9, 3)], [("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)],
        [("shear_y", 0.9, 8), ("invert", 0.4, None)], [("shear_y", 0.9, 5), ("solarize", 0.2, 6)],
        [("invert", 0.9, None), ("auto_contrast", 0.8, None)], [("equalize", 0.6, None), ("rotate", 0.9, 3)],
        [("shear_x", 0.9, 4), ("solarize", 0.3, 3)], [("shear_y", 0.8, 8), ("invert", 0.7, None)],
        [("equalize", 0.9, None), ("translate_y", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
        [("contrast", 0.3, 3), ("rotate", 0.8, 4)], [("invert", 0.8, None)],
        [("shear_y", 0.7, 6), ("solarize", 0.4, 8)], [("invert", 0.6, None), ("rotate", 0.8, 4)],
        [("shear_y", 0.3, 7), ("translate_x", 0.9, 3)], [("shear_x", 0.1, 6), ("invert", 0.6, None)],
        [("solarize", 0.7, 2), ("translate_y", 0.6, 7)], [("shear_y", 0.8, 4), ("invert", 0.8, None)],
        [("shear_x", 0.7, 9), ("translate_y", 0.8, 3)], [("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)],
        [("shear_x", 0.7, 2), ("invert", 0.1, None)]])


def get_reduced_image_net_policy() -> Policy:
    """The AutoAugment paper's policy found on reduced ImageNet (no translations)."""
    return _policy("ReducedImageNetPolicy", _paper_ops(), [
        [("posterize", 0.4, 8), ("rotate", 0.6, 9)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
        [("equalize", 0.8, None), ("equalize", 0.6, None)], [("posterize", 0.6, 7), ("posterize", 0.6, 6)],
        [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("equalize", 0.4, None), ("rotate", 0.8, 8)],
        [("solarize", 0.6, 3), ("equalize", 0.6, None)], [("posterize", 0.8, 5), ("equalize", 1.0, None)],
        [("rotate", 0.2, 3), ("solarize", 0.6, 8)], [("equalize", 0.6, None), ("posterize", 0.4, 6)],
        [("rotate", 0.8, 8), ("color", 0.4, 0)], [("rotate", 0.4, 9), ("equalize", 0.6, None)],
        [("equalize", 0.8, None)], [("invert", 0.6, None), ("equalize", 1.0, None)],
        [("color", 0.6, 4), ("contrast", 1.0, 8)], [("rotate", 0.8, 8), ("color", 1.0, 2)],
        [("color", 0.8, 8), ("solarize", 0.8, 7)], [("sharpness", 0.4, 7), ("invert", 0.6, None)],
        [("shear_x", 0.6, 5), ("equalize", 1.0, None)], [("color", 0.4, 0), ("equalize", 0.6, None)],
        [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
        [("invert", 0.6, None), ("equalize", 1.0, None)], [("color", 0.6, 4), ("contrast", 1.0, 8)],
        [("equalize", 0.8, None), ("equalize", 0.6, None)]])


# policy name -> (policy, whether it translates: takes shape and the translation limits)
POLICIES = {"image_net": (get_image_net_policy, True), "reduced_image_net": (get_reduced_image_net_policy, False),
            "svhn": (get_svhn_policy, True), "reduced_cifar10": (get_reduced_cifar10_policy, True)}


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
                 interp_type: Any = None, max_translate_abs: Any = None, max_translate_rel: Any = None,
                 seed: Any = None) -> DataNode:
    """AutoAugment with one of the paper's policies: ``"image_net"``, ``"reduced_image_net"``,
    ``"svhn"`` or ``"reduced_cifar10"``. ``shape`` (HWC) makes translations relative to it."""
    if not isinstance(policy_name, str) or policy_name not in POLICIES:
        raise ValueError(f"auto_augment: policy_name must be one of {', '.join(repr(n) for n in POLICIES)}, "
                         f"got {policy_name!r}")
    make, translates = POLICIES[policy_name]
    if translates:
        policy = make(shape is not None, max_translate_abs, max_translate_rel)
    else:
        given = next((n for n, v in (("shape", shape), ("max_translate_abs", max_translate_abs),
                                     ("max_translate_rel", max_translate_rel)) if v is not None), None)
        if given is not None:
            raise ValueError(f"auto_augment: the policy {policy_name!r} has no translations; do not give {given}")
        policy = make()
    return apply_auto_augment(policy, data, seed, **op_kwargs(shape, fill_value, interp_type))


def auto_augment_image_net(data: DataNode, shape: Any = None, fill_value: Any = 128, interp_type: Any = None,
                           max_translate_abs: Any = None, max_translate_rel: Any = None,
                           seed: Any = None) -> DataNode:
    """AutoAugment with the ImageNet policy (``auto_augment(data, "image_net", ...)``)."""
    return auto_augment(data, "image_net", shape, fill_value, interp_type, max_translate_abs, max_translate_rel, seed)
