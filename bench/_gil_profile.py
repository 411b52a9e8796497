"""Who holds the GIL in this process, by thread and by function: py-spy samples the thread holding it
(``--gil``) over a window, without pausing the process (``--nonblocking``). A loader's threads that
hold the GIL make a training loop's thread wait each time it takes the GIL back (after every torch
operator)."""
from __future__ import annotations

import ctypes
import math
import os
import re
import shutil
import subprocess
import tempfile

PY_SPY = "py-spy"
RATE = 1000  # samples a second: one a millisecond
_LOOP_SHARE = 0.98  # a function on this share of a thread's samples is its loop (per_batch)
_PR_SET_PTRACER, _PR_SET_PTRACER_ANY = 0x59616D61, -1


def available() -> bool:
    return shutil.which(PY_SPY) is not None


def _samples(raw: str):
    """(thread group, frames outermost first, count) per stack of py-spy's raw output (``--threads``:
    each stack starts with ``thread (ID): NAME``), a group being the threads named alike but for a
    trailing ``_<n>``."""
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        first, *frames = stack.split(";")
        name = first.split(":", 1)[1].strip() if ":" in first else "(unnamed)"
        yield re.sub(r"_\d+$", "", name) or "(unnamed)", frames, int(count)


def holders(raw: str) -> dict[str, int]:
    """Samples per thread group in py-spy's raw output."""
    counts: dict[str, int] = {}
    for name, _, count in _samples(raw):
        counts[name] = counts.get(name, 0) + count
    return counts


def _function(frame: str) -> str:
    """``name (path/to/file.py:LINE)`` as ``name (file.py)``, a penstock module by its package path."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    package = path.rfind("penstock/")
    return f"{name} ({path[package:] if package >= 0 else os.path.basename(path)})"


def held_by_function(raw: str) -> dict[str, dict[str, int]]:
    """Per thread group, the samples in which each function was on the GIL holder's stack (a
    function counted once per sample however deep it recurs): where a thread's GIL time goes."""
    held: dict[str, dict[str, int]] = {}
    for name, frames, count in _samples(raw):
        functions = held.setdefault(name, {})
        for function in dict.fromkeys(map(_function, frames)):
            functions[function] = functions.get(function, 0) + count
    return held


class GilProfile:
    """``start()`` samples the GIL's holder for ``seconds`` (whole seconds, py-spy's unit);
    ``shares()`` waits for the samples and gives each thread group's share of the window's wall
    time (samples at ``RATE``; py-spy may fall short of it under load, so read shares as at most);
    ``per_batch(batches_per_second)`` then gives where each thread's time went, by function."""

    def __init__(self, seconds: float):
        self.seconds = max(1, math.floor(seconds))
        self._out = os.path.join(tempfile.mkdtemp(prefix="gil-"), "raw.txt")
        self._proc: subprocess.Popen | None = None
        self.raw = ""  # py-spy's samples, once shares() has them

    def start(self) -> None:
        # py-spy reads this process's memory: Yama lets a child trace its parent only when asked
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, _PR_SET_PTRACER_ANY, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: nothing to ask
            pass
        self._proc = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(os.getpid()), "--gil", "--threads", "--nonblocking", "-r", str(RATE),
             "-d", str(self.seconds), "-f", "raw", "-o", self._out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def shares(self) -> dict[str, float]:
        assert self._proc is not None, "GilProfile.shares() before start()"
        _, err = self._proc.communicate(timeout=self.seconds + 60)
        if self._proc.returncode != 0 or not os.path.exists(self._out):
            raise RuntimeError(f"py-spy could not sample the GIL (exit status {self._proc.returncode}): "
                               f"{err.strip()[-500:]}")
        with open(self._out) as f:
            self.raw = f.read()
        os.remove(self._out)
        os.rmdir(os.path.dirname(self._out))
        window = RATE * self.seconds
        return {name: round(count / window, 4) for name, count in sorted(holders(self.raw).items())}

    def per_batch(self, batches_per_second: float, functions: int = 8, least_share: float = 0.01) -> dict:
        """Per thread group that held the GIL at least ``least_share`` of the window: its ms of GIL a
        batch (``"all"``), then its ``functions`` longest holders, [function, ms a batch], the longest
        first, leaving out those on nearly every sample (the thread's own loop: py-spy loses a stack's
        outer frames now and then). A sample is 1/RATE s."""
        window = RATE * self.seconds
        ms_per_sample = 1e3 / RATE / (batches_per_second * self.seconds)
        counts = holders(self.raw)
        table = {}
        for name, held in held_by_function(self.raw).items():
            if counts[name] < least_share * window:
                continue
            inner = sorted(((f, c) for f, c in held.items() if c < _LOOP_SHARE * counts[name]), key=lambda fc: -fc[1])
            table[name] = [["all", round(counts[name] * ms_per_sample, 3)],
                           *([f, round(c * ms_per_sample, 3)] for f, c in inner[:functions])]
        return table
