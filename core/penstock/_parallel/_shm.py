"""Shared-memory regions: anonymous memfd segments that grow on demand.

The pipeline creates a region, passes its file descriptor to a worker once (SCM_RIGHTS), and the
worker writes a batch into it at the batch's final offsets. Having no name, a segment can never
outlive the processes that map it, however they end (SIGKILL included).
"""
from __future__ import annotations

import mmap
import os
from typing import Callable

import numpy as np

MIN_CAPACITY = 1 << 16
ALIGN = 64  # every output's region starts aligned, so any dtype can view it


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def output_starts(totals: list[int]) -> tuple[list[int], int]:
    """Where the outputs of one batch start in its region (bytes, aligned), and the end of the last:
    the one layout that workers and the pipeline both compute."""
    starts, pos = [], 0
    for n in totals:
        starts.append(pos)
        pos = aligned(pos + n)
    return starts, pos


def new_memfd(capacity: int) -> tuple[int, int]:
    """A new anonymous segment: its descriptor and size."""
    fd = os.memfd_create("penstock-external-source", os.MFD_CLOEXEC)
    capacity = max(MIN_CAPACITY, capacity)
    os.ftruncate(fd, capacity)
    return fd, capacity


class Segment:
    """A mapped memfd; ``grow`` enlarges it (whoever has the region to itself at that moment),
    ``ensure`` follows a growth made by another process."""

    def __init__(self, fd: int, capacity: int):
        self.fd = fd
        self.capacity = 0
        self.mm: mmap.mmap | None = None
        self.map(capacity)

    def map(self, capacity: int) -> None:
        if self.mm is not None:
            self.mm.close()
        self.mm = mmap.mmap(self.fd, capacity)
        self.capacity = capacity

    def ensure(self, capacity: int) -> None:
        """Maps at least ``capacity`` bytes (another process grew the segment to that size)."""
        if capacity > self.capacity:
            self.map(capacity)

    def grow(self, needed: int) -> None:
        if needed > self.capacity:
            capacity = max(needed, 2 * self.capacity)
            os.ftruncate(self.fd, capacity)
            self.map(capacity)

    def close(self) -> None:
        """Closes the descriptor and unmaps; a mapping still viewed by a batch stays until that batch
        is freed (the mmap object unmaps itself then)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:
                pass
            self.mm = None


class _Lease:
    """The owner of a region's bytes while batches view them: numpy keeps it as the base of every
    array made from it, so it dies with the last view and then hands the region back."""

    def __init__(self, mm: mmap.mmap, nbytes: int, on_release: Callable[[], None]):
        self._bytes = np.frombuffer(mm, np.uint8, nbytes)  # keeps the mapping exported, so never unmapped
        self.__array_interface__ = self._bytes.__array_interface__
        self._on_release = on_release

    def __del__(self) -> None:
        self._bytes = None  # first the export goes, so whoever takes the region next may remap it
        self._on_release()


def lease(seg: Segment, nbytes: int, on_release: Callable[[], None]) -> np.ndarray:
    """The first ``nbytes`` of ``seg`` as a uint8 array without a copy; ``on_release`` runs once no
    array viewing them is left (in whichever thread frees the last one)."""
    return np.asarray(_Lease(seg.mm, nbytes, on_release))
