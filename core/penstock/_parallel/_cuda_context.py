"""Whether this process already holds a CUDA context: forked workers cannot use one."""
from __future__ import annotations

import ctypes
import sys


def _driver_has_context() -> bool:
    """Asks the CUDA driver, only when this process already loaded it (nothing is initialized
    here): is a primary context active on some device, or a context current on this thread?"""
    try:
        with open("/proc/self/maps") as f:
            if "libcuda.so" not in f.read():
                return False
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:  # CUDA_ERROR_NOT_INITIALIZED: no context
        return False
    for ordinal in range(count.value):
        dev, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
        if (lib.cuDeviceGet(ctypes.byref(dev), ordinal) == 0 and
                lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) == 0 and
                active.value):
            return True
    ctx = ctypes.c_void_p(0)
    return lib.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and bool(ctx.value)


def cuda_context_exists() -> bool:
    """Whether this process already holds a CUDA context, judged without creating one and
    without importing a framework: frameworks already imported are asked, then the driver."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return True
    except Exception:  # noqa: BLE001 - a torch without CUDA support
        pass
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None and cupy.get_default_memory_pool().total_bytes() > 0:
            return True
    except Exception:  # noqa: BLE001
        pass
    return _driver_has_context()
