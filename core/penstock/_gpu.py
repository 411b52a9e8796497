"""Whether penstock's GPU backend can run here (CuPy + a CUDA device)."""
from __future__ import annotations


def available() -> bool:
    """True when GPU kernels are registered and a CUDA device answers."""
    from ._registry import _KERNELS
    if not any(device in ("gpu", "mixed") for (_, device) in _KERNELS):
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return False


def current_device() -> int:
    import cupy
    return int(cupy.cuda.runtime.getDevice())
