"""Backend-level names: tensor classes and registry queries."""
from ._registry import get_schema as GetSchema
from ._registry import registered_ops as _registered_ops
from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU


def cuda_available() -> bool:
    """Whether GPU pipelines can run here (CuPy installed and a CUDA device visible)."""
    from ._cuda import available
    return available()


def cuda_unavailable_reason() -> str | None:
    """None when GPU pipelines can run here, else why not and what to install."""
    from ._cuda import unavailable_reason
    return unavailable_reason()


def TryGetSchema(name: str):
    try:
        return GetSchema(name)
    except KeyError:
        return None


def RegisteredCPUOps() -> list:
    return _registered_ops("cpu")


def RegisteredGPUOps() -> list:
    return _registered_ops("gpu")


def RegisteredMixedOps() -> list:
    return _registered_ops("mixed")


__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU", "GetSchema", "TryGetSchema",
           "RegisteredCPUOps", "RegisteredGPUOps", "RegisteredMixedOps", "cuda_available", "cuda_unavailable_reason"]
