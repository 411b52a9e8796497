"""Whether CUDA is usable here, and CuPy when it is."""
from __future__ import annotations

from typing import Any

from ..tensors._device import INSTALL_HINT


def _import_cupy() -> Any:
    import cupy  # noqa: PLC0415 - optional dependency, imported on first GPU use
    return cupy


def unavailable_reason() -> str | None:
    """None when GPU pipelines can run here, else why not (what to install or what is missing), as
    a phrase that follows "requires a CUDA-capable GPU but" (DALI's words where it has them)."""
    try:
        cp = _import_cupy()
    except ImportError:
        return f"CuPy, which runs penstock's GPU operators, is not installed: {INSTALL_HINT}"
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            return "none are available."
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        return f"the CUDA driver is not installed or its version is insufficient. ({type(exc).__name__}: {exc})"
    return None


def available() -> bool:
    return unavailable_reason() is None


def require(what: str = "a GPU pipeline") -> Any:
    """CuPy, or a RuntimeError saying what to install."""
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"{what} needs CUDA, but {reason}")
    return _import_cupy()


def driver_version() -> int:
    """The CUDA driver's version (12080 = 12.8), 0 without a driver."""
    try:
        return int(_import_cupy().cuda.runtime.driverGetVersion())
    except Exception:  # noqa: BLE001 - no CuPy, no driver
        return 0


def cufft_version() -> int:
    """cuFFT's version (the GPU audio features' FFTs go through CuPy's cuFFT), -1 without it."""
    try:
        return int(_import_cupy().cuda.cufft.getVersion())
    except Exception:  # noqa: BLE001 - no CuPy, no cuFFT library
        return -1
