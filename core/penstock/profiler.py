"""Where a pipeline's time goes: per-operator time and bytes, how often a batch was ready when
asked for, host CPU and GPU utilisation, the bottleneck in one sentence, and optionally a
Chrome-trace/Perfetto timeline.

    python -m penstock profile train.py:train_pipeline --batches 50 --trace timeline.json

or from Python: ``penstock.profiler.profile(pipe, batches=50).report()``.

While it runs a pipeline, the executor appends each operator run's start, end, iteration and output
bytes to a list; the report counts the runs of the iterations it consumed while measuring (a
pipelined executor runs stages of later iterations meanwhile, and ran some of these earlier).
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import sys
import threading
import time
from typing import Any, Callable

from ._executor import Executor
from .pipeline import Pipeline
from .pipeline._process import ENV as PROCESS_ENV

_SAMPLE_S = 0.005  # queue and GPU sampling period


@dataclasses.dataclass
class OperatorProfile:
    name: str        # as in executor_statistics: the given name or e.g. "decoders.image#1"
    function: str    # fn name: "decoders.image"
    device: str
    runs: int
    seconds: float
    share: float     # of all operators' time
    bytes_per_batch: float

    @property
    def mean_ms(self) -> float:
        return 1e3 * self.seconds / self.runs if self.runs else 0.0


@dataclasses.dataclass
class ProfileResult:
    batches: int
    batch_size: int
    num_threads: int
    wall_seconds: float
    operators: list[OperatorProfile]         # slowest first
    wait_fraction: float                     # of the wall time, the consumer waiting for a batch
    ready_when_asked: float                  # mean batches already done when the consumer asked
    queue_depth: int                         # iterations the pipeline may run ahead
    cpu_cores_busy: float                    # process CPU seconds per wall second
    cpu_count: int
    gpu_utilisation: float | None            # mean %, sampled through NVML; None: not measured
    gpu_note: str
    bottleneck: str
    trace_path: str | None = None

    @property
    def samples_per_second(self) -> float:
        return self.batches * self.batch_size / self.wall_seconds

    def report(self) -> str:
        lines = [f"{self.batches} batches of {self.batch_size} in {self.wall_seconds:.2f} s: "
                 f"{self.samples_per_second:,.0f} samples/s, {1e3 * self.wall_seconds / self.batches:.1f} ms per batch",
                 "", f"  {'operator':<34} {'device':<6} {'ms/batch':>9} {'share':>6} {'MB/batch':>9}"]
        for op in self.operators:
            lines.append(f"  {op.name:<34} {op.device:<6} {op.mean_ms:>9.2f} {100 * op.share:>5.0f}% "
                         f"{op.bytes_per_batch / 1e6:>9.2f}")
        gpu = f"{self.gpu_utilisation:.0f}%" if self.gpu_utilisation is not None else self.gpu_note
        lines += ["", f"consumer waited {100 * self.wait_fraction:.0f}% of the time; a batch was ready at "
                      f"{self.ready_when_asked:.1f} of {self.queue_depth} queue slots on average when asked",
                  f"host CPU: {self.cpu_cores_busy:.2f} of {self.cpu_count} cores busy "
                  f"(pipeline threads: {self.num_threads}); GPU: {gpu}",
                  "", f"Bottleneck: {self.bottleneck}"]
        if self.trace_path:
            lines.append(f"Timeline: {self.trace_path} (open in https://ui.perfetto.dev or chrome://tracing)")
        return "\n".join(lines)


def load_target(target: str) -> Callable[[], Any] | Pipeline:
    """``path/to/script.py:NAME`` or ``package.module:NAME`` -> that object (a Pipeline, or a
    function returning one such as a ``@pipeline_def``)."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"expected SCRIPT_OR_MODULE:PIPELINE_FN, got {target!r}")
    if where.endswith(".py") or os.path.sep in where:
        path = os.path.abspath(where)
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(path))  # the script's own imports, as when it runs
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    try:
        return getattr(module, name)
    except AttributeError:
        raise ValueError(f"{where} has no {name!r}") from None


def profile(pipeline: Pipeline | Callable[[], Pipeline], batches: int = 20, warmup: int = 2,
            trace: str | None = None) -> ProfileResult:
    """Runs ``pipeline`` (or the pipeline a function returns) for ``warmup`` then ``batches``
    iterations, consuming each batch at once, and reports on the measured ones."""
    pipe = pipeline if isinstance(pipeline, Pipeline) else pipeline()
    if not isinstance(pipe, Pipeline):
        raise TypeError(f"expected a Pipeline or a function returning one, got {type(pipe).__name__}")
    if not pipe._built:
        pipe._process_allowed = False  # the operators' timelines are kept where they run
    pipe.build()
    executor = pipe._executor
    if not isinstance(executor, Executor):
        raise ValueError("profile() needs a pipeline that runs its iterations in this process: pass it "
                         f"before it is built, or build it with {PROCESS_ENV}=off")
    for s in executor.stats.values():
        s.timeline = []
    try:
        for _ in range(warmup):
            pipe.run()
        first = pipe._pending[0].index if pipe._pending else pipe._iteration  # the next run()'s iteration
        sampler = _Sampler(pipe)
        waits: list[tuple[float, float]] = []
        ready = 0
        cpu_start, start = os.times(), time.perf_counter()
        sampler.start()
        try:
            for _ in range(batches):
                ready += sum(it.done.is_set() for it in tuple(pipe._pending))
                asked = time.perf_counter()
                pipe.run()
                waits.append((asked, time.perf_counter()))
        finally:
            sampler.stop()
        wall = time.perf_counter() - start
        cpu = os.times()
        cpu_seconds = (cpu.user - cpu_start.user) + (cpu.system - cpu_start.system)
        timelines = {name: [run for run in tuple(s.timeline) if first <= run[3] < first + batches]
                     for name, s in executor.stats.items()}
    finally:
        for s in executor.stats.values():
            s.timeline = None
    names = pipe.operator_names()
    ops = {op.name: op for stage in executor.stages for op in stage}
    measured = {name: (len(runs), sum(end - begin for begin, end, *_ in runs), sum(run[4] for run in runs))
                for name, runs in timelines.items()}
    total = sum(seconds for _, seconds, _ in measured.values()) or 1e-12
    operators = sorted((OperatorProfile(names[name], ops[name].schema.fn_name, ops[name].device, runs, seconds,
                                        seconds / total, nbytes / runs if runs else 0.0)
                        for name, (runs, seconds, nbytes) in measured.items()), key=lambda op: -op.seconds)
    wait_fraction = sum(b - a for a, b in waits) / wall
    result = ProfileResult(
        batches=batches, batch_size=pipe.max_batch_size, num_threads=pipe.num_threads, wall_seconds=wall,
        operators=operators, wait_fraction=wait_fraction, ready_when_asked=ready / batches,
        queue_depth=max(pipe._cpu_queue_size, pipe._gpu_queue_size), cpu_cores_busy=cpu_seconds / wall,
        cpu_count=os.cpu_count() or 1, gpu_utilisation=sampler.gpu_mean(), gpu_note=sampler.gpu_note, bottleneck="")
    result.bottleneck = bottleneck(result)
    if trace:
        write_trace(trace, executor, timelines, names, waits, sampler.queue, start)
        result.trace_path = trace
    return result


_ADVICE = {
    "decoders": "raise num_threads or use device='mixed'",
    "readers": "reading the files is the bottleneck: check the storage's throughput (local disk, page cache), "
               "or raise num_threads for more read-ahead",
    "python": "Python code runs under the GIL: use external_source(parallel=True) or native operators",
}


def bottleneck(result: ProfileResult) -> str:
    """The one sentence that says what limits the pipeline's throughput, and what to do about it."""
    if not result.operators or result.wait_fraction < 0.1:
        return (f"the consumer: a batch was ready {100 * (1 - result.wait_fraction):.0f}% of the time, so the "
                "pipeline keeps ahead of whatever consumes its batches")
    top = result.operators[0]
    family = top.function.split(".")[0]
    if "python" in top.function or family == "external_source":
        advice = _ADVICE["python"]
    elif family == "decoders" and top.device == "mixed":
        advice = "raise num_threads (host decoding) or hw_decoder_load"
    elif family in _ADVICE:
        advice = _ADVICE[family]
    elif top.device == "cpu":
        advice = "raise num_threads or run it on the GPU (device='gpu')"
    else:
        advice = "it runs on the GPU: a larger batch amortizes its launches"
    busy = (f"; the host's {result.cpu_count} cores are {100 * result.cpu_cores_busy / result.cpu_count:.0f}% busy"
            if result.cpu_cores_busy > 0.8 * result.cpu_count else "")
    return f"{top.name} is {100 * top.share:.0f}% of the operators' time; {advice}{busy}."


class _Sampler:
    """Samples the queue (iterations done and waiting for the consumer) and, for a GPU pipeline,
    the GPU's utilisation through NVML, on a thread of its own."""

    def __init__(self, pipe: Pipeline):
        self.pipe = pipe
        self.queue: list[tuple[float, int]] = []
        self.gpu: list[float] = []
        self.gpu_note = "no GPU operators"
        self._nvml = self._open_nvml(pipe.device_id) if pipe.device_id is not None else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="penstock-profiler", daemon=True)

    def _open_nvml(self, device_id: int) -> Any:
        try:
            import pynvml  # noqa: PLC0415 - optional (nvidia-ml-py)
            pynvml.nvmlInit()
            return pynvml, pynvml.nvmlDeviceGetHandleByIndex(device_id)
        except Exception as exc:  # noqa: BLE001 - not installed, no driver
            self.gpu_note = ("not measured: pip install nvidia-ml-py" if isinstance(exc, ImportError)
                             else f"not measured ({exc})")
            return None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(_SAMPLE_S):
            try:
                pending = tuple(self.pipe._pending)
            except RuntimeError:  # the deque changed while it was copied
                continue
            self.queue.append((time.perf_counter(), sum(it.done.is_set() for it in pending)))
            if self._nvml is not None:
                nvml, handle = self._nvml
                self.gpu.append(float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))

    def gpu_mean(self) -> float | None:
        return sum(self.gpu) / len(self.gpu) if self.gpu else None


def write_trace(path: str, executor: Any, timelines: dict[str, list[tuple]], names: dict[str, str],
                waits: list[tuple[float, float]], queue: list[tuple[float, int]], origin: float) -> None:
    """A Chrome-trace JSON (Perfetto and chrome://tracing read it): one slice per operator run on
    the thread that ran it, the consumer's waits on a track of their own, and the queue as a counter."""
    pid = os.getpid()
    threads = {t.ident: t.name for t in threading.enumerate()}
    events: list[dict] = []
    tids: dict[int, int] = {}

    def tid(ident: int, name: str) -> int:
        if ident not in tids:
            tids[ident] = len(tids) + 1
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[ident], "args": {"name": name}})
        return tids[ident]

    def us(t: float) -> float:
        return round((t - origin) * 1e6, 3)

    for stage in executor.stages:
        for op in stage:
            for start, end, ident, iteration, _ in timelines[op.name]:
                events.append({"ph": "X", "name": names[op.name], "cat": op.device, "pid": pid,
                               "tid": tid(ident, threads.get(ident, f"thread {ident}")), "ts": us(start),
                               "dur": round((end - start) * 1e6, 3), "args": {"iteration": iteration}})
    consumer = tid(-1, "consumer (waiting in run())")
    events += [{"ph": "X", "name": "wait for batch", "cat": "consumer", "pid": pid, "tid": consumer, "ts": us(a),
                "dur": round((b - a) * 1e6, 3)} for a, b in waits]
    events += [{"ph": "C", "name": "batches ready", "pid": pid, "ts": us(t), "args": {"ready": n}} for t, n in queue]
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
