"""Which calls on the GPU pipeline's path give the GIL away (a diagnostic, GPU machine).

A call that releases the GIL costs its thread up to Python's switch interval (5 ms) to get it back
while another thread runs Python, as a training loop's thread does. Per call: a background thread
makes it in a loop while the main thread spins in pure Python, and the background rate is printed
against the same loop alone. A call that keeps the GIL keeps most of its rate; one that gives it
away falls to about one call per switch interval (~200/s).

    python bench/gil_cost.py [--seconds 0.5]

One JSON line per call: calls/s alone, calls/s beside a spinning thread, and the ratio.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import emit, gpu_name  # noqa: E402


def rate(call, seconds: float, beside_spin: bool) -> float:
    stop = threading.Event()
    count = [0]

    def loop():
        while not stop.is_set():
            call()
            count[0] += 1

    t = threading.Thread(target=loop)
    start = time.perf_counter()
    t.start()
    end = start + seconds
    if beside_spin:
        n = 0
        while time.perf_counter() < end:
            for _ in range(100):
                n += 1
    else:
        time.sleep(seconds)
    stop.set()
    t.join()
    return count[0] / (time.perf_counter() - start)


def calls() -> dict:
    import cupy as cp
    from penstock._cuda._context import DeviceContext
    ctx = DeviceContext(0)
    stream, device = ctx.stream, ctx.device
    host = np.arange(4096, dtype=np.uint8)
    dev = cp.empty(4096, np.uint8)
    big = np.zeros(4 << 20, np.uint8)
    raw = cp.RawKernel(r'extern "C" __global__ void nop(unsigned char* p, long long n) {}', "nop")
    raw.compile()
    from penstock._cuda._stream_queue import Kernel, record_event, wait_event
    held = Kernel(raw)
    event = cp.cuda.Event(block=False, disable_timing=True)

    def with_device():
        with device:
            pass

    def with_context():
        with ctx:
            pass

    def cupy_launch():
        with device:
            raw((1,), (32,), (dev, np.int64(1)), stream=stream)

    def held_launch():
        with device:
            held((1,), (32,), (dev, np.int64(1)), stream=stream)

    def cupy_upload():
        with device:
            cp.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes, cp.cuda.runtime.memcpyHostToDevice,
                                        stream.ptr)

    def cupy_empty():
        with ctx:
            cp.empty(1 << 20, np.uint8)

    return {
        "with Device": with_device,
        "with DeviceContext (device + stream)": with_context,
        "cupy RawKernel launch": cupy_launch,
        "Kernel launch (engine, GIL held)": held_launch,
        "cupy memcpyAsync 4 KB (pageable)": cupy_upload,
        "DeviceContext.upload 4 KB (pinned staging)": lambda: ctx.upload(host, dev),
        "DeviceContext.upload 4 MB (pinned staging)": lambda: ctx.upload(big),
        "DeviceContext.record (new event)": ctx.record,
        "Event.record": lambda: event.record(stream),
        "record_event (engine)": lambda: record_event(event, stream),
        "wait_event (engine)": lambda: wait_event(stream, event),
        "cupy Stream.wait_event": lambda: stream.wait_event(event),
        "cupy Event() creation": lambda: cp.cuda.Event(block=False, disable_timing=True),
        "Event.done": lambda: event.done,
        "cupy.empty 1 MB from the pool": cupy_empty,
        "numpy 4 KB copy (reference: pure C, GIL held)": lambda: host.copy(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=0.5)
    a = ap.parse_args()
    card = gpu_name()
    for name, call in calls().items():
        call()
        alone = rate(call, a.seconds, False)
        beside = rate(call, a.seconds, True)
        emit({"bench": "gil_cost", "gpu": card, "call": name, "switch_interval_ms": sys.getswitchinterval() * 1e3,
              "calls_per_s_alone": round(alone), "calls_per_s_beside_python": round(beside),
              "kept": round(beside / alone, 3)})


if __name__ == "__main__":
    main()
