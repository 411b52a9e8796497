"""Running a pipeline's iterations in a process of its own (``PENSTOCK_PIPELINE_PROCESS=on``).

Beside a training loop, a pipeline that runs in the loop's process takes turns with it: its threads'
Python waits for the GIL that the loop holds while it launches the model's kernels, the loop's
threads (torch's autograd thread among them) wait for the GIL that the pipeline's threads hold, and
the CUDA driver's locks are shared too. A pipeline process has a GIL, a CUDA context and driver locks
of its own; the training process touches the pipeline once a batch.

It is off by default: the two processes' CUDA contexts take turns on the GPU (time slices), and the
pipeline's GPU work then waits for the model's. On an H100 beside ResNet-18 the training loop's
threads ran as with the model alone (torch's autograd thread went off the CPU once a step, against
35-52 times with the pipeline in the process), but the batches came later: 0.650-0.725 of the model
alone's rate against 0.674-0.797 in the process (three calls); the hardware JPEG decoding in the
child ran at about 40% of its rate in the training process. Under MPS, which runs both processes'
kernels side by side, 0.796 against 0.639 (docs/benchmarks.md). A Python-bound consumer gains
without MPS: with a 13 ms Python step beside the GPU pipeline, ``run()`` waited 1.0 ms.

The user's process builds the pipeline as usual (so its arguments are checked, its readers' metadata
known), then a child process builds the same graph (serialized, with the same seeds) and runs each
iteration the parent schedules, in order:
- the parent sends the iteration's index, epoch and batch size;
- the child runs it and copies its GPU outputs into one of its output slots (a device buffer the
  parent has mapped by CUDA IPC), then records the slot's interprocess event and answers with the
  outputs' shapes (host outputs travel in the answer, pickled: cheap for labels and boxes, not for
  host images);
- the parent's stream waits for that event, copies the outputs into a batch of its own (a user may
  keep a batch as long as it likes) and records its own interprocess event for the slot, which the
  child's stream waits for before it writes the slot again.
No host waits for the GPU. The child ends with the pipeline, and with this process however it ends
(its pipe closes). This module is the user's process's side; ``_process_child`` is the child's.

Pipelines that need the user's process stay in it: inputs fed from Python (external sources,
``fn.inputs``, ``iter_setup``), operators that run Python code, checkpointing, memory statistics,
``on_error="skip"`` (the skipped samples are listed by this process), and synchronous execution.
"""
from __future__ import annotations

import contextlib
import pickle
import threading
from concurrent.futures import Future
from typing import Any, Sequence

import numpy as np

from .. import _engine
from .._environment import one_of
from .._executor import Iteration, OpStats
from .._graph import OpNode
from .._on_error import policy
from .._parallel import _child
from ..tensors import TensorListCPU, TensorListGPU

ENV = "PENSTOCK_PIPELINE_PROCESS"
_START_TIMEOUT_S = 120.0


class StartFailure(RuntimeError):
    """The pipeline's process could not start; the pipeline runs in this process."""


def mode() -> str:
    """``PENSTOCK_PIPELINE_PROCESS``: ``off`` (the default) or ``on`` (every pipeline that can)."""
    return one_of(ENV, "off", ("off", "on"))


def refusal(pipe: Any, nodes: Sequence[OpNode]) -> str | None:
    """Why the built pipeline ``pipe`` must run its iterations in this process; None if it may not."""
    if not (pipe._exec_async and pipe._exec_pipelined):
        return "it runs synchronously (exec_async or exec_pipelined is off)"
    if pipe._source_ops or pipe._iter_setup_defined():
        return "its inputs are fed from this process"
    if any(n.py_object is not None for n in nodes):
        return "an operator runs Python code of this process"
    if pipe._enable_checkpointing or pipe._checkpoint is not None:
        return "it takes or resumes from checkpoints"
    if pipe._enable_memory_stats:
        return "it keeps memory statistics"
    if any("on_error" in op.args and policy(op) == "skip" for op in pipe._ops):
        return "an operator skips failed samples (on_error='skip')"
    return None


# -- the parent --------------------------------------------------------------------------------------
class _Slot:
    """One output slot as this process sees it: the child's buffer mapped here, the child's event
    (written) and this process's (read out)."""

    def __init__(self, cp: Any, copied: Any):
        self.cp = cp
        self.ptr = 0
        self.written = 0  # the child's interprocess event, opened here
        self.copied = copied  # this process's interprocess event, recorded after the copy out

    def remap(self, handle: bytes) -> None:
        """The child grew the slot: the old buffer's mapping goes, the new one's comes."""
        self._unmap()
        self.ptr = self.cp.cuda.runtime.ipcOpenMemHandle(handle)

    def _unmap(self) -> None:
        """After the last copy out of the buffer has ended."""
        if self.ptr:
            self.copied.synchronize()
            self.cp.cuda.runtime.ipcCloseMemHandle(self.ptr)
            self.ptr = 0

    def close(self) -> None:
        self._unmap()
        if self.written:
            self.cp.cuda.runtime.eventDestroy(self.written)
            self.written = 0


class ProcessExecutor:
    """An ``Executor`` whose iterations run in a child process (see the module's docstring).
    Raises ``StartFailure`` when the child does not come up."""

    def __init__(self, serialized: bytes, overrides: dict, device: Any, slots: int, label: str):
        self.device = device  # the pipeline's DeviceContext in this process (None: host outputs only)
        self._label = label
        self._closed = False
        self._failure: str | None = None
        self._send_lock = threading.Lock()
        self._running: dict[int, Iteration] = {}  # sent to the child, not answered yet
        self._replies: list[Future] = []  # statistics asked for, in order
        self._slots: list[_Slot] = []
        handles = None
        if device is not None:
            cp = device.cp
            with device.device:
                copied = [cp.cuda.Event(block=False, disable_timing=True, interprocess=True) for _ in range(slots)]
            self._slots = [_Slot(cp, event) for event in copied]
            handles = [cp.cuda.runtime.ipcGetEventHandle(event.ptr) for event in copied]
        self.proc, self.conn = _child.start("penstock.pipeline._process_child", "serve")
        try:
            self.conn.send((serialized, overrides, slots, handles))
            greeting = (self.conn.recv() if self.conn.poll(_START_TIMEOUT_S) else
                        ("error", f"it did not start within {_START_TIMEOUT_S:.0f} s"))
        except (EOFError, OSError) as exc:
            greeting = ("error", f"it ended while starting ({exc}; exit code {self.proc.poll()})")
        if greeting[0] != "ready":
            self._closed = True
            self.proc.kill()
            self.proc.wait()
            self.conn.close()
            raise StartFailure(greeting[1])
        if device is not None:
            with device.device:
                for slot, handle in zip(self._slots, greeting[1]):
                    slot.written = device.cp.cuda.runtime.ipcOpenEventHandle(handle)
        self._receiver = threading.Thread(target=self._receive, daemon=True, name="penstock-pipeline-process")
        self._receiver.start()

    # -- the child's answers ------------------------------------------------------------------------
    def _receive(self) -> None:
        try:
            while True:
                message = self.conn.recv()
                kind = message[0]
                if kind in ("done", "error"):
                    _answer(self._running.pop(message[1]), message)
                elif kind == "buffer":
                    _, slot, handle = message
                    with self.device.device:
                        self._slots[slot].remap(handle)
                elif kind == "stats":
                    self._replies.pop(0).set_result(message[1])
        except (EOFError, OSError) as exc:
            self._fail(f"{exc or type(exc).__name__}; exit code {self.proc.poll()}")

    def _fail(self, why: str) -> None:
        self._failure = why
        running, self._running = self._running, {}
        for it in running.values():
            it.error = RuntimeError(f"{self._label}: the pipeline's process ended ({why})")
            it.done.set()
        for reply in self._replies:
            reply.set_exception(RuntimeError(f"{self._label}: the pipeline's process ended ({why})"))

    def _send(self, message: Any) -> None:
        try:
            with self._send_lock:
                self.conn.send(message)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"{self._label}: the pipeline's process is gone ({self._failure or exc})") from None

    # -- the executor's interface ----------------------------------------------------------------
    def submit(self, it: Iteration) -> None:
        if self._closed:
            raise RuntimeError("the pipeline's executor has been shut down")
        it.queued = True
        self._running[it.index] = it
        self._send(("run", it.index, it.epoch, it.batch_size))

    def wait(self, it: Iteration) -> tuple:
        while not it.done.wait(0.1):
            if self._closed:
                raise RuntimeError("the pipeline was shut down while an iteration was running")
            if self._failure is not None and not it.done.is_set():
                raise RuntimeError(f"{self._label}: the pipeline's process ended ({self._failure})")
        if it.error is not None:
            raise it.error
        slot, outputs = it.results
        it.results = self._outputs(slot, outputs) if slot >= 0 else tuple(_host_batch(o) for o in outputs)
        return it.results

    def _outputs(self, slot: int, outputs: list) -> tuple:
        """The iteration's outputs out of slot ``slot``: the GPU ones copied into a batch of this
        process (one copy, ordered after the child's), then the slot handed back."""
        ctx = self.device
        on_gpu = [o for o in outputs if o[0] == "gpu"]
        span = max((o[-2] + o[-1] for o in on_gpu), default=0)
        buf = ctx.empty(span, np.uint8)
        s = self._slots[slot]
        stream = int(ctx.stream.ptr)
        with ctx.device:
            _engine.wait_event(stream, s.written)
            ctx.cp.cuda.runtime.memcpyAsync(buf.data.ptr, s.ptr, span, ctx.cp.cuda.runtime.memcpyDeviceToDevice,
                                            stream)
            _engine.record_event(int(s.copied.ptr), stream)
        self._send(("free", slot))
        event = ctx.record()
        results = []
        for o in outputs:
            if o[0] == "cpu":
                results.append(_host_batch(o))
                continue
            _, dtype, shapes, offsets, layout, infos, start, nbytes = o
            tl = TensorListGPU._from_packed(buf[start:start + nbytes].view(np.dtype(dtype)), shapes, offsets,
                                            layout, infos)
            tl.stream, tl._event = ctx.stream, event
            results.append(tl)
        return tuple(results)

    def release(self, it: Iteration) -> None:
        """The user took the iteration's outputs (its slot went back when they were copied out)."""

    def consumer_waiting(self) -> Any:
        return contextlib.nullcontext()  # no thread of this process runs the pipeline's Python

    def without_turn(self) -> None:
        """(No thread of this process runs the pipeline's Python: none gives the caller a turn.)"""

    @property
    def stats(self) -> dict[str, OpStats]:
        """The child's operator statistics, as of now."""
        if self._closed or self._failure is not None:
            return {}
        reply: Future = Future()
        self._replies.append(reply)
        self._send(("stats",))
        stats = {}
        for name, (runs, seconds, output_bytes, total_bytes) in reply.result().items():
            s = stats[name] = OpStats()
            s.runs, s.seconds, s.output_bytes, s.total_bytes = runs, seconds, output_bytes, total_bytes
        return stats

    @property
    def threads(self) -> list[threading.Thread]:
        return [self._receiver]

    def shutdown(self) -> None:
        """The child ends (its pipe closes), then the mappings of its slots once the copies out of
        them are done."""
        if self._closed:
            return
        self._closed = True
        _child.stop(self.proc, self.conn, self._send_lock)
        if self.device is not None:
            with self.device.device:
                for slot in self._slots:
                    slot.close()

    def __del__(self) -> None:
        if hasattr(self, "conn"):
            self.shutdown()


def _answer(it: Iteration, message: tuple) -> None:
    if message[0] == "done":
        it.results = message[2:]  # (slot, outputs): wait() makes the outputs
    else:
        it.error = _unpickled_error(message[2])
    it.done.set()


def _host_batch(description: tuple) -> TensorListCPU:
    _, buf, shapes, offsets, layout, infos = description
    return TensorListCPU._from_packed(buf, shapes, offsets, layout, infos)


def _unpickled_error(data: bytes) -> BaseException:
    try:
        return pickle.loads(data)
    except Exception as exc:  # noqa: BLE001
        return RuntimeError(f"an error of the pipeline's process could not be read back ({exc})")
