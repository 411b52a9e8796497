"""Automatic augmentations: AutoAugment, RandAugment and TrivialAugment Wide, built on
conditionals (pipelines need ``enable_conditionals=True``)."""
from . import augmentations, auto_augment, core, rand_augment, trivial_augment

__all__ = ["augmentations", "auto_augment", "core", "rand_augment", "trivial_augment"]
