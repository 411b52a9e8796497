"""CUDA streams of the dynamic mode: ``Stream``, ``stream()``, and the streams GPU operators run
on (a thread's current stream, a device's default stream)."""
from __future__ import annotations

import threading
from typing import Any

from ... import _cuda
from ...tensors._device import cupy_stream

__all__ = ["Stream", "stream", "set_default_stream", "get_default_stream", "set_current_stream",
           "get_current_stream"]


def _cupy() -> Any:
    return _cuda.require("a CUDA stream")


def _handle_of(obj: Any) -> int:
    """The raw ``cudaStream_t`` of a stream object: ``__cuda_stream__``, PyTorch's and CuPy's
    streams, or an int handle."""
    if hasattr(obj, "__cuda_stream__"):
        return int(obj.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(obj, attr):
            return int(getattr(obj, attr))
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj
    raise TypeError(f"not a CUDA stream: {type(obj).__name__}")


class Stream:
    """A CUDA stream: a new one (the default), or a wrapper of another library's stream object or
    raw handle, which it keeps alive."""
    create_new = object()

    def __init__(self, *, stream: Any = create_new, device_id: int | None = None):
        cp = _cupy()
        if stream is None:
            raise ValueError("The stream must not be None; leave it out to create a new stream")
        if stream is Stream.create_new:
            self._device_id = int(cp.cuda.runtime.getDevice()) if device_id is None else int(device_id)
            with cp.cuda.Device(self._device_id):
                self._cupy_stream = cp.cuda.Stream(non_blocking=True)
            self._obj = self._cupy_stream
        elif isinstance(stream, Stream):
            if device_id is not None and device_id != stream.device_id:
                raise ValueError(f"The device_id {device_id} doesn't match the stream's {stream.device_id}")
            self._device_id, self._cupy_stream, self._obj = stream._device_id, stream._cupy_stream, stream._obj
        else:
            handle = _handle_of(stream)
            owner = getattr(getattr(stream, "device", None), "index", None)  # torch streams know their device
            if owner is None:
                owner = getattr(getattr(stream, "device", None), "id", None)  # cupy streams
            if owner is None:
                owner = int(cp.cuda.runtime.getDevice())
            if device_id is not None and device_id != owner:
                raise ValueError(f"The device_id {device_id} doesn't match the stream's device {owner}")
            self._device_id = int(owner)
            self._cupy_stream = cupy_stream(handle, self._device_id)
            self._obj = stream

    @property
    def handle(self) -> int:
        return int(self._cupy_stream.ptr)

    @property
    def device_id(self) -> int:
        return self._device_id

    @property
    def cupy_stream(self) -> Any:
        """The stream as CuPy sees it (what penstock's GPU kernels are queued on)."""
        return self._cupy_stream

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)

    def synchronize(self) -> None:
        """Waits until the work queued on the stream so far has finished."""
        self._cupy_stream.synchronize()

    def __eq__(self, other: Any) -> bool:
        if other is None:
            return False
        try:
            other = stream(stream=other)
        except TypeError:
            return NotImplemented
        return (self.handle, self.device_id) == (other.handle, other.device_id)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.handle, self.device_id))

    def __str__(self) -> str:
        return f"CUDA stream {self.handle}, device_id={self.device_id}"

    def __repr__(self) -> str:
        return f"Stream(handle={self.handle}, device_id={self.device_id})"


def stream(*, stream: Any = Stream.create_new, device_id: int | None = None) -> Stream | None:  # noqa: A002
    """A new stream (on ``device_id`` or the current device), a ``Stream`` wrapping another
    library's stream or handle, or None for None."""
    if stream is None:
        return None
    if isinstance(stream, Stream):
        if device_id is not None and device_id != stream.device_id:
            raise ValueError(f"The device_id {device_id} doesn't match the stream's {stream.device_id}")
        return stream
    return Stream(stream=stream, device_id=device_id)


_defaults: dict[int, Stream] = {}  # per device, set_default_stream's streams
_local = threading.local()


def set_default_stream(cuda_stream: Any, /, device_id: int | None = None) -> None:
    """The stream operators of a device run on in threads that set no current stream (None clears
    it: each context then makes a stream of its own)."""
    s = stream(stream=cuda_stream, device_id=device_id) if cuda_stream is not None else None
    if device_id is None:
        device_id = s.device_id if s is not None else int(_cupy().cuda.runtime.getDevice())
    if s is None:
        _defaults.pop(device_id, None)
    else:
        _defaults[device_id] = s


def get_default_stream(device_id: int | None = None) -> Stream | None:
    """The stream set by ``set_default_stream`` for ``device_id`` (the current device), or None."""
    if not _defaults:
        return None
    if device_id is None:
        device_id = int(_cupy().cuda.runtime.getDevice())
    return _defaults.get(device_id)


def set_current_stream(cuda_stream: Any, /) -> None:
    """The stream this thread's operators run on (None: back to the default stream)."""
    _local.current = stream(stream=cuda_stream) if cuda_stream is not None else None


def get_current_stream() -> Stream | None:
    """This thread's current stream, else the current device's default stream; None without either
    (or without a GPU)."""
    current = getattr(_local, "current", None)
    if current is not None:
        return current
    if not _defaults:
        return None
    return get_default_stream()
