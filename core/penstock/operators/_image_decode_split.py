"""Which of a batch's JPEGs the host decodes beside the GPU decoder.

The GPU side decodes each window as a region of its code stream; its cost is taken as the encoded
bytes (an entropy decoder reads the scan through), its measured rate absorbing what the region
spares. The host decodes only the window: it entropy-decodes the rows down to the
window's last one and transforms only the window, so its time follows the bytes above the window's
bottom, less for narrow windows. (Checking for corrupt data, the default, it also entropy-decodes
the rows below the window the first time it sees a file's bytes: the model leaves them out, and the
host's measured rate absorbs them; not yet measured on a GPU.) The split gives the host the samples it is relatively fastest at,
until both sides are expected to finish together, at the rates each side measured on earlier
batches; the measurements keep adjusting the split (host cores busy with other work, a GPU shared
with training).

Only windows that spare the host at least half of a whole image's work qualify, unless taking any
sample is expected to finish the batch's decoding a fifth sooner than the qualifying ones alone (the
cap is lifted until the gain falls under a tenth). Measured on an H200 (ResNet-50 pipelines, 16 host
cores): with whole images always allowed, the validation pipeline alone fell from 19.9k to 17.5k
img/s with 4 host threads and to 12.7k with 12, and in a later run from 26.0k to 23.6k (4 threads)
and 21.6k (12): the GPU decoder alone took 10.8 ms a batch there, a fifth of the batch on the host
saved it 0.7 ms, and the host's decoding of whole images cost more than that. Beside a training
ResNet-50 the GPU side slowed to 350 MB/s (51 ms a batch for 84% of the JPEGs, the model's kernels
on the same SMs) while 13 host cores idled: 12 host threads with whole images allowed gave the host
68-73% of the JPEGs and the model 1-2% more images a second, and decoding on the host alone fed it
at 0.983-0.987 of its ceiling against 0.946 for the mixed decoder. The training pipeline's random
crops ran at 22.0k with the default split, against 21.2k with hw_decoder_load=1.0 (the hardware
engines alone, no host share) in the same run, and 19.4k against 22.5k in another with DALI's best
setting, hw_decoder_load=0.9.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import _engine

# Host time per encoded byte: the entropy decoding (every byte down to the window's bottom) and the
# inverse transform and colour conversion (only the window's columns), about evenly.
_ENTROPY_SHARE = 0.5
_SMOOTHING = 0.3  # weight of the newest batch in a side's smoothed work and seconds
_MAX_HOST_RATIO = 0.5  # host cost per GPU byte of the samples the host may take
# the least share of the capped split's expected time that lifting the cap must save, to lift it and
# to keep it lifted: a margin for what the rates leave out (the host's uploads, the cores it takes)
_OPEN_GAIN, _CLOSE_GAIN = 0.2, 0.1
# A side given none of this many batches in a row has its measurement forgotten: its rate is the first
# guess again, and the next split gives it work to measure. A side without work is not measured, so
# one slow batch of the GPU side (a model's warm-up beside it) would otherwise keep every JPEG on the
# host for the rest of the run, the hardware engines idle.
_FORGET_AFTER = 32


def host_cost(lengths: np.ndarray, windows: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """Per sample, the host's work in encoded-byte units: ``windows`` rows (y, x, h, w) of images
    ``shapes`` (H, W, ...)."""
    height = np.maximum(shapes[:, 0], 1)
    width = np.maximum(shapes[:, 1], 1)
    rows = np.clip((windows[:, 0] + windows[:, 2]) / height, 0.0, 1.0)
    columns = np.clip(windows[:, 3] / width, 0.0, 1.0)
    return lengths * rows * (_ENTROPY_SHARE + (1.0 - _ENTROPY_SHARE) * columns)


class HostShare:
    """The split, and the two sides' rates (cost units per second) it comes from: per side, its
    batches' work and seconds, each smoothed, their ratio the rate. A smoothed ratio of each batch
    would let the quick batches outweigh the slow ones: beside a ResNet-50 training on an H200 the
    GPU side took 51 ms a batch for its part (350 MB/s over the run) while such a rate said 830 MB/s,
    and the host got 16% of the JPEGs. A side's first batch pays for its set-up (the decoder's first
    use, new buffers) and does not count; until a side's rate is measured, the guess given stands,
    and it stands again after the side was given none of _FORGET_AFTER batches in a row."""

    def __init__(self, host_rate: float, gpu_rate: float):
        self.rates = {"host": float(host_rate), "gpu": float(gpu_rate)}
        self._guesses = dict(self.rates)
        self._batches = {"host": 0, "gpu": 0}
        self._idle = {"host": 0, "gpu": 0}  # batches in a row the side was given none of
        self._work: dict[str, float] = {}  # per side, smoothed
        self._seconds: dict[str, float] = {}
        self.cap_lifted = False  # whether the last batch's split went past _MAX_HOST_RATIO
        self._lock = threading.Lock()  # two batches decode at once

    def choose(self, gpu_bytes: np.ndarray, host_costs: np.ndarray, host_already: float = 0.0) -> np.ndarray:
        """A mask of the samples for the host, out of those the GPU could decode (``gpu_bytes``
        and ``host_costs`` per sample); ``host_already``: the cost of what the host decodes anyway."""
        with self._lock:
            host_rate, gpu_rate = self.rates["host"], self.rates["gpu"]
            gain = _CLOSE_GAIN if self.cap_lifted else _OPEN_GAIN
            mask, self.cap_lifted = _engine.host_share_choose(gpu_bytes, host_costs, float(host_already), host_rate,
                                                              gpu_rate, _MAX_HOST_RATIO, gain)
            if len(mask):
                host_took = int(np.count_nonzero(mask))
                self._given("host", host_took > 0)
                self._given("gpu", host_took < len(mask))
        return mask

    def _given(self, side: str, work: bool) -> None:
        """Counts the batches in a row ``side`` had no work; after _FORGET_AFTER, forgets its rate."""
        self._idle[side] = 0 if work else self._idle[side] + 1
        if self._idle[side] >= _FORGET_AFTER:
            self._idle[side] = 0
            self.rates[side] = self._guesses[side]
            self._work.pop(side, None)  # its next batch is measured afresh (its set-up is behind it)
            self._seconds.pop(side, None)

    def measured(self, side: str, cost: float, seconds: float) -> None:
        """A batch's measurement of one side (``"host"`` or ``"gpu"``): ``cost`` done in ``seconds``."""
        if cost <= 0 or seconds <= 0:
            return
        with self._lock:
            self._batches[side] += 1
            if self._batches[side] == 1:
                return  # the set-up's batch
            if side not in self._work:
                self._work[side], self._seconds[side] = cost, seconds
            else:
                self._work[side] += _SMOOTHING * (cost - self._work[side])
                self._seconds[side] += _SMOOTHING * (seconds - self._seconds[side])
            self.rates[side] = self._work[side] / self._seconds[side]
