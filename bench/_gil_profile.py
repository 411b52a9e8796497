"""Who holds the GIL in this process, by thread and by function: py-spy samples the thread holding it
(``--gil``) over a window, without pausing the process (``--nonblocking``). A loader's threads that
hold the GIL make a training loop's thread wait each time it takes the GIL back (after every torch
operator). And who waits for it (``GilWaits``): py-spy samples every thread's native stack, which
shows a thread waiting to take the GIL back, and where."""
from __future__ import annotations

import ctypes
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any, Callable

PY_SPY = "py-spy"
RATE = 1000  # samples a second: one a millisecond
_LOOP_SHARE = 0.98  # a function on this share of a thread's samples is its loop (per_batch)
_PR_SET_PTRACER, _PR_SET_PTRACER_ANY = 0x59616D61, -1


def available() -> bool:
    return shutil.which(PY_SPY) is not None


def _samples(raw: str):
    """(thread group, frames outermost first, count, thread) per stack of py-spy's raw output
    (``--threads``: each stack starts with the thread, ``thread (ID): NAME``), a group being the
    threads named alike but for a trailing ``_<n>``."""
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        thread, *frames = stack.split(";")
        name = thread.split(":", 1)[1].strip() if ":" in thread else "(unnamed)"
        yield re.sub(r"_\d+$", "", name) or "(unnamed)", frames, int(count), thread


def holders(raw: str) -> dict[str, int]:
    """Samples per thread group in py-spy's raw output."""
    counts: dict[str, int] = {}
    for name, _, count, _ in _samples(raw):
        counts[name] = counts.get(name, 0) + count
    return counts


def _function(frame: str) -> str:
    """``name (path/to/file.py:LINE)`` as ``name (file.py)``, a penstock module by its package path."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    package = path.rfind("penstock/")
    return f"{name} ({path[package:] if package >= 0 else os.path.basename(path)})"


def _line(frame: str) -> str:
    """``name (path/to/file.py:LINE)`` as ``name (file.py:LINE)``, a penstock module by its package path."""
    name, _, where = frame.partition(" (")
    path, _, line = where.rstrip(")").rpartition(":")
    package = path.rfind("penstock/")
    return f"{name} ({path[package:] if package >= 0 else os.path.basename(path)}:{line})"


def held_at_line(raw: str) -> dict[str, dict[str, int]]:
    """Per thread group, the samples in which each line was the GIL holder's innermost Python frame:
    the line of Python or of a native call that held it (an engine call holding the GIL while it waits
    for the CUDA driver's lock shows there, where the functions' table shows only its callers)."""
    held: dict[str, dict[str, int]] = {}
    for name, frames, count, _ in _samples(raw):
        if frames:
            lines = held.setdefault(name, {})
            line = _line(frames[-1])
            lines[line] = lines.get(line, 0) + count
    return held


def held_by_function(raw: str) -> dict[str, dict[str, int]]:
    """Per thread group, the samples in which each function was on the GIL holder's stack (a
    function counted once per sample however deep it recurs): where a thread's GIL time goes."""
    held: dict[str, dict[str, int]] = {}
    for name, frames, count, _ in _samples(raw):
        functions = held.setdefault(name, {})
        for function in dict.fromkeys(map(_function, frames)):
            functions[function] = functions.get(function, 0) + count
    return held


class _Recording:
    """py-spy recording this process's threads for ``seconds`` (whole seconds, py-spy's unit) with
    ``options``; ``raw()`` waits for it and gives its samples (py-spy's raw format)."""

    def __init__(self, seconds: float, options: list[str]):
        self.seconds = max(1, math.floor(seconds))
        self.options = options
        self._out = os.path.join(tempfile.mkdtemp(prefix="gil-"), "raw.txt")
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        # py-spy reads this process's memory: Yama lets a child trace its parent only when asked
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, _PR_SET_PTRACER_ANY, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: nothing to ask
            pass
        self._proc = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(os.getpid()), *self.options, "--threads", "-d", str(self.seconds),
             "-f", "raw", "-o", self._out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def raw(self) -> str:
        assert self._proc is not None, "the recording was not started"
        _, err = self._proc.communicate(timeout=self.seconds + 60)
        if self._proc.returncode != 0 or not os.path.exists(self._out):
            raise RuntimeError(f"py-spy could not sample the threads (exit status {self._proc.returncode}): "
                               f"{err.strip()[-500:]}")
        with open(self._out) as f:
            raw = f.read()
        os.remove(self._out)
        os.rmdir(os.path.dirname(self._out))
        return raw


class GilProfile:
    """``start()`` samples the GIL's holder for ``seconds`` (whole seconds, py-spy's unit);
    ``shares()`` waits for the samples and gives each thread group's share of the window's wall
    time (samples at ``RATE``; py-spy may fall short of it under load, so read shares as at most);
    ``per_batch(batches_per_second)`` then gives where each thread's time went, by function, and
    ``lines_per_batch`` by line. Short calls read long: on an H100's host, a call timed alone at 7 us
    showed 30-54 us a batch at its line beside a training model (py-spy's samples land on a holder
    the OS has taken off its core too), so compare the tables' figures with each other."""

    def __init__(self, seconds: float):
        self._recording = _Recording(seconds, ["--gil", "--nonblocking", "-r", str(RATE)])
        self.seconds = self._recording.seconds
        self.raw = ""  # py-spy's samples, once shares() has them

    def start(self) -> None:
        self._recording.start()

    def shares(self) -> dict[str, float]:
        self.raw = self._recording.raw()
        window = RATE * self.seconds
        return {name: round(count / window, 4) for name, count in sorted(holders(self.raw).items())}

    def per_batch(self, batches_per_second: float, functions: int = 8, least_share: float = 0.01) -> dict:
        """Per thread group that held the GIL at least ``least_share`` of the window: its ms of GIL a
        batch (``"all"``), then its ``functions`` longest holders, [function, ms a batch], the longest
        first, leaving out those on nearly every sample (the thread's own loop: py-spy loses a stack's
        outer frames now and then). A sample is 1/RATE s."""
        return self._table(held_by_function(self.raw), batches_per_second, functions, least_share, leave_loop=True)

    def lines_per_batch(self, batches_per_second: float, lines: int = 8, least_share: float = 0.01) -> dict:
        """As ``per_batch``, the ``lines`` lines that held the GIL longest, each as the holder's
        innermost frame (``held_at_line``)."""
        return self._table(held_at_line(self.raw), batches_per_second, lines, least_share, leave_loop=False)

    def _table(self, held_by: dict[str, dict[str, int]], batches_per_second: float, rows: int, least_share: float,
               leave_loop: bool) -> dict:
        window = RATE * self.seconds
        ms_per_sample = 1e3 / RATE / (batches_per_second * self.seconds)
        counts = holders(self.raw)
        table = {}
        for name, held in held_by.items():
            if counts[name] < least_share * window:
                continue
            kept = [(f, c) for f, c in held.items() if not leave_loop or c < _LOOP_SHARE * counts[name]]
            longest = sorted(kept, key=lambda fc: -fc[1])
            table[name] = [["all", round(counts[name] * ms_per_sample, 3)],
                           *([f, round(c * ms_per_sample, 3)] for f, c in longest[:rows])]
        return table


# A thread waiting to take the GIL back sits in CPython's wait for it (take_gil, inlined where it is
# called): pthread_cond_timedwait, or pthread_mutex_lock on the GIL's mutex, right under a Python
# frame or one of CPython's own (time.sleep, a queue's get, ctypes' or an extension's return,
# PyEval_RestoreThread; a frame of C source with its line, a header's for code inlined from one).
# Python's locks and queues wait on semaphores instead (PyThread_acquire_lock_timed), and other
# libraries' threads under their own frames.
_LIBC_INNER = re.compile(r"^0x[0-9a-f]+ \(libc")
_PYTHON_FRAME = re.compile(r"\.py:\d+\)$")
_CPYTHON_FRAME = re.compile(r"(\(libpython[^)]*\)|\(python[\d.]*\)|\.[ch](\.h)?:\d+\))$")
_GIL_WAITS = ("pthread_cond_timedwait", "pthread_mutex_lock")
_LIBC = re.compile(r"\(libc[.-]")  # any frame of the C library, named or not
_ADDRESS = re.compile(r"^0x[0-9a-f]+ \((.*)\)$")
_SITE_CHARS = 120  # C++ frames (a binding's lambda) can run to hundreds of characters


def gil_wait_site(frames: list[str]) -> str | None:
    """For one sample's frames (py-spy --native, outermost first): where the thread waits to take the
    GIL (its innermost Python function), or None when it does not."""
    inner = len(frames) - 1
    while inner >= 0 and _LIBC_INNER.match(frames[inner]):
        inner -= 1
    if inner < 1 or not frames[inner].startswith(_GIL_WAITS):
        return None
    caller = frames[inner - 1]
    if "PyThread_acquire_lock" in caller or not (_PYTHON_FRAME.search(caller) or _CPYTHON_FRAME.search(caller)):
        return None
    python = [f for f in frames[:inner] if _PYTHON_FRAME.search(f)]
    return _function(python[-1] if python else caller)


def _tally(raw: str, site_of: Callable[[list[str]], str | None]) -> dict[str, tuple[list[tuple[str, int]], int, int]]:
    """Per thread group of py-spy's raw native samples: its samples by ``site_of(frames)`` (None: not
    counted), most first, all its samples, and its threads' count (a thread's samples are the window)."""
    sites: dict[str, dict[str, int]] = {}
    samples: dict[str, int] = {}
    threads: dict[str, set[str]] = {}
    for name, frames, count, thread in _samples(raw):
        samples[name] = samples.get(name, 0) + count
        threads.setdefault(name, set()).add(thread)
        site = site_of(frames)
        if site is not None:
            by_site = sites.setdefault(name, {})
            by_site[site] = by_site.get(site, 0) + count
    return {name: (sorted(sites.get(name, {}).items(), key=lambda sc: -sc[1]), total, len(threads[name]))
            for name, total in sorted(samples.items())}


def gil_waits(raw: str, ms_per_step: float, sites: int = 6) -> dict:
    """Per thread group of py-spy's raw native samples of every thread (``--native --idle``): the
    share of its samples in which it waited to take the GIL, that share of ``ms_per_step`` (its ms
    a step, each thread of the group counted), and its ``sites`` longest waits by function, ms a step."""
    table = {}
    for name, (by_site, total, threads) in _tally(raw, gil_wait_site).items():
        per_thread = total / threads
        waited = sum(c for _, c in by_site)
        table[name] = {"share": round(waited / total, 4), "ms_per_step": round(waited / per_thread * ms_per_step, 3),
                       "where": [[site, round(c / per_thread * ms_per_step, 3)] for site, c in by_site[:sites]]}
    return table


def _outside_libc(frames: list[str]) -> int:
    """The position of a sample's innermost frame outside the C library (its outermost one at least)."""
    inner = len(frames) - 1
    while inner > 0 and _LIBC.search(frames[inner]):
        inner -= 1
    return inner


def _spent_in(frames: list[str]) -> str | None:
    """Where one sample of a thread was (py-spy --native, outermost first): its innermost frame outside
    the C library (so a wait shows what waited), a library's unnamed code by its library and its
    innermost named caller (``(libcuda.so.1) under cuStreamSynchronize (libcuda.so.1)``: time in the
    CUDA driver, and in which of its calls)."""
    if not frames:
        return None
    inner = _outside_libc(frames)
    library = _ADDRESS.match(frames[inner])
    if not library:
        return _function(frames[inner])[:_SITE_CHARS]
    caller = next((f for f in reversed(frames[:inner]) if not _ADDRESS.match(f)), None)
    return f"({os.path.basename(library.group(1))})" + (f" under {_function(caller)[:_SITE_CHARS]}" if caller else "")


def _blocked_in(frames: list[str]) -> str | None:
    """Where one sample of a thread was in the C library (a lock, a condition, a system call), under
    which caller (``_spent_in``): ``pthread_rwlock_wrlock in (libcuda.so.1) under cudaLaunchKernel
    (libcudart.so)`` is a thread waiting for the CUDA driver's lock, in a launch (a library's unnamed
    code is told by its innermost named caller); None when it was not in the C library. The innermost
    named C library function counts (py-spy names some and gives others as addresses)."""
    inner = _outside_libc(frames)
    if inner == len(frames) - 1:
        return None
    named = next((f.split(" (", 1)[0] for f in reversed(frames[inner + 1:]) if not _ADDRESS.match(f)), None)
    return f"{named or '(libc)'} in {_spent_in(frames[:inner + 1])}"


def spent_in(raw: str, ms_per_step: float, sites: int = 5) -> dict:
    """Per thread group of py-spy's raw native samples of every thread (``--native --idle``): where its
    time went, its ``sites`` most sampled places (``_spent_in``), ms a step, each thread of the group
    counted: a thread busy in a library (a decoder's host work) shows it there, a waiting one where it
    waits."""
    return {name: [[site, round(c * threads / total * ms_per_step, 3)] for site, c in by_site[:sites]]
            for name, (by_site, total, threads) in _tally(raw, _spent_in).items()}


def blocked_in(raw: str, ms_per_step: float, sites: int = 5) -> dict:
    """Per thread group, as ``spent_in``: its ``sites`` most sampled waits in the C library with their
    callers (``_blocked_in``), ms a step: which lock, condition or system call a thread sat in, and
    whose (a training thread in the CUDA driver's lock shows apart from one launching)."""
    return {name: [[site, round(c * threads / total * ms_per_step, 3)] for site, c in by_site[:sites]]
            for name, (by_site, total, threads) in _tally(raw, _blocked_in).items() if by_site}


class GilWaits:
    """``start()`` samples every thread's stack, native frames too, ``rate`` times a second for
    ``seconds``; ``table(ms_per_step)`` waits for the samples and gives ``gil_waits``' table. py-spy
    stops the process for each sample, and every thread that was about to take the GIL wants it at
    once when it goes on: the pauses make waits of their own. Hence a low rate over a window of its
    own, not a timed one (on the host emulation a training loop's waits of 0.5 ms a step read 1.2 ms
    at 50 samples a second and 2.8 at 200; its 3 ms without the consumer's turn read 3 at each rate)."""

    def __init__(self, seconds: float, rate: int = 20):
        self._recording = _Recording(seconds, ["--native", "--idle", "-r", str(rate)])

    def start(self) -> None:
        self._recording.start()

    def running(self) -> bool:
        """Whether py-spy is still sampling."""
        return self._recording.running()

    def table(self, ms_per_step: float) -> dict:
        """``gil_waits``' table, each thread group's entry with ``spent_in`` (where its time went) and
        ``blocked_in`` (which waits in the C library, whose)."""
        raw = self._recording.raw()
        table = gil_waits(raw, ms_per_step)
        for name, sites in spent_in(raw, ms_per_step).items():
            table.setdefault(name, {})["spent_in"] = sites
        for name, sites in blocked_in(raw, ms_per_step).items():
            table.setdefault(name, {})["blocked_in"] = sites
        return table


def waits_while(step: Callable[[], Any], seconds: float, sync: Callable[[], Any] = lambda: None) -> dict:
    """Calls ``step()`` while py-spy samples every thread's native stack for ``seconds``: per thread
    group, its ms a step waiting to take the GIL back and where (``gil_waits``), or the error when
    py-spy could not sample (it pauses the process, which ptrace may not allow)."""
    waits = GilWaits(seconds)
    waits.start()
    steps, start = 0, time.perf_counter()
    while waits.running() or not steps:
        step()
        steps += 1
    sync()
    try:
        return waits.table(1e3 * (time.perf_counter() - start) / steps)
    except RuntimeError as exc:
        return {"error": str(exc)}
