"""Who holds the GIL in this process, by thread: py-spy samples the thread holding it (``--gil``)
over a window, without pausing the process (``--nonblocking``). A loader's threads that hold the GIL
make a training loop's thread wait each time it takes the GIL back (after every torch operator)."""
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
_PR_SET_PTRACER, _PR_SET_PTRACER_ANY = 0x59616D61, -1


def available() -> bool:
    return shutil.which(PY_SPY) is not None


def holders(raw: str) -> dict[str, int]:
    """Samples per thread group in py-spy's raw output (``--threads``: each stack starts with
    ``thread (ID): NAME``), a group being the threads named alike but for a trailing ``_<n>``."""
    counts: dict[str, int] = {}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        first = stack.split(";", 1)[0]
        name = first.split(":", 1)[1].strip() if ":" in first else "(unnamed)"
        name = re.sub(r"_\d+$", "", name) or "(unnamed)"
        counts[name] = counts.get(name, 0) + int(count)
    return counts


class GilProfile:
    """``start()`` samples the GIL's holder for ``seconds`` (whole seconds, py-spy's unit);
    ``shares()`` waits for the samples and gives each thread group's share of the window's wall
    time (samples at ``RATE``; py-spy may fall short of it under load, so read shares as at most)."""

    def __init__(self, seconds: float):
        self.seconds = max(1, math.floor(seconds))
        self._out = os.path.join(tempfile.mkdtemp(prefix="gil-"), "raw.txt")
        self._proc: subprocess.Popen | None = None

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
            counts = holders(f.read())
        os.remove(self._out)
        os.rmdir(os.path.dirname(self._out))
        window = RATE * self.seconds
        return {name: round(count / window, 4) for name, count in sorted(counts.items())}
