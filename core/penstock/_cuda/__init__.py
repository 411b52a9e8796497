"""penstock's CUDA backend: the device runtime, kernels compiled at run time from ``csrc/cuda``,
and the batch kernels GPU operators call. Imports CuPy only when a GPU pipeline is built."""
from . import _compile  # noqa: F401  (penstock._cuda._compile.source: the kernel sources as compiled)
from ._context import DeviceContext
from ._runtime import INSTALL_HINT, available, require, unavailable_reason

__all__ = ["INSTALL_HINT", "DeviceContext", "available", "require", "unavailable_reason"]
