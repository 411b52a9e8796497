"""Devices of the dynamic mode: ``Device("cpu")``, ``Device("gpu", 0)``, ``device("gpu:1")``.

A GPU device is a CUDA device ordinal; entering one (``with ndd.Device("gpu", 1):``) makes it the
thread's current device for operators and new contexts, as CUDA's current device is.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Union

from ... import _cuda

__all__ = ["Device", "DeviceLike", "device"]

_local = threading.local()


def _cupy() -> Any:
    return _cuda.require("a GPU device of the dynamic mode")


@functools.lru_cache(maxsize=None)
def gpu_usable() -> bool:
    """Whether CUDA is usable here (asked once: the answer does not change while the process runs)."""
    return _cuda.available()


class Device:
    """The CPU, or one GPU (``device_id``: its CUDA ordinal; the current one if not given)."""

    def __init__(self, name: str, device_id: int | None = None):
        kind, _, ordinal = str(name).partition(":")
        if ordinal:
            if device_id is not None:
                raise ValueError(f"Invalid device name: {name!r} names an ordinal and device_id={device_id} "
                                 "was given too")
            try:
                device_id = int(ordinal)
            except ValueError:
                raise ValueError(f"Invalid device name: {name!r}") from None
        kind = "gpu" if kind == "cuda" else kind
        if kind not in ("cpu", "gpu"):
            raise ValueError(f"Invalid device type: {kind!r} (expected 'cpu' or 'gpu')")
        if kind == "cpu":
            if device_id is not None:
                raise ValueError(f"Invalid device id: {device_id} for the CPU; it must be None")
        elif device_id is None:
            device_id = int(_cupy().cuda.runtime.getDevice())
        elif device_id < 0 or device_id >= _cupy().cuda.runtime.getDeviceCount():
            raise ValueError(f"Invalid device id: {device_id}; this machine has "
                             f"{_cupy().cuda.runtime.getDeviceCount()} CUDA device(s)")
        self.device_type = kind
        self.device_id = device_id

    @staticmethod
    def default_device_id(device_type: str) -> int | None:
        """None for the CPU; the current CUDA device for the GPU."""
        if device_type == "cpu":
            return None
        if device_type == "gpu":
            return int(_cupy().cuda.runtime.getDevice())
        raise ValueError(f"Invalid device type: {device_type!r}")

    @staticmethod
    def type_from_dlpack(kind: Any) -> str:
        """"cpu" or "gpu" for a DLPack device type (host memory pinned for CUDA is "cpu", managed "gpu")."""
        if int(kind) in (1, 3):  # kDLCPU, kDLCUDAHost
            return "cpu"
        if int(kind) in (2, 13):  # kDLCUDA, kDLCUDAManaged
            return "gpu"
        raise ValueError(f"unsupported DLPack device type {kind}")

    @staticmethod
    def from_dlpack(obj: Any) -> "Device":
        """The device of an object with ``__dlpack_device__``."""
        kind, ordinal = obj.__dlpack_device__()
        return CPU if Device.type_from_dlpack(kind) == "cpu" else Device("gpu", int(ordinal))

    @staticmethod
    def current() -> "Device":
        """The innermost device entered on this thread; else the GPU when one is usable, else the CPU
        (DALI's default device)."""
        stack = getattr(_local, "stack", None)
        if stack:
            return stack[-1]
        return Device("gpu") if gpu_usable() else CPU

    def __enter__(self) -> "Device":
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self)
        if self.device_type == "gpu":
            self._cuda_device = _cupy().cuda.Device(self.device_id)
            self._cuda_device.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.stack.pop()
        if self.device_type == "gpu":
            self._cuda_device.__exit__(*exc)

    def __str__(self) -> str:
        return self.device_type if self.device_id is None else f"{self.device_type}:{self.device_id}"

    def __repr__(self) -> str:
        if self.device_id is None:
            return f"Device(device_type={self.device_type!r})"
        return f"Device(device_type={self.device_type!r}, device_id={self.device_id})"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, Device) and (self.device_type, self.device_id) == (other.device_type, other.device_id)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))


CPU = Device("cpu")
Device.CPU = CPU

DeviceLike = Union[Device, str]


def device(obj: Any, id: int | None = None) -> Device:  # noqa: A002 - DALI's name
    """A ``Device`` from a ``Device``, a name (``"cpu"``, ``"gpu"``, ``"gpu:1"``, ``"cuda:0"``) or a
    ``torch.device``; None stays None."""
    if obj is None:
        return None
    if isinstance(obj, Device):
        if id is not None:
            raise ValueError("an id cannot be given with a Device")
        return obj
    if isinstance(obj, str):
        return Device(obj, id)
    if type(obj).__module__ == "torch" and type(obj).__name__ == "device":
        if id is not None:
            raise ValueError("an id cannot be given with a torch.device")
        return Device("gpu" if obj.type == "cuda" else obj.type, obj.index)
    raise TypeError(f"cannot make a Device of {type(obj).__name__}")
