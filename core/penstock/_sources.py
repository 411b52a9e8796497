"""Calling a user's Python source (external_source's), the same way in the pipeline and in the
worker processes of a parallel source, and reading what it returned as host arrays.

Below the external_source operator, the worker processes (penstock._parallel) and the pipeline
that starts them, which all use it."""
from __future__ import annotations

import functools
import gc
import inspect
import queue
import sys
import threading
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from .tensors import TensorCPU
from .types import BatchInfo, SampleInfo


_NO_CYCLE = (None, False, "no")


def cycle_mode(cycle: Any) -> str | None:
    if cycle in _NO_CYCLE:
        return None
    if cycle is True or cycle == "quiet":
        return "quiet"
    if cycle == "raise":
        return "raise"
    raise ValueError(f"external_source: cycle must be True, False, None, 'quiet', 'raise' or 'no', got {cycle!r}")


def is_generator_function(obj: Any) -> bool:
    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.isgeneratorfunction(obj) or (
        callable(obj) and not inspect.isfunction(obj) and inspect.isgeneratorfunction(getattr(obj, "__call__", None)))


def positional_arity(fn: Any) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    kinds = [p for p in sig.parameters.values()]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in kinds) or \
            any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in kinds):
        raise TypeError("external_source: the source callable must take no argument or exactly one "
                        "positional argument (no *args, **kwargs or keyword-only arguments)")
    required = [p for p in kinds if p.default is p.empty]
    if len(required) > 1:
        raise TypeError("external_source: the source callable takes more than one argument")
    takes_positional = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in kinds)
    return 1 if takes_positional else 0


def gpu_data_error(label: str) -> TypeError:
    return TypeError(f"{label}: the source gave GPU data to an external_source on the CPU; "
                     "use device='gpu' (or return host arrays)")


def host_array(d: Any, label: str) -> np.ndarray:
    if hasattr(d, "__cuda_array_interface__"):
        raise gpu_data_error(label)
    if isinstance(d, TensorCPU):
        return d._array
    if isinstance(d, np.ndarray):
        return d
    if hasattr(d, "__dlpack__") and not hasattr(d, "__array_interface__"):
        return np.from_dlpack(d)
    return np.asarray(d)


def sample_arrays(samples: Sequence[Any], label: str) -> list[np.ndarray]:
    """The samples of one batch as C-contiguous host arrays of one dtype and ndim."""
    arrays = [host_array(d, label) for d in samples]
    for i, a in enumerate(arrays):
        if a.ndim != arrays[0].ndim or a.dtype != arrays[0].dtype:
            raise RuntimeError(f"{label}: the source gave sample {i} as a {a.ndim}-D {a.dtype} array but "
                               f"sample 0 as a {arrays[0].ndim}-D {arrays[0].dtype} array; all samples of a "
                               "batch must have the same type and number of dimensions")
    return [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in arrays]


def sample_shapes(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), arrays[0].ndim if arrays else 0)


def wrap_source_error(exc: BaseException, label: str, epoch: int, iteration: int,
                      sample: int | None = None, note: str = "") -> BaseException:
    """``exc`` from a user's source, re-raised with where it happened; the original (and its
    traceback) stays the ``__cause__``; ``note`` (a worker's traceback) is added as a note. Same
    exception type when it can be rebuilt from a message, so ``except ValueError`` around
    ``run()`` keeps working as with DALI."""
    where = f"iteration {iteration} of epoch {epoch}" + ("" if sample is None else f", sample {sample}")
    msg = f"{label}: the source raised {type(exc).__name__} in {where}: {exc}"
    if note and not hasattr(exc, "add_note"):  # Python 3.10: no exception notes
        msg, note = f"{msg}\n{note}", ""
    try:
        new = type(exc)(msg)
        ok = isinstance(new, type(exc)) and new.args == (msg,)
    except Exception:  # noqa: BLE001 - a constructor with another signature
        ok = False
    if not ok:
        new = RuntimeError(msg)
    if note:
        new.add_note(note)
    new.__cause__ = exc
    return new


def check_parallel_source(label: str, source: Any, batch: bool, no_copy: Any) -> str:
    """DALI's rules for a parallel source; returns its kind ('callable' or 'iterator')."""
    if no_copy is False:
        raise ValueError(f"{label}: no_copy=False cannot be used in parallel mode (data is always passed "
                         "from the workers' shared memory)")
    if source is None:
        raise ValueError(f"{label}: argument 'parallel' (True) needs a source")
    iterator = is_generator_function(source) or not callable(source)
    if iterator and not batch:
        raise TypeError(f"{label}: a parallel source that is an iterable or a generator function must be "
                        "run in a batch mode (batch=True)")
    if not iterator and positional_arity(source) != 1:
        raise TypeError(f"{label}: a parallel source callable must take exactly one argument "
                        f"({'the iteration index or BatchInfo' if batch else 'SampleInfo'})")
    return "iterator" if iterator else "callable"


def parallel_spec(node: Any, batch_size: int, timeout: float | None) -> dict:
    """What the worker processes need to run this parallel source; ``timeout`` is the pipeline's
    source_timeout."""
    a = node.args
    label = f"external_source ('{node.name}')"
    batch = bool(a.get("batch", True))
    kind = check_parallel_source(label, node.py_object, batch, a.get("no_copy"))
    depth = a.get("prefetch_queue_depth") or 1
    if depth < 1:
        raise ValueError(f"{label}: prefetch_queue_depth must be at least 1, got {depth}")
    hint = a.get("bytes_per_sample_hint")
    if hint is not None and (isinstance(hint, bool) or not isinstance(hint, int) or hint < 0):
        raise ValueError(f"{label}: bytes_per_sample_hint must be a non-negative int, got {hint!r}")
    return {"name": node.name, "label": label, "source": node.py_object, "batch": batch, "kind": kind,
            "batch_info": bool(a.get("batch_info")), "cycle": cycle_mode(a.get("cycle")),
            "num_outputs": a.get("num_outputs"), "depth": depth, "bytes_per_sample_hint": hint,
            "batch_size": batch_size, "timeout": timeout}


class SourceCaller:
    """Calls a user's source for one batch, the same way in the pipeline and in a worker process."""

    def __init__(self, source: Any, batch: bool, batch_info: bool, cycle: str | None, num_outputs: int | None):
        self.source = source
        self.batch = batch
        self.batch_info = batch_info
        self.cycle = cycle
        self.k = num_outputs or 1
        self.multi = num_outputs is not None
        self._iterator = None
        if source is not None and not callable(source):
            self._iterator = iter(source)  # taken once: an iterable yields one epoch unless cycled
        elif source is not None and is_generator_function(source):
            self._iterator = source()
        self._arity = (positional_arity(source) if callable(source) and self._iterator is None else 0)

    def _next(self) -> Any:
        # Not cycled, the same iterator is asked again after its StopIteration (as DALI does): a
        # generator or a list's iterator stays ended, an iterator object may start its next epoch.
        try:
            return next(self._iterator)
        except StopIteration:
            if self.cycle is None:
                raise
            self._iterator = self.source() if is_generator_function(self.source) else iter(self.source)
            if self.cycle == "raise":
                raise
            return next(self._iterator)

    def call_batch(self, epoch: int, iteration: int) -> Any:
        if self._iterator is not None:
            return self._next()
        if self._arity == 0:
            return self.source()
        return self.source(BatchInfo(iteration, epoch) if self.batch_info else iteration)

    def call_sample(self, info: SampleInfo) -> Any:
        if self._iterator is not None:  # per-sample mode: one next() per sample
            return self._next()
        return self.source(info) if self._arity else self.source()

    def outputs(self, result: Any, label: str) -> list:
        """A batch-mode result split into its num_outputs outputs."""
        if not self.multi:
            return [result]
        if not isinstance(result, (tuple, list)) or len(result) != self.k:
            raise RuntimeError(f"{label}: the source must return {self.k} outputs (num_outputs={self.k})")
        return list(result)

    def sample_outputs(self, sample: Any, label: str, index: int) -> list:
        if not self.multi:
            return [sample]
        if not isinstance(sample, (tuple, list)) or len(sample) != self.k:
            raise RuntimeError(f"{label}: sample {index}: the source must return {self.k} outputs "
                               f"(num_outputs={self.k})")
        return list(sample)


# ---- sources that hang ----------------------------------------------------------------------------

def _current_frames() -> dict:
    """``sys._current_frames()`` with the garbage collector off: CPython builds its dict holding the
    lock of the interpreter's thread list, and a collection there runs finalizers with it held; a
    pipeline finalized then joins its threads, which cannot end (a thread's end takes that lock)
    until each join gives up after 10 s (a test session once hung there for hours)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()


def thread_stacks(only: int | None = None) -> str:
    """Every thread's Python stack in this process, most recent call first, as faulthandler prints
    them (with the threads' names), or only the thread whose ident is ``only``."""
    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()
    parts = []
    for ident, frame in _current_frames().items():
        if only is not None and ident != only:
            continue
        title = "Current thread" if ident == me else "Thread"
        lines = [f'{title} 0x{ident:x} "{names.get(ident, "?")}" (most recent call first):']
        lines += [f'  File "{f.filename}", line {f.lineno} in {f.name}'
                  for f in reversed(traceback.extract_stack(frame))]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def source_timeout_error(label: str, timeout: float, epoch: int, iteration: int, sample: int | None,
                         where: str, stack: str) -> RuntimeError:
    """The error of a source that did not return within the pipeline's ``source_timeout``;
    ``stack`` (where the source waits) becomes a note."""
    what = f"sample {sample}" if sample is not None else "the whole batch (batch=True)"
    msg = (f"{label}: the source did not return within source_timeout={timeout:g} s in iteration "
           f"{iteration} of epoch {epoch}, {what} ({where}); the pipeline cannot go on: build a new one")
    stack = f"Stack of the source, where it waits:\n{stack.rstrip()}"
    if not hasattr(RuntimeError, "add_note"):  # Python 3.10: no exception notes
        return RuntimeError(f"{msg}\n{stack}")
    err = RuntimeError(msg)
    err.add_note(stack)
    return err


class SourceThread:
    """A daemon thread that calls a source for the pipeline, one call at a time, so that the
    pipeline can stop waiting for a call that hangs (``source_timeout``). Unlike the engine's
    worker threads, it is not waited for at exit: a call that hangs must not keep the process."""

    def __init__(self, name: str):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, args=(self._calls,), name=name, daemon=True)
        self.thread.start()

    @staticmethod
    def _serve(calls: queue.SimpleQueue) -> None:
        while True:
            call = calls.get()
            if call is None:
                return
            fn, args, result, done = call
            try:
                result.append((True, fn(*args)))
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                result.append((False, exc))
            done.set()
            del call, fn, args, result, done

    def call(self, fn: Callable[..., Any], args: tuple, timeout: float) -> Any:
        """``fn(*args)`` on the thread; raises TimeoutError when it has not returned in ``timeout``
        seconds (it goes on running there)."""
        result: list = []
        done = threading.Event()
        self._calls.put((fn, args, result, done))
        if not done.wait(timeout):
            raise TimeoutError
        ok, value = result[0]
        if ok:
            return value
        raise value

    def close(self) -> None:
        """The thread ends after the call it is running (never, for a call that hangs)."""
        self._calls.put(None)
