"""Shared-memory slots: anonymous memfd segments that grow on demand.

A worker creates a slot, writes a batch into it and passes its file descriptor to the pipeline
process once (SCM_RIGHTS). Having no name, a segment can never outlive the processes that map
it, however they end (SIGKILL included).
"""
from __future__ import annotations

import mmap
import os

MIN_CAPACITY = 1 << 16
ALIGN = 64  # every output's region starts aligned, so any dtype can view it


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Segment:
    """A mapped memfd; ``grow`` enlarges it (the owner) or follows another process's growth."""

    def __init__(self, fd: int, capacity: int):
        self.fd = fd
        self.capacity = 0
        self.mm: mmap.mmap | None = None
        self.map(capacity)

    @classmethod
    def create(cls, capacity: int) -> "Segment":
        fd = os.memfd_create("penstock-external-source", os.MFD_CLOEXEC)
        capacity = max(MIN_CAPACITY, capacity)
        os.ftruncate(fd, capacity)
        return cls(fd, capacity)

    def map(self, capacity: int) -> None:
        if self.mm is not None:
            self.mm.close()
        self.mm = mmap.mmap(self.fd, capacity)
        self.capacity = capacity

    def grow(self, needed: int) -> None:
        capacity = max(needed, 2 * self.capacity)
        os.ftruncate(self.fd, capacity)
        self.map(capacity)

    def close(self) -> None:
        if self.mm is not None:
            self.mm.close()
            self.mm = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
