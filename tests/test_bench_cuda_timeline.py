"""bench/_cuda_timeline.py: a training step's GPU timeline and its threads' waits on the GPU, read from
torch.profiler's (Kineto's) chrome trace, and train_e2e's --cuda-profile that records one."""
import json
import os
import subprocess
import sys
import threading

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import _cuda_timeline  # noqa: E402

MODEL, LOADER, WAITER = 10, 20, 30


def _span(name, cat, tid, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _gpu(name, cat, stream, ts, dur, correlation, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": correlation, **args}}


# Two steps in a 2 ms window: the model's kernels on stream 7 (one begun before the window, one after
# it), the loader's kernel and a copy from pageable memory on stream 13, a thread waiting for a stream,
# CUPTI's record of that wait, a stream's wait for an event and a synchronization through the driver
# API (no runtime call of its own).
TRACE = {"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": WAITER, "args": {"name": "thread 30 (python)"}},
    _span(_cuda_timeline.WINDOW, "user_annotation", MODEL, 1000, 2000),
    _span(_cuda_timeline.WINDOW, "gpu_user_annotation", 7, 0, 9000),  # the GPU's row of it: not the window
    _span("cudaLaunchKernel", "cuda_runtime", MODEL, 890, 5, correlation=5),
    _gpu("conv", "kernel", 7, 900, 150, 5),
    _span("cudaLaunchKernel", "cuda_runtime", MODEL, 1050, 5, correlation=1),
    _gpu("conv", "kernel", 7, 1100, 400, 1),
    _span("cuLaunchKernel", "cuda_driver", MODEL, 1060, 5, correlation=2),
    _gpu("bn", "kernel", 7, 1400, 400, 2),
    _span("cudaLaunchKernel", "cuda_runtime", MODEL, 2990, 5, correlation=6),
    _gpu("late", "kernel", 7, 3500, 100, 6),
    _span("cuLaunchKernel", "cuda_driver", LOADER, 1650, 5, correlation=3),
    _gpu("resize", "kernel", 13, 1700, 300, 3),
    _span("cudaMemcpyAsync", "cuda_runtime", LOADER, 2050, 200, correlation=4),
    _gpu("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 13, 2100, 100, 4, bytes=1_000_000),
    _span("cudaStreamSynchronize", "cuda_runtime", WAITER, 2300, 600, correlation=8),
    _gpu("Stream Sync", "cuda_sync", 7, 2300, 600, 8),  # CUPTI's record of that same wait
    _gpu("Stream Wait Event", "cuda_sync", 13, 2400, 1, 9),  # the GPU's wait, not a thread's
    _gpu("Event Sync", "cuda_sync", 13, 2500, 100, 99),
]}


def test_a_trace_reads_as_the_gpus_time_per_step_stream_by_stream():
    got = _cuda_timeline.summarized(TRACE, 2, {MODEL: "MainThread", LOADER: "penstock-stage2_0"}, [MODEL])
    assert got["steps"] == 2 and got["wall_ms_per_step"] == 1.0
    # the model's stream: [1000, 1050] of the kernel begun before the window, then [1100, 1800]
    assert got["model_streams_ms_per_step"] == 0.375
    assert got["other_streams_ms_per_step"] == 0.2  # [1700, 2000] and [2100, 2200]
    assert got["other_beside_model_ms_per_step"] == 0.05  # [1700, 1800]
    assert got["gpu_idle_ms_per_step"] == 0.475  # 2000 less 50 + 900 + 100
    assert got["streams"] == {
        # per step: kernels by name, [how many, ms in the window]; the waits after their launch calls
        # returned, median and 90th percentile: 5, 45 and 335 us on the model's stream
        "7": {"ms_per_step": 0.375, "model": True, "queued_by": ["MainThread"],
              "kernels": {"conv": [1.0, 0.225], "bn": [0.5, 0.2]}, "start_delay_ms": [0.045, 0.335]},
        "13": {"ms_per_step": 0.2, "model": False, "queued_by": ["penstock-stage2"],
               "kernels": {"resize": [0.5, 0.15]}, "start_delay_ms": [0.045, 0.045]}}
    assert got["copies"] == {"HtoD (Pageable -> Device)": {"per_step": 0.5, "ms_per_step": 0.05, "mb_per_step": 0.5}}


def test_a_trace_names_each_host_wait_on_the_gpu_by_thread_and_call_the_longest_first():
    got = _cuda_timeline.summarized(TRACE, 2, {MODEL: "MainThread", LOADER: "penstock-stage2_0"}, [MODEL])
    assert got["host_waits"] == [
        ["thread 30 (python)", "cudaStreamSynchronize", 0.5, 0.3],  # named by the trace: not one of ours
        ["penstock-stage2", "cudaMemcpyAsync (pageable)", 0.5, 0.1],  # the call held its thread until the copy
        ["driver API", "sync: Event Sync (stream 13)", 0.5, 0.05],
    ]


def test_kernels_are_named_without_their_return_type_templates_and_parameters():
    name = "void at::native::(anonymous namespace)::upsample<float, 3>(int, float const*)"
    assert _cuda_timeline._kernel_name(name) == "at::native::{anonymous}::upsample"
    assert _cuda_timeline._kernel_name("sm90_xmma_fprop") == "sm90_xmma_fprop"


def test_a_trace_without_the_profiled_window_is_refused():
    events = [e for e in TRACE["traceEvents"] if e.get("cat") != "user_annotation"]
    with pytest.raises(ValueError, match=_cuda_timeline.WINDOW):
        _cuda_timeline.summarized({"traceEvents": events}, 2, {}, [MODEL])


def test_threads_are_named_by_linux_id_and_by_cuptis_default_id():
    ready, done = threading.Event(), threading.Event()
    worker = threading.Thread(target=lambda: (ready.set(), done.wait()), name="loader_3")
    worker.start()
    try:
        ready.wait()
        names = _cuda_timeline.thread_names()
    finally:
        done.set()
        worker.join()
    assert names[worker.native_id] == "loader_3"
    assert names[(worker.ident + 2 ** 31) % 2 ** 32 - 2 ** 31] == "loader_3"  # pthread's id, 32 bits signed
    assert names[threading.main_thread().native_id] == threading.main_thread().name


def test_train_e2e_records_a_timeline_after_its_timed_window(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(BENCH, "train_e2e.py"), "--device", "cpu", "--models", "resnet18",
         "--feeds", "synthetic,penstock", "--images", "16", "--data-cache", str(tmp_path), "--seconds", "0.3",
         "--cuda-profile", "3", "--loss-item"], capture_output=True, text=True, timeout=300, check=True).stdout
    lines = {line["feed"]: line for line in map(json.loads, out.splitlines()) if "feed" in line}
    assert set(lines) == {"synthetic", "penstock"}
    for line in lines.values():  # on the CPU only the steps' wall time: there is no GPU timeline to read
        assert line["loss_item"] and line["wall_ms_per_step:loss_item"] > 0  # the loss read every step
        assert line["cuda_profile"]["steps"] == 3 and line["cuda_profile"]["wall_ms_per_step"] > 0
        assert set(line["cuda_profile"]) == {"steps", "wall_ms_per_step"}
