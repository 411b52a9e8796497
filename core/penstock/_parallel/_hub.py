"""The pipeline's end of the worker processes: shared-memory regions, the batches in flight, and the
receiver thread that handles every message from the workers as it arrives."""
from __future__ import annotations

import codecs
import collections
import multiprocessing.connection
import os
import pickle
import sys
import threading
import time
import weakref
from multiprocessing.reduction import send_handle
from typing import Any, Sequence

import numpy as np

from ._shm import Segment, new_memfd, output_starts


_POLL_S = 0.5  # how often a wait for results checks that the workers are alive
_EXIT_WAIT_S = 2.0  # for a worker whose connection closed to exit (and its stderr to be complete)
STDERR_TAIL = 8192  # characters of a worker's standard error kept for the error reporting its death
# ... and its first ones: a fatal signal's report starts with its name, then lists every thread's stack
# and every extension module loaded (hundreds of modules in a process that imported a few libraries)
STDERR_HEAD = 1024

# The pipeline's ends of the workers' control connections (their lifelines, see _worker.py). Only
# this process may hold them, so that a worker's end closes exactly when this process ends: a
# process forked from it (a worker, a DataLoader's worker, a user's fork) closes its copies at once;
# a spawned or exec'd one never gets them (they are close-on-exec).
_CONTROLS: "weakref.WeakSet" = weakref.WeakSet()


def _close_inherited_controls() -> None:
    for control in list(_CONTROLS):
        control.close()
    _CONTROLS.clear()


os.register_at_fork(after_in_child=_close_inherited_controls)


def control_pipe(ctx: object) -> tuple:
    """A worker's control connection: the pipeline's end (never inherited) and the worker's."""
    ours, theirs = ctx.Pipe(duplex=True)
    _CONTROLS.add(ours)
    return ours, theirs


def stop_workers(procs: list, conns: list, controls: list, stderrs: list) -> None:
    """Ends every worker (asked first, then its lifeline is cut, then terminated); idempotent."""
    for c in conns:
        try:
            c.send(("stop",))
        except Exception:  # noqa: BLE001 - a dead worker
            pass
    for c in controls:  # a worker whose source hangs ends now, not after a timeout
        c.close()
    controls.clear()
    deadline = time.monotonic() + 2.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    for c in conns + stderrs:
        c.close()
    procs.clear()
    conns.clear()
    stderrs.clear()


class WorkerStderr:
    """A worker's standard error as it arrives through its pipe: passed on to this process's, and
    its first STDERR_HEAD and last STDERR_TAIL characters kept, so that the error reporting the
    worker's death can say what it printed (a traceback, a fatal signal's name and stacks) wherever
    this process's stderr goes."""

    def __init__(self, conn: Any):
        self.conn = conn
        self.open = True
        self.head = ""
        self.tail = ""
        self.length = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        os.set_blocking(conn.fileno(), False)

    def read(self) -> str:
        """What the worker wrote since the last read (all of it when it has exited)."""
        chunks = []
        while self.open:
            try:
                data = os.read(self.conn.fileno(), 65536)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self.open = False  # every writer is gone
            chunks.append(self._decoder.decode(data, final=not data))
        text = "".join(chunks)
        if len(self.head) < STDERR_HEAD:
            self.head += text[:STDERR_HEAD - len(self.head)]
        self.tail = (self.tail + text)[-STDERR_TAIL:]
        self.length += len(text)
        return text

    def excerpt(self) -> str:
        """What the worker printed, its middle left out beyond STDERR_HEAD + STDERR_TAIL characters."""
        if self.length <= STDERR_HEAD + STDERR_TAIL:
            return (self.head + self.tail[len(self.tail) - (self.length - len(self.head)):]).rstrip()
        return f"{self.head}\n[... {self.length - STDERR_HEAD - STDERR_TAIL} characters ...]\n{self.tail}".rstrip()


def pass_on(text: str) -> None:
    """A worker's output on this process's standard error."""
    if text and sys.stderr is not None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # closed
            pass


class Region(Segment):
    """A shared-memory region the pipeline owns; one batch of one source at a time is written into
    it. Free regions wait in their source's ``regions`` deque (appends and pops are atomic: the
    lease's finalizer puts a region back from whichever thread frees its batch's last view)."""

    def __init__(self, rid: int, capacity: int):
        super().__init__(*new_memfd(capacity))
        self.rid = rid
        self.sent: set[int] = set()  # workers that hold its descriptor
        self.samples = 1             # samples of the batch it last carried


class _Result:
    __slots__ = ("kind", "meta", "error", "traceback", "sample", "text")


class Batch:
    """One batch in flight: its parts (one task each, on possibly different workers), the region
    they are written into, and the free list of its source that the region returns to."""
    __slots__ = ("free", "region", "keys", "workers", "sizes", "results", "left", "placed", "failed",
                 "discarded")

    def __init__(self, free: collections.deque, region: Region, parts: int):
        self.free = free
        self.region = region
        self.keys: list[int] = []
        self.workers: list[int] = []
        self.sizes: list[list[int] | None] = [None] * parts
        self.results: list[_Result | None] = [None] * parts
        self.left = parts
        self.placed = self.failed = self.discarded = False


class Hub:
    """The workers, their batches in flight, and a receiver thread that handles every message from
    the workers as it arrives: it places the parts of a batch as soon as their sizes are known, so
    workers write them while the pipeline is busy elsewhere. Methods whose names end in ``_locked``
    expect ``cond`` held. The hub holds no reference to the WorkerPool, whose finalizer closes it
    (a pipeline garbage-collected mid-epoch still ends its workers)."""

    def __init__(self, procs: list, conns: list, controls: list, stderrs: list):
        self.procs = procs
        self.conns = conns
        self.controls = controls
        self.stderrs = stderrs
        self.worker_stderr = [WorkerStderr(c) for c in stderrs]
        self._printed: list[str] = []  # workers' output read under cond, passed on after it
        self._report_lock = threading.Lock()  # one report asked of the workers at a time
        self._reports = 0
        self.regions: list[Region] = []
        self.cond = threading.Condition()
        self.parts: dict[int, tuple[Batch, int]] = {}  # task key -> its batch and part
        self.outstanding = [0] * len(procs)
        self.ready = [False] * len(procs)  # the worker has loaded its sources
        self.next_key = 0
        self.failure: RuntimeError | None = None  # a worker's death, raised once by the next wait
        self.closed = False
        self.reason = "a worker died or the pipeline was closed"  # why, once closed
        self.copied_bytes = 0
        self._wake_r, self._wake_w = os.pipe()
        self.thread = threading.Thread(target=self._run, name="penstock-es-receiver", daemon=True)
        self.thread.start()

    # -- lifetime
    def close(self, reason: str | None = None) -> None:
        """Stops the receiver thread, which ends the workers and closes the regions; idempotent.
        ``reason`` is what later calls are told."""
        with self.cond:
            if reason is not None and not self.closed:
                self.reason = reason
            self.closed = True
            self.cond.notify_all()
            if self._wake_w >= 0:
                os.write(self._wake_w, b"x")
        if threading.current_thread() is self.thread:
            return  # the loop ends after this call returns
        self.thread.join()
        with self.cond:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        sentinels = {p.sentinel: w for w, p in enumerate(self.procs)}
        conns = list(self.conns)
        stderrs = {e.conn: e for e in self.worker_stderr}
        try:
            while not self.closed:
                waited = conns + list(sentinels) + [c for c, e in stderrs.items() if e.open] + [self._wake_r]
                ready = multiprocessing.connection.wait(waited, _POLL_S)
                with self.cond:
                    if self.closed:
                        break
                    for obj in ready:
                        if self.closed:
                            break
                        if obj in stderrs:
                            self._printed.append(stderrs[obj].read())
                        elif obj in sentinels:
                            w = sentinels[obj]
                            if not conns[w].poll():  # died with nothing left to read
                                self._fail_locked(w)
                                break
                        elif obj is not self._wake_r:
                            w = conns.index(obj)
                            try:
                                while not self.closed and obj.poll():
                                    self._handle_locked(w, obj.recv())
                            except (EOFError, OSError):
                                self._fail_locked(w)
                                break
                    self.cond.notify_all()
                    printed, self._printed = "".join(self._printed), []
                pass_on(printed)
        except BaseException as exc:  # a bug here must fail run(), never leave it waiting
            with self.cond:
                self.failure = RuntimeError(f"external_source: the thread receiving the workers' batches "
                                            f"failed: {type(exc).__name__}: {exc}")
                self.closed = True
                self.cond.notify_all()
            raise
        finally:
            with self._report_lock:
                stop_workers(self.procs, self.conns, self.controls, self.stderrs)
            pass_on("".join(self._printed))
            with self.cond:  # a batch still viewing one keeps its mapping until it is freed
                for r in self.regions:
                    r.close()
                self.regions.clear()

    def _fail_locked(self, worker: int) -> None:
        p = self.procs[worker]
        p.join(_EXIT_WAIT_S)
        code = p.exitcode
        how = ("closed its connection but has not exited" if code is None else
               f"was killed by signal {-code}" if code < 0 else f"exited with code {code}")
        stderr = self.worker_stderr[worker]
        pass_on(stderr.read())  # before run() raises: the output shows ahead of the error
        printed = (f"; its last output on standard error:\n{stderr.excerpt()}" if stderr.tail.strip() else
                   "; it printed nothing on standard error")
        self.failure = RuntimeError(f"external_source worker process {worker} (pid {p.pid}) {how}; the "
                                    f"parallel external_source cannot continue{printed}")
        self.closed = True
        self.cond.notify_all()

    def check_locked(self) -> None:
        if self.failure is not None:
            err, self.failure = self.failure, None
            raise err
        if self.closed:
            raise RuntimeError(f"the external_source worker processes have been shut down ({self.reason}); "
                               "build a new pipeline")

    def _send_locked(self, worker: int, msg: tuple, fd: int | None = None) -> None:
        """``msg`` to a worker, then (a new region) the descriptor it announces."""
        try:
            self.conns[worker].send(msg)
            if fd is not None:
                send_handle(self.conns[worker], fd, self.procs[worker].pid)
        except (OSError, ValueError):
            self._fail_locked(worker)
            os.write(self._wake_w, b"x")
            if threading.current_thread() is not self.thread:
                self.check_locked()

    # -- the pipeline's side (its scheduling thread)
    def submit(self, free: collections.deque, hint: int, name: str, payloads: Sequence[Any],
               worker: int | None) -> Batch:
        """One batch as ``len(payloads)`` tasks; a single task writes its batch straight away, parts
        of a batch wait for their places (see _place_locked)."""
        with self.cond:
            self.check_locked()
            if free:
                region = free.popleft()
            else:
                region = Region(len(self.regions), hint)
                self.regions.append(region)
            batch = Batch(free, region, len(payloads))
            direct = len(payloads) == 1
            for i, payload in enumerate(payloads):
                w = int(np.argmin(self.outstanding)) if worker is None else worker
                key = self.next_key
                self.next_key += 1
                self.outstanding[w] += 1
                self.parts[key] = (batch, i)
                batch.keys.append(key)
                batch.workers.append(w)
                if w not in region.sent:
                    self._send_locked(w, ("region", region.rid, region.capacity), region.fd)
                    region.sent.add(w)
                self._send_locked(w, ("task", name, key, payload, region.rid, region.capacity, direct))
            return batch

    def wait(self, batch: Batch, timeout: float | None = None) -> bool:
        """Waits for every part of ``batch``; False when ``timeout`` seconds passed first, counted
        from when every worker is ready (starting them, spawn's imports, is not the source's time)."""
        deadline = None
        with self.cond:
            while batch.left:
                self.check_locked()
                if timeout is not None and deadline is None and all(self.ready):
                    deadline = time.monotonic() + timeout
                left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def report(self, worker: int, timeout: float) -> dict | None:
        """What ``worker`` is running and every thread's stack there (see _worker.Running), asked on
        its control connection, whose thread answers even while a source hangs; None when it does not
        answer within ``timeout`` seconds (its main thread holds the GIL in native code) or is gone."""
        with self._report_lock:
            if not self.controls:
                return None
            self._reports += 1
            control, n = self.controls[worker], self._reports
            deadline = time.monotonic() + timeout
            try:
                control.send(("report", n))
                while control.poll(max(0.0, deadline - time.monotonic())):
                    answer, report = control.recv()
                    if answer == n:  # not the late answer to an earlier request
                        return report
            except (EOFError, OSError):
                pass
            return None

    def discard(self, batch: Batch) -> None:
        """A batch no longer wanted: its region goes back once no worker will write to it."""
        with self.cond:
            batch.discarded = True
            if batch.left == 0:
                batch.free.append(batch.region)
            elif not batch.placed and not self.closed:
                for i, s in enumerate(batch.sizes):
                    if s is not None and batch.results[i] is None:
                        self._drop_locked(batch, i)

    # -- the receiver thread's side
    def _handle_locked(self, w: int, msg: tuple) -> None:
        if msg[0] == "ready":
            self.ready[w] = True
            return
        kind, key = msg[0], msg[1]
        batch, i = self.parts[key]
        if kind != "ok" or len(batch.keys) == 1:  # the worker is done computing this part
            self.outstanding[w] -= 1
        if kind == "sizes":
            batch.sizes[i] = msg[2]
            if batch.failed or batch.discarded:
                self._drop_locked(batch, i)
            elif all(s is not None for s in batch.sizes):
                self._place_locked(batch)
            return
        res = _Result()
        res.kind = kind
        if kind == "ok":
            _, _, capacity, res.meta, nbytes = msg
            batch.region.ensure(capacity)  # a worker grew it; no batch views it while in flight
            self.copied_bytes += nbytes
        elif kind == "error":
            _, _, blob, res.traceback, res.sample, res.text = msg
            try:
                res.error = pickle.loads(blob) if blob is not None else RuntimeError(res.text)
            except Exception:  # noqa: BLE001 - its class does not exist in this process
                res.error = RuntimeError(res.text)
        self._finish_locked(batch, i, res)
        if kind in ("stop", "error") and not batch.placed:
            batch.failed = True  # parts waiting for a place are not written
            for j, s in enumerate(batch.sizes):
                if s is not None and batch.results[j] is None:
                    self._drop_locked(batch, j)

    def _finish_locked(self, batch: Batch, i: int, res: _Result) -> None:
        batch.results[i] = res
        batch.left -= 1
        del self.parts[batch.keys[i]]
        if batch.left == 0 and batch.discarded:
            batch.free.append(batch.region)

    def _drop_locked(self, batch: Batch, i: int) -> None:
        res = _Result()
        res.kind = "dropped"
        self._finish_locked(batch, i, res)
        self._send_locked(batch.workers[i], ("drop", batch.keys[i]))

    def _place_locked(self, batch: Batch) -> None:
        """Every part's size is known: each output's parts go back to back at their final offsets,
        and the workers write them there."""
        totals = [sum(col) for col in zip(*batch.sizes)]
        starts, end = output_starts(totals)
        batch.region.grow(end)  # the region is this batch's alone while in flight
        batch.placed = True
        for i, sizes in enumerate(batch.sizes):
            self._send_locked(batch.workers[i], ("place", batch.keys[i], batch.region.capacity, list(starts)))
            starts = [s + n for s, n in zip(starts, sizes)]
