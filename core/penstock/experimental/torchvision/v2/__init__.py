"""``torchvision.transforms.v2``'s place in penstock's TorchVision-style API: the transforms, and
``functional``."""
from .. import (CenterCrop, ColorJitter, Compose, GaussianBlur, Grayscale, InterpolationMode, Normalize,  # noqa: F401
                PILToTensor, Pad, RandomApply, RandomCrop, RandomGrayscale, RandomHorizontalFlip, RandomResizedCrop,
                RandomVerticalFlip, Resize, ToDtype, ToPILImage, ToPureTensor, ToTensor, Transform)
from .. import __all__ as _all
from . import functional  # noqa: F401

__all__ = list(_all) + ["functional"]
