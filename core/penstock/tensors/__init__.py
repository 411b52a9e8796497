"""Tensors and batches of tensors.

A batch (``TensorList*``) is one packed buffer with per-sample shapes and offsets: the form in
which batches cross into native kernels, and one whose dense case views out as a single array
with a leading batch dimension without copying.
"""
from ._device import TensorGPU, TensorListGPU
from ._host import TensorCPU, TensorListCPU

__all__ = ["TensorCPU", "TensorListCPU", "TensorGPU", "TensorListGPU"]
