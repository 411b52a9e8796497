"""Backend-level names: tensor classes, registry queries, and DALI's memory and device controls over
penstock's pools (``_cuda._pools`` says which pools and how each control acts on them)."""
from ._cuda import _nvimgcodec, _pools, _runtime
from ._registry import get_schema as GetSchema
from ._registry import registered_ops as _registered_ops
from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU


def cuda_available() -> bool:
    """Whether GPU pipelines can run here (CuPy installed and a CUDA device visible)."""
    return _runtime.available()


def cuda_unavailable_reason() -> str | None:
    """None when GPU pipelines can run here, else why not and what to install."""
    return _runtime.unavailable_reason()


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


# ---- memory ----------------------------------------------------------------------------------

def PreallocateDeviceMemory(bytes: int, device_id: int) -> None:  # noqa: A002 - DALI's argument name
    """Reserves ``bytes`` of device memory now; the next pipeline (or dynamic-mode stream) started on
    ``device_id`` takes it into its pool, so its first iterations allocate without the driver.
    Preallocate before building the pipeline it is for."""
    _pools.preallocate_device(int(bytes), int(device_id))


def PreallocatePinnedMemory(bytes: int) -> None:  # noqa: A002
    """Pins ``bytes`` of host memory now, from which the pipelines' staging blocks for host -> device
    copies are carved before any more is pinned."""
    _runtime.require("PreallocatePinnedMemory")
    _pools.pinned.reserve(int(bytes))


def ReleaseUnusedMemory() -> None:
    """Frees the memory no batch uses: free pinned staging blocks, unclaimed preallocations, the
    mixed decoders' free output blocks, the device and pinned memory CuPy caches, and the host
    buffer pool; batches a training loop freed are first given back once its work on them has
    passed (waiting for it). Safe while pipelines run."""
    _pools.release_unused()


def SetHostBufferGrowthFactor(factor: float) -> None:
    """How much at least a growing host buffer grows (1..4; pinned staging blocks)."""
    _pools.settings.host_growth = _pools.check_growth_factor(factor)


def SetDeviceBufferGrowthFactor(factor: float) -> None:
    """How much at least a growing device buffer grows (1..4; the mixed decoders' scratch memory)."""
    _pools.settings.device_growth = _pools.check_growth_factor(factor)


def SetBufferGrowthFactor(factor: float) -> None:
    """Both growth factors."""
    factor = _pools.check_growth_factor(factor)
    _pools.settings.host_growth = _pools.settings.device_growth = factor


def GetHostBufferGrowthFactor() -> float:
    return _pools.settings.host_growth


def GetDeviceBufferGrowthFactor() -> float:
    return _pools.settings.device_growth


def SetHostBufferShrinkThreshold(threshold: float) -> None:
    """0..1: a pinned staging block is lent only to a copy that fills at least this fraction of it
    (0: any copy that fits), so small copies do not hold large blocks."""
    _pools.settings.host_shrink = _pools.check_shrink_threshold(threshold)


def GetHostBufferShrinkThreshold() -> float:
    return _pools.settings.host_shrink


# ---- devices and versions --------------------------------------------------------------------

def GetCUDADeviceCount() -> int:
    """CUDA devices visible here (0 without CUDA)."""
    return _pools.device_count()


def GetCudaVersion() -> int:
    """The CUDA driver's version (12080 = 12.8); 0 without a driver."""
    return _runtime.driver_version()


def GetCufftVersion() -> int:
    """cuFFT's version; -1 where it is not available."""
    return _runtime.cufft_version()


def GetNppVersion() -> int:
    """-1: penstock does not use NPP."""
    return -1


def GetNvjpegVersion() -> int:
    """-1: penstock reaches nvJPEG only through nvImageCodec (GetNvimgcodecVersion)."""
    return -1


def GetNvimgcodecVersion() -> int:
    """nvImageCodec's version (major * 1000 + minor * 100 + patch); -1 when it is not installed."""
    return _nvimgcodec.library_version()


__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU", "GetSchema", "TryGetSchema",
           "RegisteredCPUOps", "RegisteredGPUOps", "RegisteredMixedOps", "cuda_available", "cuda_unavailable_reason",
           "PreallocateDeviceMemory", "PreallocatePinnedMemory", "ReleaseUnusedMemory", "SetHostBufferGrowthFactor",
           "SetDeviceBufferGrowthFactor", "SetBufferGrowthFactor", "GetHostBufferGrowthFactor",
           "GetDeviceBufferGrowthFactor", "SetHostBufferShrinkThreshold", "GetHostBufferShrinkThreshold",
           "GetCUDADeviceCount", "GetCudaVersion", "GetCufftVersion", "GetNppVersion", "GetNvjpegVersion",
           "GetNvimgcodecVersion"]
