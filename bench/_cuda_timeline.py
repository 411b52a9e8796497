"""One timeline of a training process's GPU work and of its threads' waits on the GPU, per step, from
torch.profiler's CUDA activities (CUPTI, through Kineto's trace).

Issue 45 asks where a training step fed by a loader loses its time: how long the GPU sits idle, how
much of it the model's streams keep busy and how much the loader's, which host threads wait on the
GPU (``cudaStreamSynchronize``, ``cudaEventSynchronize``, a copy from pageable memory) and for how
long. ``profiled`` records some steps of a training loop and ``summarized`` reads the trace:

- the model's streams are those the training thread queued work on (the backward pass runs on them
  too); every other stream is the loader's (or a library's it calls, nvImageCodec's say);
- a host wait is a CUDA runtime call that returns only once the GPU got somewhere, and the call
  behind each copy from pageable memory (it holds its thread until the copy is done). Kineto keeps
  no driver API call but ``cuLaunchKernel``, so a wait through the driver API (penstock's engine,
  CuPy's events) shows only among CUPTI's synchronization activities (``sync: ...``), by stream.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable

WINDOW = "train_e2e.profiled_steps"  # the record_function around the profiled steps
# CUDA runtime calls that hold their thread until the GPU reaches a point
HOST_WAITS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                        "cudaMemcpy2D", "cudaMemcpyFromSymbol", "cudaMemcpyToSymbol", "cudaFree", "cudaFreeHost"})
KERNELS_SHOWN = 3  # per stream, the costliest kernels named
_GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
_HOST_CALLS = ("cuda_runtime", "cuda_driver")


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """The time two unions of intervals (each sorted, disjoint) share."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, end - start)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _kernel_name(name: str) -> str:
    """A kernel's name without its return type, template arguments and parameters (what tells kernels
    apart here)."""
    short = name.replace("(anonymous namespace)", "{anonymous}").removeprefix("void ")
    return re.split(r"[<(]", short, maxsplit=1)[0].strip() or name


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _kernels_of(by_name: dict[str, list[float]], delays: list[float], steps: int) -> dict:
    """A stream's KERNELS_SHOWN costliest kernels (per step: how many, ms) and how long its kernels
    waited on the GPU after their launch calls returned (ms; median and 90th percentile): a kernel
    queued behind its own stream's work or held back by other streams' waits there."""
    if not by_name:
        return {}
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:KERNELS_SHOWN]
    got = {"kernels": {name: [round(n / steps, 2), round(us * 1e-3 / steps, 3)] for name, (n, us) in top}}
    if delays:
        got["start_delay_ms"] = [round(_percentile(delays, share) * 1e-3, 3) for share in (0.5, 0.9)]
    return got


def _group(name: str) -> str:
    """A pool's threads (``name_<n>``) as one."""
    return re.sub(r"_\d+$", "", name) or name


def thread_names() -> dict[int, str]:
    """This process's threads by every id a trace may give them: Linux's thread id, and for Python's
    threads also pthread's id as CUPTI's default thread id type truncates it (32 bits, signed)."""
    names: dict[int, str] = {}
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/comm") as f:
                names[int(task)] = f.read().strip()
    except OSError:  # not Linux, or a thread just ended
        pass
    for t in threading.enumerate():
        if t.native_id is not None:
            names[t.native_id] = t.name
        if t.ident is not None:
            names[(t.ident + 2 ** 31) % 2 ** 32 - 2 ** 31] = t.name
    return names


def summarized(trace: dict, steps: int, names: dict[int, str], model_threads: Iterable[int]) -> dict:
    """Per step of the ``steps`` inside the trace's WINDOW (Kineto's chrome trace, ``trace``): the
    GPU's idle and busy time, the model's streams' and the others', each stream with the threads that
    queued its work, the copies by kind, and the host threads' waits on the GPU. Threads by their
    names in ``names`` (ids as the trace gives them) or the trace's, a pool's threads as one; the
    model's threads are ``model_threads``."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    names = {**{e.get("tid"): e.get("args", {}).get("name", "") for e in trace.get("traceEvents", [])
                if e.get("ph") == "M" and e.get("name") == "thread_name"}, **names}
    window = [e for e in events if e.get("name") == WINDOW and e.get("cat") != "gpu_user_annotation"]
    if not window:
        raise ValueError(f"the trace holds no {WINDOW!r} span: were the steps recorded inside it?")
    begin, end = float(window[0]["ts"]), float(window[0]["ts"]) + float(window[0]["dur"])
    per_step = 1e-3 / steps  # microseconds in all -> milliseconds a step

    def thread(tid) -> str:
        return _group(names.get(tid) or f"thread {tid}")

    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") in _HOST_CALLS and "correlation" in e.get("args", {})}
    model = set(model_threads)
    streams: dict[int, list[tuple[float, float]]] = {}
    launchers: dict[int, dict[str, int]] = {}
    kernels: dict[int, dict[str, list[float]]] = {}  # per stream, per kernel name: [count, microseconds]
    delays: dict[int, list[float]] = {}  # per stream, each kernel's wait on the GPU after its launch call returned
    model_streams: set[int] = set()
    copies: dict[str, list[float]] = {}
    waits: dict[tuple[str, str], list[float]] = {}
    for e in events:
        start, stop = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        if stop <= begin or start >= end:
            continue
        args = e.get("args", {})
        if e.get("cat") in _GPU_WORK:
            stream = int(args.get("stream", -1))
            streams.setdefault(stream, []).append((max(start, begin), min(stop, end)))
            call = calls.get(args.get("correlation"))
            if e["cat"] == "kernel":
                got = kernels.setdefault(stream, {}).setdefault(_kernel_name(e["name"]), [0, 0.0])
                got[0] += 1
                got[1] += min(stop, end) - max(start, begin)
                if call is not None:
                    delays.setdefault(stream, []).append(max(0.0, start - float(call["ts"]) - float(call["dur"])))
            if call is not None:
                by = launchers.setdefault(stream, {})
                by[thread(call["tid"])] = by.get(thread(call["tid"]), 0) + 1
                if call["tid"] in model:
                    model_streams.add(stream)
            if e["cat"] == "gpu_memcpy":
                kind = e["name"].removeprefix("Memcpy ")
                got = copies.setdefault(kind, [0, 0.0, 0.0])
                got[0] += 1
                got[1] += stop - start
                got[2] += float(args.get("bytes", 0))
                if "Pageable" in kind and call is not None:  # its call held the thread until it was done
                    wait = waits.setdefault((thread(call["tid"]), f"{call['name']} (pageable)"), [0, 0.0])
                    wait[0] += 1
                    wait[1] += float(call["dur"])
        elif e.get("cat") == "cuda_runtime" and e.get("name") in HOST_WAITS:
            wait = waits.setdefault((thread(e["tid"]), e["name"]), [0, 0.0])
            wait[0] += 1
            wait[1] += stop - start
        elif e.get("cat") == "cuda_sync" and "Wait" not in e.get("name", ""):  # a stream's wait is the GPU's
            call = calls.get(args.get("correlation"))
            if call is not None and call["name"] in HOST_WAITS:
                continue  # the runtime call's own row counts it
            who = thread(call["tid"]) if call is not None else "driver API"
            wait = waits.setdefault((who, f"sync: {e['name']} (stream {args.get('stream', -1)})"), [0, 0.0])
            wait[0] += 1
            wait[1] += stop - start
    busy = {stream: _union(spans) for stream, spans in streams.items()}
    model_busy = _union(span for stream, spans in busy.items() if stream in model_streams for span in spans)
    other_busy = _union(span for stream, spans in busy.items() if stream not in model_streams for span in spans)

    def ms(microseconds: float) -> float:
        return round(microseconds * per_step, 3)
    return {
        "steps": steps,
        "wall_ms_per_step": ms(end - begin),
        "gpu_idle_ms_per_step": ms(end - begin - _length(_union(model_busy + other_busy))),
        "model_streams_ms_per_step": ms(_length(model_busy)),
        "other_streams_ms_per_step": ms(_length(other_busy)),
        "other_beside_model_ms_per_step": ms(_overlap(model_busy, other_busy)),
        "streams": {str(stream): {"ms_per_step": ms(_length(spans)), "model": stream in model_streams,
                                  "queued_by": sorted(launchers.get(stream, {}), key=lambda t: -launchers[stream][t]),
                                  **_kernels_of(kernels.get(stream, {}), delays.get(stream, []), steps)}
                    for stream, spans in sorted(busy.items(), key=lambda kv: -_length(kv[1]))},
        "copies": {kind: {"per_step": round(n / steps, 2), "ms_per_step": ms(gpu),
                          "mb_per_step": round(b / 1e6 / steps, 3)} for kind, (n, gpu, b) in sorted(copies.items())},
        "host_waits": [[who, call, round(n / steps, 2), ms(held)]
                       for (who, call), (n, held) in sorted(waits.items(), key=lambda kv: -kv[1][1])],
    }


def profiled(step: Callable[[], None], steps: int, sync: Callable[[], None], cuda: bool) -> dict:
    """``steps`` calls of ``step`` under torch.profiler (with CUDA's activities and its synchronization
    events when ``cuda``), summarized; the calling thread is the model's. Without CUDA only the steps'
    wall time: the run checks that the recording and its reading work."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    config = torch.profiler._ExperimentalConfig(enable_cuda_sync_events=True) if cuda else None
    me = threading.current_thread()
    with profile(activities=activities, experimental_config=config) as prof:
        with record_function(WINDOW):
            for _ in range(steps):
                step()
            sync()
    names = thread_names()  # while the loader's threads still run
    with tempfile.TemporaryDirectory(prefix="cuda-timeline-") as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    timeline = summarized(trace, steps, names, {me.native_id, (me.ident + 2 ** 31) % 2 ** 32 - 2 ** 31})
    return timeline if cuda else {key: timeline[key] for key in ("steps", "wall_ms_per_step")}
