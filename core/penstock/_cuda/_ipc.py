"""Device buffers that another process maps by CUDA IPC, one per slot of a child's work in flight."""
from __future__ import annotations

from typing import Any


class ExportedBuffers:
    """Per slot, a device buffer (``cupy.cuda.Memory``, a cudaMalloc block as CUDA IPC needs) that
    grows as the slot's parts do. A grown buffer's IPC handle goes to the process that maps it; the
    outgrown one lives until the slot's next use, by which time that process has unmapped it."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.buffers: dict[int, Any] = {}
        self._retired: dict[int, Any] = {}

    def ensure(self, slot: int, nbytes: int) -> tuple[Any, bytes | None]:
        """The slot's buffer, of ``nbytes`` at least, and the IPC handle of a new one (else None)."""
        self._retired.pop(slot, None)
        current = self.buffers.get(slot)
        if current is not None and current.size >= max(1, nbytes):
            return current, None
        cp = self.ctx.cp
        with self.ctx.device:
            grown = cp.cuda.Memory(max(1, nbytes + nbytes // 8))
        self._retired[slot] = current
        self.buffers[slot] = grown
        return grown, cp.cuda.runtime.ipcGetMemHandle(grown.ptr)
