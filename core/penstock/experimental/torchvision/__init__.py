"""DALI 2.x's TorchVision-style transforms (``torchvision.transforms.v2``'s names and arguments) on
penstock's kernels: ``from penstock.experimental.torchvision import Compose, RandomResizedCrop ...``.

Called on a PIL image or a torch tensor (CHW, or N x CHW), a transform runs in the dynamic mode and
returns what torchvision returns; ``Compose`` runs its transforms as a penstock pipeline; on
DataNodes (inside a pipeline definition) or dynamic-mode data the transforms give the same kind
back. Random parameters are drawn per image (torchvision draws them once per call). Needs torch.
``v2.functional`` has the functional forms.
"""
from ._base import InterpolationMode, Transform
from ._color import ColorJitter, Grayscale, RandomGrayscale
from ._compose import Compose, RandomApply
from ._geometry import CenterCrop, Pad, RandomCrop, RandomHorizontalFlip, RandomResizedCrop, RandomVerticalFlip, Resize
from ._tensor_ops import GaussianBlur, Normalize, PILToTensor, ToDtype, ToPILImage, ToPureTensor, ToTensor

__all__ = ["CenterCrop", "ColorJitter", "Compose", "GaussianBlur", "Grayscale", "InterpolationMode", "Normalize",
           "PILToTensor", "Pad", "RandomApply", "RandomCrop", "RandomGrayscale", "RandomHorizontalFlip",
           "RandomResizedCrop", "RandomVerticalFlip", "Resize", "ToDtype", "ToPILImage", "ToPureTensor", "ToTensor",
           "Transform"]
