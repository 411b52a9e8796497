"""``penstock.plugin.pytorch.fn.torch_python_function`` and ``TorchPythonFunction``.

A Python operator whose function receives and returns torch tensors: CPU tensors sharing the
batch's memory, or CUDA tensors with the pipeline's stream made torch's current stream, so the
function's kernels are ordered with the rest of the pipeline without the host waiting.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np
import torch

from penstock._registry import register, register_kernel
from penstock.operators import python_function as _pf

# `import penstock.plugin.pytorch.fn` must find this module, not load a second copy of it
sys.modules.setdefault("penstock.plugin.pytorch.fn", sys.modules[__name__])

TORCH_PYTHON_FUNCTION = _pf.make_schema(
    "TorchPythonFunction", "Runs a Python function on torch tensors (CPU or CUDA).", False, internal=True)


class _TorchFlavor(_pf.Flavor):
    def host_in(self, arr: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(arr)

    def host_out(self, obj: Any) -> np.ndarray:
        if isinstance(obj, torch.Tensor):
            return obj.detach().numpy()
        return super().host_out(obj)

    def device_in(self, arr: Any) -> torch.Tensor:
        return torch.from_dlpack(arr)

    def device_out(self, obj: Any) -> Any:
        import cupy
        return cupy.from_dlpack(obj.detach() if isinstance(obj, torch.Tensor) else obj)

    def readonly_inputs(self) -> bool:
        return False  # torch tensors cannot be read-only

    def gpu_context(self, op: Any, stream: Any) -> Any:
        return _on_stream(stream)


@contextlib.contextmanager
def _on_stream(stream: Any):
    """The pipeline's (CuPy) stream made current for both CuPy and torch."""
    with stream, torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
        yield


@register(TORCH_PYTHON_FUNCTION)
class TorchPythonFunctionCPU(_pf.PythonFunctionCPU):
    flavor = _TorchFlavor()


@register_kernel(TORCH_PYTHON_FUNCTION.name, "gpu")
class TorchPythonFunctionGPU(_pf.GPUKernelMixin, TorchPythonFunctionCPU):
    pass


class TorchPythonFunction(_pf.PythonOpsBase):
    """``TorchPythonFunction(function, num_outputs=1, device="cpu", batch_processing=False)``."""
    schema = TORCH_PYTHON_FUNCTION


torch_python_function = _pf.make_fn(TORCH_PYTHON_FUNCTION)

__all__ = ["torch_python_function", "TorchPythonFunction"]
