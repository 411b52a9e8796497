"""Pinned staging for the host's part of a mixed decoder's batch, in blocks of one size.

The host decodes its samples straight into pinned memory, from which they are copied into the
output batch on the device without a copy on the host. A part's samples are placed back to back in
blocks of ``BLOCK_BYTES``, as many blocks as its pixels need, so every block is of one size and any
block a part gave back serves the next, whatever the parts' sizes: pinning stops once the most
blocks in flight at once have been pinned, and a part that grows pins only the blocks it adds. A
block as large as the largest part so far (the rule before) had to be pinned anew for each part in
flight whenever a part outgrew it, and the smaller blocks went unused: on an H100 (2026-12-07,
high-resolution photographs, 16 threads) the timed windows that pinned 0.5-1.7 GB so ran validation
at 844-1,608 img/s, and on an H200 windows that pinned ran at half to nine tenths of those that did
not. Pinning takes 0.4-1.2 ms a MB and holds the CUDA driver while the hardware engines wait.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _engine
from .._cuda._pools import MIN_STAGING

# A block holds a few high-resolution photographs (2700 x 2300 x 3 is 18.6 MB) or a few hundred of
# an ImageNet-sized train pipeline's crops; pinning one takes 26-77 ms. A sample larger than a block
# takes a block of its own size. A part smaller than a block takes one block of the next power of
# two (64 KB at least): a small pipeline does not hold 64 MB blocks, and parts of any size between
# share a dozen sizes, each pinned once for each part in flight.
BLOCK_BYTES = 64 << 20


class HostStaging:
    """Pinned staging for samples of ``shapes`` [N, 3] (uint8 pixels), in blocks of ``block_bytes``
    (default ``BLOCK_BYTES``; a part smaller than that: one block of the next power of two) of the
    device context ``gpu``'s staging pool. The host's decoder writes sample i at ``places[i]`` (block,
    byte offset, bytes) of the blocks ``views``; then ``copy_into`` queues the copies to the device,
    or ``upload`` to one new device array, or ``give_back`` returns the blocks unused."""

    def __init__(self, gpu: Any, shapes: np.ndarray, block_bytes: int | None = None):
        self._gpu = gpu
        block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        total = int(_engine.shape_volumes(shapes).sum())
        if total < block_bytes:
            block_bytes = max(MIN_STAGING, 1 << max(0, total - 1).bit_length())
        self.places, used = _engine.places_in_blocks(shapes, block_bytes)
        # samples are placed in order: block k holds rows [first[k], first[k + 1])
        self._first = np.searchsorted(self.places[:, 0], np.arange(len(used) + 1))
        self._blocks: list = []
        try:
            for nbytes in used.tolist():
                self._blocks.append(gpu.staging(nbytes, block_bytes))
        except BaseException:
            self.give_back()
            raise
        self.views = [block.view for block in self._blocks]

    def copy_into(self, dsts: np.ndarray, after: Any = None) -> None:
        """Queues the copy of each sample to device address ``dsts[i]`` after the event ``after`` (None:
        after the stream's work so far), one engine call a block; the blocks go back."""
        blocks, self._blocks = self._blocks, []
        try:
            for k, block in enumerate(blocks):
                rows = slice(int(self._first[k]), int(self._first[k + 1]))
                block.copy_into(dsts[rows], self.places[rows, 1], self.places[rows, 2], after=after)
                blocks[k] = None
        finally:
            for block in blocks:
                if block is not None:
                    block.give_back()

    def upload(self) -> Any:
        """The samples packed back to back in a new uint8 device array (at ``_engine.packed_offsets`` of
        their shapes); the blocks go back."""
        sizes = np.ascontiguousarray(self.places[:, 2:])
        out = self._gpu.empty(int(sizes.sum()), np.uint8)
        self.copy_into(np.uint64(self._gpu.address(out)) + _engine.packed_offsets(sizes).astype(np.uint64))
        return out

    def packed(self) -> np.ndarray:
        """The samples packed back to back in a new host array (for a part that Python finishes)."""
        rows = self.places
        return _engine.pack_parts([self.views[b][o:o + n] for b, o, n in rows.tolist()], 1)[0]

    def give_back(self) -> None:
        """Returns the blocks unused (nothing was queued from them)."""
        blocks, self._blocks = self._blocks, []
        for block in blocks:
            block.give_back()
