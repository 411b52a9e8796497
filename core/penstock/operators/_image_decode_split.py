"""Which of a batch's JPEGs the host decodes beside the GPU decoder.

The GPU side decodes each window as a region of its code stream; its cost is taken as the encoded
bytes (an entropy decoder reads the scan through), its measured rate absorbing what the region
spares. The host decodes only the window: it entropy-decodes the rows down to the window's last one
and transforms only the window, so its time follows the bytes above the window's bottom, less for
narrow windows. (Checking for corrupt data, the default, it also entropy-decodes the rows below the
window the first time it sees a file's bytes: the model leaves them out, and the host's measured
rate absorbs them; not yet measured on a GPU.) The split gives the host the samples it is relatively
fastest at, until both sides are expected to finish together, at the rates each side measured on
earlier batches; the measurements keep adjusting the split (host cores busy with other work, a GPU
shared with training).

Only windows that spare the host at least half of a whole image's work qualify (the capped split),
unless the split over all samples (the cap lifted) was measured to decode batches sooner. The rates
cannot tell: the host's decoding slows the GPU side down, which they leave out. On an H100 (16 host
cores, 2026-12-05, gates on the rates' predicted gain: a fifth of the batch's time to lift the cap, a
tenth to keep it lifted), the validation pipeline alone ran at 23.4k img/s with the cap down and at
16.9k with it lifted: whole images on the host took the GPU side from 12.4 to 13.6-14.6 ms a batch
for a smaller part of it. Beside a training ResNet-18 the same gates left the cap down in 20-62% of
the batches in the slowest rounds (9.7-10.0k img/s, the GPU side 19.1-20.4 ms a batch) and in 5-16%
in the quickest (13.6-14.3k, 17.0-18.0 ms). So the way in force (capped at first) is measured as it
runs, the other is tried for a few batches now and then (fewer when it falls far behind: whole
high-res photographs on the host took 3.5 times as long a batch), and the one that decoded its bytes
sooner (the slower side's time) stays: tried again soon after a change, and ever less often, up to
every _LAST_TRIAL_EVERY batches, while the way in force keeps winning (much less often after a trial
that took twice the time). Under the cap the host decodes no whole image, so at a trial its rate may
be a guess: a split past the cap then gives it only a probe, one image a thread, and its measured
rate sizes the trial's later batches. (On an H100, 2026-12-06, high-res validation alone ran at
942-1,136 img/s with trials split by the guess, which gave the host ~64 whole photographs a batch and
took both sides 4-6 times a batch's time, against 1,924 with no trials and 1,760-1,867 with the probe,
which measured the host at 63-76 MB/s against the guess of 360.) Earlier, on an H200 (ResNet-50
pipelines, 16 host cores): with whole images always allowed, the validation pipeline alone fell from
19.9k to 17.5k img/s with 4 host threads and to 12.7k with 12; beside a training ResNet-50 the GPU
side slowed to 350 MB/s (51 ms a batch for 84% of the JPEGs, the model's kernels on the same SMs)
while 13 host cores idled, and whole images on the host fed it at 0.983-0.987 of its ceiling against
0.946. The training pipeline's random crops ran at 22.0k with the default split, against 21.2k with
hw_decoder_load=1.0 (the hardware engines alone, no host share) in the same run, and 19.4k against
22.5k in another with DALI's best setting, hw_decoder_load=0.9.
"""
from __future__ import annotations

import collections
import statistics
import threading

import numpy as np

from .. import _engine

# Host time per encoded byte: the entropy decoding (every byte down to the window's bottom) and the
# inverse transform and colour conversion (only the window's columns), about evenly.
_ENTROPY_SHARE = 0.5
_SMOOTHING = 0.3  # weight of the newest batch in a side's smoothed work and seconds
# The way in force's pace: the mean time per byte of its latest batches. Of the latest, as a process's
# first batches are slow while the decoders' buffers grow (a smoothed average kept half the weight of
# the first counted batch at the first trial, and a trial only quicker than that won). A mean, as a
# trial's is: beside a training ResNet-50 on an H100 some of the GPU side's calls are held for a whole
# step of the model, most of them under the cap, a few past it; a median left out the way in force's
# held calls and counted a trial's.
_PACE_BATCHES = 8
_MAX_HOST_RATIO = 0.5  # host cost per GPU byte of the samples the host may take under the cap
# a split past the cap expected to save less than this share of the capped split's time is not
# made: whole images on the host for a sliver of the batch
_LEAST_GAIN = 0.05
# a trial of the other way: its batches, the first and probes not counted (the first overlaps the way before)
_TRIAL_BATCHES = 8
# A trial ends early, behind, after this many of its batches at least: one call of the GPU side held
# for a model's whole step (beside a training ResNet-50 on an H100, 65-190 ms against 10-15) does
# not make a way's pace
_LEAST_BEHIND = 3
_FIRST_TRIAL = 16  # batches before a process's first trial: its pace then is past the first, slow ones
_FIRST_TRIAL_AFTER = 8  # batches of the way in force before the first trial after a change
_LAST_TRIAL_EVERY = 256  # the trials' interval doubles, up to this, while the way in force wins
# ... and grows eightfold after a trial that took twice the time per byte or more: no noise beside a
# model makes that up. On an H100 (high-res validation alone, 16 threads, ~30 batches a process) the
# lifted way's trials took 270-420 ms a batch against 130 capped, and two trials in a window cost it
# a sixth of its rate (1,463-1,752 img/s against 1,984 for its capped batches).
_FAR_BEHIND = 2.0
_FAR_BEHIND_BACKOFF = 8
_CHANGE_MARGIN = 0.05  # the share of the time a batch's bytes took that the other way must save
# A side given none of this many batches in a row has its measurement forgotten: its rate is the first
# guess again, and the next split gives it work to measure. A side without work is not measured, so
# one slow batch of the GPU side (a model's warm-up beside it) would otherwise keep every JPEG on the
# host for the rest of the run, the hardware engines idle.
_FORGET_AFTER = 32


def host_cost(lengths: np.ndarray, windows: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """Per sample, the host's work in encoded-byte units: ``windows`` rows (y, x, h, w) of images
    ``shapes`` (H, W, ...), inside them (``check_windows``). Plain ufuncs: numpy's clip costs several
    times as much, and this runs twice a batch on a pipeline thread."""
    rows = np.minimum((windows[:, 0] + windows[:, 2]) / np.maximum(shapes[:, 0], 1), 1.0)
    columns = np.minimum(windows[:, 3] / np.maximum(shapes[:, 1], 1), 1.0)
    return lengths * rows * (_ENTROPY_SHARE + (1.0 - _ENTROPY_SHARE) * columns)


class HostShare:
    """The split, and the two sides' rates (cost units per second) it comes from: per side, its
    batches' work and seconds, each smoothed, their ratio the rate. A smoothed ratio of each batch
    would let the quick batches outweigh the slow ones: beside a ResNet-50 training on an H200 the
    GPU side took 51 ms a batch for its part (350 MB/s over the run) while such a rate said 830 MB/s,
    and the host got 16% of the JPEGs. A side's first batch pays for its set-up (the decoder's first
    use, new buffers) and does not count; until a side's rate is measured, the guess given stands,
    and it stands again after the side was given none of _FORGET_AFTER batches in a row.

    Whether the split may go past the cap (``lifting``) is the way measured to decode batches sooner
    (the module's docstring says why): ``choose`` says which way a batch was split, and ``finished``
    takes the batch's time back. A trial's batches split past the cap with the host's rate a guess
    (probes) are not counted, as they time the host on a few images, not the way on trial."""

    def __init__(self, host_rate: float, gpu_rate: float, probe: int):
        """``host_rate``, ``gpu_rate``: the first guesses; ``probe``: the most samples the host takes
        past the cap while its rate is a guess (one a host thread: a batch's worth of its time)."""
        self.rates = {"host": float(host_rate), "gpu": float(gpu_rate)}
        self._probe = max(1, int(probe))
        self._guesses = dict(self.rates)
        self._batches = {"host": 0, "gpu": 0}
        self._idle = {"host": 0, "gpu": 0}  # batches in a row the side was given none of
        self._measures: dict[str, list[float]] = {}  # per side, its work and seconds a batch, smoothed
        self.cap_lifted = False  # whether the last batch's split went past _MAX_HOST_RATIO
        self.lifting = False  # the way in force: whether splits may go past the cap
        self._trying = False  # whether batches are split the other way, on trial
        self._latest: collections.deque[float] = collections.deque(maxlen=_PACE_BATCHES)  # seconds a byte
        self._paced = 0  # batches of the way in force finished (the first pays for the set-up)
        self._trial = [0.0, 0.0, 0]  # the trial's counted bytes, seconds and batches
        self._trial_finished = 0  # the trial's batches finished, counted or not
        self._trial_uncounted = 1  # of its first batches: the first, and those split with a guessed host rate
        self._trial_split = 0  # batches split the trial's way
        self._trial_every, self._until_trial = _FIRST_TRIAL_AFTER, _FIRST_TRIAL
        self._lock = threading.Lock()  # two batches decode at once

    def choose(self, gpu_bytes: np.ndarray, host_costs: np.ndarray,
               host_already: float = 0.0) -> tuple[np.ndarray, bool]:
        """A mask of the samples for the host, out of those the GPU could decode (``gpu_bytes``
        and ``host_costs`` per sample; ``host_already``: the cost of what the host decodes anyway),
        and the way the batch was split (``lifting``), for ``finished``."""
        with self._lock:
            host_rate, gpu_rate = self.rates["host"], self.rates["gpu"]
            lifting = self.lifting != self._trying
            # a least gain of 1: no split past the cap finishes in no time
            mask, self.cap_lifted = _engine.host_share_choose(gpu_bytes, host_costs, float(host_already), host_rate,
                                                              gpu_rate, _MAX_HOST_RATIO,
                                                              _LEAST_GAIN if lifting else 1.0)
            # whole images on a host of unmeasured rate: a probe of them, at most a batch's worth of its
            # threads' time (whole high-res photographs took both sides 4-6 times a batch's time)
            host_took = int(np.count_nonzero(mask))
            probing = self.cap_lifted and "host" not in self._measures and host_took > self._probe
            if probing:
                mask, host_took = _cheapest(mask, host_costs, self._probe), self._probe
            if len(mask):
                self._given("host", host_took > 0)
                self._given("gpu", host_took < len(mask))
            if self._trying:
                self._trial_split += 1
                self._trial_uncounted += probing and self._trial_split > 1
                if self._trial_split > 4 * _TRIAL_BATCHES:  # its batches did not finish (failed): no change
                    self._end_trial(change=False)
            else:
                self._until_trial -= 1
                if self._until_trial <= 0:
                    self._trying, self._trial, self._trial_split = True, [0.0, 0.0, 0], 0
                    self._trial_finished, self._trial_uncounted = 0, 1
        return mask, lifting

    def finished(self, lifting: bool, nbytes: float, seconds: float) -> None:
        """A batch split the way ``lifting`` (``choose``'s) decoded its ``nbytes`` in ``seconds``
        (its slower side's time)."""
        if nbytes <= 0 or seconds <= 0:
            return
        with self._lock:
            if lifting == self.lifting:
                if not self._trying:  # (batches in force finishing during a trial overlap it)
                    self._paced += 1
                    if self._paced > 1:
                        self._latest.append(seconds / nbytes)
            elif self._trying:
                self._trial_finished += 1
                if self._trial_finished > self._trial_uncounted:
                    self._trial[0] += nbytes
                    self._trial[1] += seconds
                    self._trial[2] += 1
                if self._trial[2] >= _TRIAL_BATCHES - 1 or self._trial_behind():
                    self._end_trial()

    def _trial_behind(self) -> bool:
        """Whether the trial's counted batches took so much longer for their bytes than the way in
        force that the rest of the trial is not worth its cost: by more than 1/k after k of them, k at
        least _LEAST_BEHIND (a third longer after three, a quarter after four, ...), noise in a batch
        beside a model (a call held for its step) not ending a trial that wins. On an H100 the
        validation pipeline on high-res photographs took 450 ms a batch with the cap lifted against 127
        ms with it down: a whole trial was the timed window of a benchmark, and batches of whole images
        on the host held 7 GB more of device memory."""
        ratio = self._trial_against_pace()
        counted = self._trial[2]
        return counted >= _LEAST_BEHIND and ratio is not None and ratio > 1.0 + 1.0 / counted

    def _trial_against_pace(self) -> float | None:
        """The trial's counted batches' time per byte over the way in force's (None: nothing to
        compare yet)."""
        nbytes, seconds, counted = self._trial
        pace = self.pace()
        if not counted or pace is None:
            return None
        return (seconds / nbytes) / pace

    def pace(self) -> float | None:
        """The way in force's seconds a byte: the mean of its latest batches' (None: none finished
        yet but the first, the set-up's)."""
        return statistics.fmean(self._latest) if self._latest else None  # numpy's costs 30 us for a few

    def _end_trial(self, change: bool = True) -> None:
        """The trial's end: the way that decoded its bytes sooner stays in force, by a margin."""
        nbytes, seconds, _ = self._trial
        ratio = self._trial_against_pace()
        if change and ratio is not None and ratio < 1.0 - _CHANGE_MARGIN:
            self.lifting = not self.lifting
            self._latest.clear()
            self._latest.append(seconds / nbytes)  # the trial's batches together, until the new way's own come
            self._trial_every = _FIRST_TRIAL_AFTER
        else:
            backoff = _FAR_BEHIND_BACKOFF if ratio is not None and ratio >= _FAR_BEHIND else 2
            self._trial_every = min(backoff * self._trial_every, _LAST_TRIAL_EVERY)
        self._trying = False
        self._until_trial = self._trial_every

    def _given(self, side: str, work: bool) -> None:
        """Counts the batches in a row ``side`` had no work; after _FORGET_AFTER, forgets its rate."""
        self._idle[side] = 0 if work else self._idle[side] + 1
        if self._idle[side] >= _FORGET_AFTER:
            self._idle[side] = 0
            self.rates[side] = self._guesses[side]
            self._measures.pop(side, None)  # its next batch is measured afresh (its set-up is behind it)

    def measured(self, side: str, cost: float, seconds: float) -> None:
        """A batch's measurement of one side (``"host"`` or ``"gpu"``): ``cost`` done in ``seconds``."""
        if cost <= 0 or seconds <= 0:
            return
        with self._lock:
            self._batches[side] += 1
            if self._batches[side] == 1:
                return  # the set-up's batch
            work, took = self._measures[side] = _smoothed(self._measures.get(side), cost, seconds, _SMOOTHING)
            self.rates[side] = work / took


def _cheapest(mask: np.ndarray, costs: np.ndarray, most: int) -> np.ndarray:
    """``mask`` (more than ``most`` set) with only its ``most`` samples of least cost left set."""
    chosen = np.flatnonzero(mask)
    kept = np.zeros_like(mask)
    kept[chosen[np.argsort(costs[chosen], kind="stable")[:most]]] = True
    return kept


def _smoothed(measure: list[float] | None, work: float, seconds: float, weight: float) -> list[float]:
    """Work and seconds a batch, smoothed (``measure``), with one more batch's at ``weight``; the
    first batch's as they are."""
    if measure is None:
        return [work, seconds]
    return [measure[0] + weight * (work - measure[0]), measure[1] + weight * (seconds - measure[1])]
