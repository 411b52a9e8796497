"""One batch's large JPEGs shared between the hardware engines and nvJPEG's CUDA decoder as they go.

A split made before the decoding (``_split_by_bytes``) sizes each decoder's part from rates measured
on earlier batches. Between the hardware engines and the CUDA decoder those rates are far apart and
move with the pictures (whole images or windows) and with what else the GPU runs, and a wrong split
leaves one decoder idle while the other finishes: on an H100 (high-resolution validation, 256
photographs of ~6 MP a batch) the engines waited 95-180 ms a batch for the CUDA decoder's part, and
the pipeline ran 11% slower than with the engines alone. Here the batch is a queue instead. The
engines take runs from its front, sized so that they would finish with the CUDA decoder by the rates
measured so far (a first run of less, so that a CUDA decoder faster than thought is not left without
work); the CUDA decoder takes a few samples at a time from its back, only JPEGs of more pixels than
``hybrid_huffman_threshold``. Whoever finishes first takes what is left, so the decoders finish
within one of the CUDA decoder's takes of each other whatever the rates.
"""
from __future__ import annotations

import threading

import numpy as np

# the share of its reckoned part the engines' first run takes: the rest waits for rates of this batch
FIRST_RUN = 0.8


class SharedBatch:
    """A batch's GPU-side samples (positions 0..n-1, ``lengths`` bytes each) to be taken in runs: from
    the front by the hardware engines, from the back by the CUDA decoder, which may take only the
    positions ``large_ok``. The small ones are put first (in order), the large ones after them."""

    def __init__(self, lengths: np.ndarray, large_ok: np.ndarray):
        large_ok = np.asarray(large_ok, bool)
        self._order = np.concatenate([np.flatnonzero(~large_ok), np.flatnonzero(large_ok)])
        self._bytes_before = np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64)[self._order])])
        self._first_large = int((~large_ok).sum())
        self._front = 0
        self._back = len(self._order)
        self._lock = threading.Lock()

    @property
    def taken_from_back(self) -> int:
        return len(self._order) - self._back

    def remaining_bytes(self) -> int:
        with self._lock:
            return int(self._bytes_before[self._back] - self._bytes_before[self._front])

    def take_front(self, nbytes: float) -> np.ndarray:
        """The positions of the next run from the front: at least one sample, then as many as fit in
        ``nbytes`` (a sample goes where its middle byte falls); none when the queue is empty."""
        with self._lock:
            start = self._front
            if start >= self._back:
                return self._order[:0]
            target = self._bytes_before[start] + nbytes
            middles = (self._bytes_before[start + 1:self._back + 1] + self._bytes_before[start:self._back]) / 2
            end = start + max(1, int(np.searchsorted(middles, target, side="right")))
            self._front = end
            return self._order[start:end]

    def take_back(self, count: int) -> np.ndarray:
        """Up to ``count`` large samples from the back; none once the large ones are all taken."""
        with self._lock:
            end = self._back
            start = max(self._front, self._first_large, end - max(1, int(count)))
            if start >= end:
                return self._order[:0]
            self._back = start
            return self._order[start:end]


def front_run_bytes(remaining: float, own_rate: float, rates: float, first: bool) -> float:
    """The bytes a decoder taking from the front asks for: its rate's share of what is left of the
    batch (``own_rate`` of all the decoders' ``rates``, bytes a second), so that it would finish with
    the others; a first run of FIRST_RUN of that. All that is left when that is nearly all of it."""
    share = remaining * own_rate / rates if rates > 0 else remaining
    if first:
        return FIRST_RUN * share
    return remaining if share >= 0.9 * remaining else share
