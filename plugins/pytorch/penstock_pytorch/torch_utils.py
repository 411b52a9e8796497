"""``penstock.plugin.pytorch.torch_utils``: penstock tensors to torch tensors, shared or copied."""
from __future__ import annotations

import sys
from typing import Any

import torch

from penstock.tensors import TensorGPU

from .tensors import feed_ndarray, to_torch, to_torch_type

# `import penstock.plugin.pytorch.torch_utils` must find this module, not load a second copy of it
sys.modules.setdefault("penstock.plugin.pytorch.torch_utils", sys.modules[__name__])


def to_torch_tensor(dali_tensor: Any, copy: bool) -> torch.Tensor:
    """A torch tensor of a penstock tensor (or dense batch): a copy into new torch memory (on the
    same device; GPU copies queued on torch's current stream), or, without ``copy``, a view through
    DLPack ordered after the producing stream."""
    if not copy:
        return to_torch(dali_tensor)
    tensor = dali_tensor.as_tensor() if hasattr(dali_tensor, "as_tensor") else dali_tensor
    on_gpu = isinstance(tensor, TensorGPU)
    device = torch.device("cuda", tensor.device_id()) if on_gpu else torch.device("cpu")
    out = torch.empty(tensor.shape(), dtype=to_torch_type[tensor.dtype], device=device)
    return feed_ndarray(dali_tensor, out, torch.cuda.current_stream(device) if on_gpu else None)


__all__ = ["feed_ndarray", "to_torch_tensor", "to_torch_type"]
