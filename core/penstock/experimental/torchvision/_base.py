"""What every transform shares: how it is called (on PIL images and torch tensors as torchvision's
transforms are, or on DataNodes / dynamic-mode data), what it knows of the images it gets
(``Spec``), and the conversions between torchvision's image types and penstock's."""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable

import numpy as np

from ...data_node import DataNode
from ...types import DALIInterpType
from .. import dynamic as ndd
from ._params import Params, params_for


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a transform knows of its images before it runs: the layout ("HWC" for PIL images, "CHW"
    for tensors), the element type (None: not known, for DataNodes a user passes) and whether they
    are PIL images (for which torchvision's functions differ: always antialiased, PIL's luma)."""
    layout: str
    dtype: np.dtype | None
    pil: bool = False

    def with_(self, **changes: Any) -> "Spec":
        return dataclasses.replace(self, **changes)


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (their names and values)."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# PIL's filter numbers, which torchvision also takes for ``interpolation``
_FROM_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
# penstock's filters: NEAREST takes the pixel nearest to each output pixel's centre (torchvision's
# NEAREST_EXACT; its NEAREST takes the one left of it). BOX and HAMMING have no penstock filter.
_INTERP = {InterpolationMode.NEAREST: DALIInterpType.INTERP_NN, InterpolationMode.NEAREST_EXACT: DALIInterpType.INTERP_NN,
           InterpolationMode.BILINEAR: DALIInterpType.INTERP_LINEAR, InterpolationMode.BICUBIC: DALIInterpType.INTERP_CUBIC,
           InterpolationMode.LANCZOS: DALIInterpType.INTERP_LANCZOS3}


def interp_type(mode: Any) -> DALIInterpType:
    if isinstance(mode, int) and not isinstance(mode, bool):
        mode = _FROM_INT.get(mode, mode)
    if isinstance(mode, str):
        mode = InterpolationMode(mode)
    if not isinstance(mode, InterpolationMode):
        raise TypeError(f"interpolation must be an InterpolationMode or one of PIL's filter numbers, got {mode!r}")
    if mode not in _INTERP:
        raise NotImplementedError(f"interpolation {mode.name} has no penstock resampling filter "
                                  "(NEAREST, NEAREST_EXACT, BILINEAR, BICUBIC and LANCZOS have)")
    return _INTERP[mode]


def probability(p: Any) -> float:
    """``p`` checked as torchvision checks a probability."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p should be a floating point value in the interval [0.0, 1.0], got {p!r}")
    return float(p)


class Transform:
    """Base of the transforms. Called on a PIL image or a torch tensor (CHW, or batches of them
    with leading dimensions) it runs in the dynamic mode and returns what torchvision returns;
    on a DataNode (in a pipeline definition) or dynamic-mode data it returns the same kind.
    ``device="gpu"`` runs it on the GPU."""
    output_kind: str | None = None  # what it turns images into: "tensor", "pil", or None (the same kind)

    def __init__(self, device: str = "cpu"):
        if device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
        self.device = device

    def __call__(self, inpt: Any, layout: str | None = None) -> Any:
        if isinstance(inpt, DataNode):
            return self.apply(inpt, Spec(layout or "HWC", None))
        if isinstance(inpt, (ndd.Tensor, ndd.Batch)):
            return self.apply(inpt, Spec(layout or inpt.layout or "HWC", inpt.dtype.numpy_type()))
        data, spec, restore = to_dynamic(inpt)
        return restore(self.apply(data, spec), self.output_kind)

    def apply(self, x: Any, spec: Spec) -> Any:
        """This transform on ``x`` (a DataNode or dynamic-mode data) with the given spec."""
        if self.device == "gpu":
            x = x.gpu()
        return self._kernel(x, params_for(x, spec.layout), spec)

    def out_spec(self, spec: Spec) -> Spec:
        """What the images are like after this transform."""
        return spec

    def _kernel(self, x: Any, P: Params, spec: Spec) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no kernel")

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


# ---- torchvision's image types <-> penstock's -----------------------------------------------------
_PIL_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def is_pil(x: Any) -> bool:
    return type(x).__module__.startswith("PIL.") and hasattr(x, "getbands")


def is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dim")


def to_dynamic(inpt: Any) -> tuple[Any, Spec, Callable[[Any, str | None], Any]]:
    """(dynamic-mode data, its spec, a function turning a result back into ``inpt``'s kind): a PIL
    image is one HWC uint8 Tensor; a torch tensor (..., C, H, W) one CHW Tensor, or a Batch of the
    images along its leading dimensions."""
    if is_pil(inpt):
        if inpt.mode not in _PIL_MODES.values():
            raise ValueError(f"PIL images of mode {inpt.mode!r} are not supported (L, RGB and RGBA are)")
        arr = np.array(inpt, copy=True)
        data = ndd.tensor(arr[..., None] if arr.ndim == 2 else arr, layout="HWC")
        return data, Spec("HWC", np.dtype(np.uint8), pil=True), lambda out, kind: restore(out, kind or "pil", ())
    if is_torch(inpt):
        if inpt.dim() < 3:
            raise TypeError(f"a tensor image needs at least 3 dimensions (C, H, W), got shape {tuple(inpt.shape)}")
        lead = tuple(inpt.shape[:-3])
        dtype = np.dtype(str(inpt.dtype).replace("torch.", ""))
        if lead:
            data = ndd.as_batch(inpt.reshape(-1, *inpt.shape[-3:]), layout="CHW")
        else:
            data = ndd.as_tensor(inpt, layout="CHW")
        return data, Spec("CHW", dtype), lambda out, kind: restore(out, kind or "tensor", lead)
    raise TypeError(f"expected a PIL image or a torch tensor, got {type(inpt).__name__}")


def restore(out: Any, kind: str, lead: tuple) -> Any:
    """A dynamic-mode result as ``kind``: "pil" (from HWC uint8 data) or "tensor" (torch, with the
    input's leading dimensions)."""
    if kind == "pil":
        from PIL import Image
        arr = np.asarray(out.cpu())
        if arr.shape[-1] not in _PIL_MODES:
            raise ValueError(f"a PIL image has 1, 3 or 4 channels; the result has {arr.shape[-1]}")
        mode = _PIL_MODES[arr.shape[-1]]
        return Image.fromarray(arr[..., 0] if mode == "L" else arr, mode)
    import torch
    dense = ndd.as_tensor(out) if isinstance(out, ndd.Batch) else out
    result = dense.torch() if dense.device.device_type == "gpu" else torch.from_numpy(np.array(np.asarray(dense)))
    return result.reshape(*lead, *result.shape[-3:]) if lead else result
