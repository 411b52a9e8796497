"""bench/train_e2e.py: its phase times, the loaders' share beyond the model alone's, the feeds and
the GIL profile (its --variant: test_bench_variants.py)."""
import os
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import train_e2e  # noqa: E402


def test_the_host_is_named_as_the_card_is():
    host = train_e2e.host_cpu()
    assert host["logical_cores"] == len(os.sched_getaffinity(0))
    with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
        siblings = f.read().strip()
    assert host["threads_per_core"] >= 1 and (host["threads_per_core"] == 1) == siblings.isdigit()
    assert host["load_1min"] >= 0 and host["model"]


def test_phase_times_tell_waiting_from_work():
    phases = train_e2e.Phases()
    for _ in range(2):
        assert phases.timed("wait", time.sleep, 0.01) is None
        assert phases.timed("work", sum, range(200_000)) == sum(range(200_000))
    got = phases.per_step(2)
    assert set(got) == {f"{kind}_ms_per_step:{name}" for kind in ("wall", "cpu", "runq") for name in ("wait", "work")}
    assert got["wall_ms_per_step:wait"] >= 10.0  # a sleep lasts at least what it asks
    assert got["cpu_ms_per_step:wait"] < got["wall_ms_per_step:wait"] / 2
    assert 0 < got["cpu_ms_per_step:work"]
    # waiting for a core is part of the wall time, never more than what is not the thread's CPU
    assert 0 <= got["runq_ms_per_step:work"] <= got["wall_ms_per_step:work"] - got["cpu_ms_per_step:work"] + 0.1
    phases.clear()
    assert phases.per_step(1) == {}


def test_a_summary_keeps_each_rounds_rate_beside_the_median():
    from _common import summary
    line = summary([{"img_per_s": 10.04, "peak_mb": 5, "cpu_ms": 1.0}, {"img_per_s": 12.0, "peak_mb": 7, "cpu_ms": 3.0},
                    {"img_per_s": 11.0, "peak_mb": 6, "cpu_ms": 2.0}])
    assert line == {"img_per_s": 11.0, "img_per_s_rounds": [10.0, 12.0, 11.0], "peak_mb": 7, "cpu_ms": 2.0,
                    "rounds": 3}
    assert "img_per_s_rounds" not in summary([{"img_per_s": 10.0}])  # one round: the median is the round


def test_a_summary_keeps_each_rounds_table_as_it_is():
    from _common import summary
    tables = [{"stage2": [["run (x.py)", 0.5]]}, {"stage2": [["run (x.py)", 0.7]]}]
    assert summary([{"img_per_s": 1.0, "gil_ms_per_batch": t} for t in tables])["gil_ms_per_batch"] == tables
    assert summary([{"img_per_s": 1.0, "gil_ms_per_batch": tables[0]}])["gil_ms_per_batch"] == tables[0]


def test_the_decoders_split_is_per_batch_decoded_in_the_window():
    from _common import split_counts, split_per_batch
    before = {"batches": 10, "gpu_samples": 1000, "host_samples": 280, "gpu_seconds": 0.2, "host_seconds": 0.1,
              "lifted_batches": 2, "gpu_idle_seconds": 0.05, "gpu_unfed_seconds": 0.01, "lifted_gpu_samples": 100,
              "lifted_host_samples": 412,
              "lifted_gpu_seconds": 0.03, "lifted_host_seconds": 0.04}
    after = {"batches": 14, "gpu_samples": 1600, "host_samples": 704, "gpu_seconds": 0.28, "host_seconds": 0.17,
             "lifted_batches": 5, "gpu_idle_seconds": 0.062, "gpu_unfed_seconds": 0.018, "lifted_gpu_samples": 250,
             "lifted_host_samples": 1030,
             "lifted_gpu_seconds": 0.06, "lifted_host_seconds": 0.1}
    assert split_per_batch(before, after) == {"batches": 4, "gpu_jpegs": 150.0, "host_jpegs": 106.0,
                                              "gpu_side_ms": 20.0, "host_side_ms": 17.5, "gpu_idle_ms": 3.0,
                                              "gpu_unfed_ms": 2.0,
                                              "lifted_share": 0.75,  # 3 of the 4, each side's per batch of those:
                                              "lifted": {"gpu_jpegs": 50.0, "host_jpegs": 206.0, "gpu_side_ms": 10.0,
                                                         "host_side_ms": 20.0}}
    unlifted = {**after, "batches": 15, "gpu_samples": 1856}  # one more batch, split under the cap
    assert "lifted" not in split_per_batch(after, unlifted)
    assert split_per_batch(after, after) == {} and split_per_batch({}, {}) == {}  # none decoded here
    memory = {"codec_decoders": 1, "codec_device_blocks": 6, "codec_device_bytes": 48 << 20, "codec_pinned_blocks": 3,
              "codec_pinned_bytes": 3 << 20, "codec_reused": 100}
    grown = {**memory, "codec_device_blocks": 7, "codec_device_bytes": 50 << 20, "codec_reused": 140}
    assert split_per_batch({**before, **memory}, {**after, **grown})["codec_memory"] == {
        "decoders": 1, "device_mb": 50.0, "pinned_mb": 3.0, "new_blocks": 1, "reused_per_batch": 10.0}
    staging = {"staging_blocks": 4, "staging_bytes": 300 << 20, "staging_seconds": 0.2, "staging_held_bytes": 300 << 20}
    pinned = {**staging, "staging_blocks": 6, "staging_bytes": 700 << 20, "staging_seconds": 0.52,
              "staging_held_bytes": 650 << 20}
    assert split_per_batch({**before, **staging}, {**after, **pinned})["staging"] == {
        "new_blocks": 2, "new_mb": 400.0, "pinning_ms_per_batch": 80.0, "held_mb": 650.0}
    cuda = {"cuda_samples": 0, "cuda_batches": 0}  # the CUDA decoder beside the engines (PENSTOCK_CUDA_DECODER)
    assert "cuda_jpegs" not in split_per_batch({**before, **cuda}, {**after, **cuda})
    took = split_per_batch({**before, **cuda}, {**after, "cuda_samples": 240, "cuda_batches": 2})
    assert (took["cuda_jpegs"], took["cuda_share"]) == (60.0, 0.5)  # of the 150 GPU JPEGs a batch; 2 of the 4 batches
    assert set(split_counts("penstock:h12")) == set(before) | set(memory) | set(staging) | set(cuda)
    assert split_counts("dali") == {}


def test_the_run_queue_wait_is_linux_schedstat_or_nothing():
    seconds = train_e2e.run_queue_seconds()
    if os.path.exists("/proc/thread-self/schedstat"):
        assert seconds is not None and seconds >= 0
    else:
        assert seconds is None


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="Linux's schedstat")
def test_the_run_queue_wait_is_read_without_giving_the_gil_away(shim):
    """The training thread reads it twice a phase: each time it gave the GIL away, a loader's thread
    could take it (counted in a child Python by tests/gil_handbacks.c: 3 a read from Python's file
    calls)."""
    child = (f"import ctypes, sys\nsys.path.insert(0, {os.path.dirname(train_e2e.__file__)!r})\n"
             "import train_e2e\n"
             f"counter = ctypes.PyDLL({shim!r})\n"
             "counter.gil_all_handbacks.restype = ctypes.c_long\n"
             "train_e2e.run_queue_seconds()\n"  # (the first read opens the file)
             "before = counter.gil_all_handbacks()\n"
             "readings = [train_e2e.run_queue_seconds() for _ in range(20)]\n"
             "print(counter.gil_all_handbacks() - before, readings[0] <= readings[-1])\n")
    done = subprocess.run([sys.executable, "-c", child], env={**os.environ, "LD_PRELOAD": shim},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "True"], done.stdout


def test_the_python_loop_holds_the_gil_then_waits_without_it():
    phases = train_e2e.Phases()
    train = train_e2e.loop_trainer(3.0, 4.0, phases)
    for _ in range(2):
        train(None, None)
    got = phases.per_step(2)
    assert {"wall_ms_per_step:forward", "cpu_ms_per_step:forward", "wall_ms_per_step:backward",
            "cpu_ms_per_step:backward"} <= set(got)
    # the Python part is a fixed amount of work sized to take 3 ms alone (measured once, on a machine
    # other tests keep busy: a make test run saw 1.41): CPU work, of about that size
    assert got["cpu_ms_per_step:forward"] >= 0.5 * got["wall_ms_per_step:forward"], got
    assert 0.5 <= got["cpu_ms_per_step:forward"] <= 12.0, got
    assert got["wall_ms_per_step:backward"] >= 4.0
    assert got["cpu_ms_per_step:backward"] < got["wall_ms_per_step:backward"] / 2  # a sleep, not a spin


def test_the_loaders_share_is_what_a_run_takes_beyond_the_model_alones():
    ceiling = {"img_per_s": 4712.0, "host_cores_busy": 1.0, "peak_gpu_mb": 20480.0}
    line = {"img_per_s": 4456.0, "host_cores_busy": 2.3, "peak_gpu_mb": 21250.5}
    assert train_e2e.beyond_ceiling(line, ceiling) == {"fraction_of_ceiling": 0.946, "loader_cores_busy": 1.3,
                                                       "loader_peak_gpu_mb": 770.5}
    on_cpu = train_e2e.beyond_ceiling({**line, "peak_gpu_mb": None}, {**ceiling, "peak_gpu_mb": None})
    assert on_cpu == {"fraction_of_ceiling": 0.946, "loader_cores_busy": 1.3}


def test_the_beside_feed_trains_on_the_model_batch_and_takes_one_pipeline_batch_a_step():
    taken, threads = [], set()
    took = threading.Semaphore(0)

    def pipeline_batch():
        threads.add(threading.get_ident())
        taken.append(len(taken))
        took.release()
    next_batch = train_e2e.beside_feed(lambda: "model batch", pipeline_batch)
    assert [next_batch() for _ in range(5)] == ["model batch"] * 5
    for _ in range(5):
        assert took.acquire(timeout=10)
    time.sleep(0.05)  # two batches ahead at most: the step's and the next one's
    assert 5 <= len(taken) <= 7
    assert threading.get_ident() not in threads


def test_a_failing_pipeline_beside_the_model_stops_the_run():
    def pipeline_batch():
        raise OSError("a file went away")
    next_batch = train_e2e.beside_feed(lambda: "model batch", pipeline_batch)
    deadline = time.monotonic() + 10
    with pytest.raises(RuntimeError, match="pipeline beside the model failed") as info:
        while time.monotonic() < deadline:
            next_batch()
            time.sleep(0.01)
    assert isinstance(info.value.__cause__, OSError)


class _Node:
    """A graph value of the fake library below: its history of operators."""

    def __init__(self, history):
        self.history = history

    def gpu(self):
        return _Node(self.history + ["gpu"])


class _FakeLib:
    """Records the operators rn50_graph calls and the devices its decoders are asked for."""

    def __init__(self):
        self.decoder_devices = []
        lib = self

        class Fn:
            class readers:
                @staticmethod
                def file(**kwargs):
                    return _Node(["jpegs"]), _Node(["labels"])

            class decoders:
                @staticmethod
                def image_random_crop(data, device, **kwargs):
                    lib.decoder_devices.append(device)
                    return _Node(data.history + ["decode"])

            class random:
                @staticmethod
                def coin_flip():
                    return _Node(["coin"])

            @staticmethod
            def resize(data, **kwargs):
                return _Node(data.history + ["resize"])

            @staticmethod
            def crop_mirror_normalize(data, **kwargs):
                return _Node(data.history + ["cmn"])
        self.fn = Fn

        class types:
            RGB, FLOAT = "RGB", "FLOAT"
        self.types = types


@pytest.mark.parametrize("device, decoder_args, decoder_device, images, labels", [
    ("gpu", None, "mixed", ["jpegs", "decode", "resize", "cmn"], ["labels", "gpu"]),
    ("gpu", {"device": "cpu"}, "cpu", ["jpegs", "decode", "gpu", "resize", "cmn"], ["labels", "gpu"]),
    ("cpu", None, "cpu", ["jpegs", "decode", "resize", "cmn"], ["labels"]),
])
def test_the_bench_pipeline_decodes_on_the_host_and_augments_on_the_gpu_when_asked(
        device, decoder_args, decoder_device, images, labels):
    from _pipelines import rn50_graph
    lib = _FakeLib()
    got_images, got_labels = rn50_graph(lib, "train", "/photos", device, decoder_args=decoder_args)
    assert lib.decoder_devices == [decoder_device]
    assert got_images.history == images and got_labels.history == labels


RAW = """thread (881): penstock-reader_0;Thread.run (threading.py:1010);_run (penstock/_workers.py:107) 3
thread (882): penstock-reader_1;Thread.run (threading.py:1010) 2
thread (835): MainThread;<module> (train_e2e.py:397);worker (train_e2e.py:327) 40
thread (900);Thread.run (threading.py:1010) 1
not a sample line
"""


def test_gil_samples_are_counted_per_thread_group():
    import _gil_profile
    assert _gil_profile.holders(RAW) == {"penstock-reader": 5, "MainThread": 40, "(unnamed)": 1}


def _fake_py_spy(tmp_path, body: str) -> str:
    script = tmp_path / "py-spy"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def _profile_of(raw: str, seconds: float, tmp_path, monkeypatch):
    """A GilProfile over ``seconds`` whose py-spy writes the samples ``raw`` where it is told to (-o),
    as the real one does; started."""
    import _gil_profile
    (tmp_path / "raw").write_text(raw)
    monkeypatch.setattr(_gil_profile, "PY_SPY", _fake_py_spy(
        tmp_path, f'while [ "$1" != "-o" ]; do shift; done; cp {tmp_path / "raw"} "$2"\n'))
    profile = _gil_profile.GilProfile(seconds)
    profile.start()
    return profile


def test_a_gil_profile_gives_each_threads_share_of_the_window(tmp_path, monkeypatch):
    profile = _profile_of(RAW, 2.7, tmp_path, monkeypatch)  # whole seconds: 2
    assert profile.shares() == {"(unnamed)": 0.0005, "MainThread": 0.02, "penstock-reader": 0.0025}


def test_gil_samples_are_counted_per_function_once_per_sample():
    import _gil_profile
    raw = ("thread (1): penstock-stage2_0;run (threading.py:1010);run_ops (/x/site-packages/penstock/_executor.py:9);"
           "run_ops (/x/site-packages/penstock/_executor.py:40) 3\n"
           "thread (2): penstock-stage2_1;run (threading.py:1012);run (/x/penstock/operators/resize.py:5) 2\n")
    assert _gil_profile.held_by_function(raw) == {"penstock-stage2": {
        "run (threading.py)": 5, "run_ops (penstock/_executor.py)": 3, "run (penstock/operators/resize.py)": 2}}


def test_a_gil_profile_gives_each_functions_ms_a_batch(tmp_path, monkeypatch):
    profile = _profile_of(RAW, 2, tmp_path, monkeypatch)
    profile.shares()
    # 2 s at 1,000 samples a second, 10 batches a second: a sample is 0.05 ms of a batch; the reader
    # held the GIL in 5 of 2,000 samples, the unnamed thread in 1, under 0.1% of the window
    # (the main thread's two functions are on its every sample: its loop, not where its time goes)
    assert profile.per_batch(10.0) == {"MainThread": [["all", 2.0]]}
    assert profile.per_batch(10.0, least_share=0.001) == {
        "penstock-reader": [["all", 0.25], ["_run (penstock/_workers.py)", 0.15]], "MainThread": [["all", 2.0]]}


def test_gil_samples_are_counted_at_the_holders_innermost_line(tmp_path, monkeypatch):
    import _gil_profile
    raw = ("thread (1): penstock-stage2_0;run_ops (/x/site-packages/penstock/_executor.py:9);"
           "launch_kernels (/x/site-packages/penstock/_cuda/_stream_queue.py:79) 30\n"
           "thread (2): penstock-stage2_1;run_ops (/x/site-packages/penstock/_executor.py:9) 10\n"
           "thread (3): MainThread;<module> (train_e2e.py:397);worker (train_e2e.py:327) 40\n")
    assert _gil_profile.held_at_line(raw) == {
        "penstock-stage2": {"launch_kernels (penstock/_cuda/_stream_queue.py:79)": 30,
                            "run_ops (penstock/_executor.py:9)": 10},
        "MainThread": {"worker (train_e2e.py:327)": 40}}
    profile = _profile_of(raw, 2, tmp_path, monkeypatch)
    profile.shares()
    # a sample is 0.05 ms of a batch at 10 batches a second; a line on every sample stays (no loop left out)
    assert profile.lines_per_batch(10.0, lines=1) == {
        "penstock-stage2": [["all", 2.0], ["launch_kernels (penstock/_cuda/_stream_queue.py:79)", 1.5]],
        "MainThread": [["all", 2.0], ["worker (train_e2e.py:327)", 2.0]]}


def test_a_gil_profile_that_py_spy_could_not_take_says_why(tmp_path, monkeypatch):
    import _gil_profile
    monkeypatch.setattr(_gil_profile, "PY_SPY", _fake_py_spy(tmp_path, "echo 'Permission denied' >&2; exit 1\n"))
    profile = _gil_profile.GilProfile(1)
    profile.start()
    with pytest.raises(RuntimeError, match="exit status 1.*Permission denied"):
        profile.shares()


def test_the_threads_stats_count_native_threads_by_their_names():
    import io

    import numpy as np
    from PIL import Image
    from _common import thread_stats
    from penstock import _engine
    y, x = np.mgrid[0:240, 0:320]
    encoded = io.BytesIO()
    Image.fromarray((128 + 100 * np.sin(x / 17.0 + y / 23.0)).astype(np.uint8)).save(encoded, "JPEG")
    data = np.frombuffer(encoded.getvalue(), np.uint8)
    background, pool = _engine.Background("penstock-bench"), _engine.ThreadPool(1)
    deadline = time.monotonic() + 10
    while thread_stats().get("penstock-bench", (0.0, 0))[0] < 0.05 and time.monotonic() < deadline:
        pendings = [_engine.decode_images_later(background, pool, data, np.array([[len(data)]]), np.array([0]), 0,
                                                True, None, False, True, None, False) for _ in range(50)]
        pendings[-1].result()
    groups = thread_stats()
    assert groups["penstock-bench"][0] >= 0.05, groups
    assert groups["penstock-bench"][1] >= 1, groups  # it waited for work between the calls
    assert "MainThread" in groups
    with open("/proc/self/comm") as f:  # the pool's unnamed thread, under the process's name
        assert f.read().strip() in groups, groups
    background.close()


# py-spy --native --idle samples (the frames as py-spy wrote them on CPython 3.11 and 3.12): a thread
# waiting to take the GIL back sits in pthread_cond_timedwait under a Python frame or CPython's own
NATIVE = """thread (7): MainThread;<module> (train.py:9);forward (model.py:30);pthread_cond_timedwait (libc.so.6);0x7f20d44a3f16 (libc.so.6) 30
thread (7): MainThread;<module> (train.py:9);forward (model.py:31) 60
thread (7): MainThread;<module> (train.py:9);backward (model.py:40);run_backward (libtorch_python.so);pthread_cond_timedwait (libc.so.6) 10
thread (8): penstock-stage2;_stage_worker (/x/penstock/_executor.py:393);_queue_SimpleQueue_get (_queuemodule.c.h:177);_queue_SimpleQueue_get_impl (_queuemodule.c:256);pthread_cond_timedwait (libc.so.6);0x7f20d44a3f16 (libc.so.6) 20
thread (8): penstock-stage2;_stage_worker (/x/penstock/_executor.py:393);_queue_SimpleQueue_get_impl (_queuemodule.c:253);PyThread_acquire_lock_timed (libpython3.11.so.1.0);0x7f20d44ae116 (libc.so.6);0x7f20d44a3f16 (libc.so.6) 70
thread (8): penstock-stage2;run (/x/penstock/operators/resize.py:5);PyEval_RestoreThread (libpython3.12.so.1.0);pthread_cond_timedwait (libc.so.6) 10
thread (9): penstock-mixed-decode_0;part (/x/penstock/operators/_image_decode_mixed.py:295);time_sleep (python3.12);pthread_cond_timedwait (libc.so.6) 25
thread (10): penstock-mixed-decode_1;_run (/x/penstock/_workers.py:92);pthread_cond_timedwait (libc.so.6) 5
thread (10): penstock-mixed-decode_1;_run (/x/penstock/_workers.py:92) 70
thread (11): penstock-stage0;step (/x/loop.py:12);PyCFuncPtr_call (_ctypes.c:4201);_call_function_pointer (callproc.c:945);Py_XDECREF (object.h:601);pthread_mutex_lock (libc.so.6);0x7f15d2ca412b (libc.so.6) 4
thread (11): penstock-stage0;step (/x/loop.py:12);run (libnvimgcodec.so.0);pthread_mutex_lock (libc.so.6) 6
"""


def test_a_native_sample_waits_for_the_gil_under_python_not_under_a_lock_or_a_library():
    import _gil_profile
    sites = [_gil_profile.gil_wait_site(frames) for _, frames, _, _ in _gil_profile._samples(NATIVE)]
    assert sites == ["forward (model.py)", None, None,  # torch's own wait: not the GIL's
                     "_stage_worker (penstock/_executor.py)", None,  # a queue's lock: not the GIL's
                     "run (penstock/operators/resize.py)", "part (penstock/operators/_image_decode_mixed.py)",
                     "_run (penstock/_workers.py)", None,
                     "step (loop.py)", None]  # the GIL's mutex after ctypes' call returned; a library's own


def test_gil_waits_are_each_threads_share_of_a_step_and_where():
    import _gil_profile
    # MainThread: 30 of 100 samples waiting, 10 ms a step: 3 ms; the two decode threads share a name,
    # each sampled 50 times (the window): 30 samples of waits are 6 ms of a step between them
    assert _gil_profile.gil_waits(NATIVE, 10.0) == {
        "MainThread": {"share": 0.3, "ms_per_step": 3.0, "where": [["forward (model.py)", 3.0]]},
        "penstock-mixed-decode": {"share": 0.3, "ms_per_step": 6.0, "where": [
            ["part (penstock/operators/_image_decode_mixed.py)", 5.0], ["_run (penstock/_workers.py)", 1.0]]},
        "penstock-stage0": {"share": 0.4, "ms_per_step": 4.0, "where": [["step (loop.py)", 4.0]]},
        "penstock-stage2": {"share": 0.3, "ms_per_step": 3.0, "where": [
            ["_stage_worker (penstock/_executor.py)", 2.0], ["run (penstock/operators/resize.py)", 1.0]]}}


def test_spent_in_is_where_each_thread_was_outside_the_c_library():
    import _gil_profile
    # a decoder's host work in a library's unnamed code shows as that library, under its named caller;
    # time in the CUDA driver under the driver's call
    raw = NATIVE + "thread (12): penstock-mixed-decode_0;decode (/x/penstock/_cuda/_nvimgcodec.py:233);" \
                   "0x7f00aa10 (/usr/lib/libnvjpeg.so.13);0x7f20d44a3f16 (libc.so.6) 50\n" \
                   "thread (12): penstock-mixed-decode_0;0x7f00bb20 (/usr/lib/libnvjpeg.so.13);" \
                   "cuStreamSynchronize (libcuda.so.1);0x7f00cc30 (/usr/lib/libcuda.so.1) 30\n"
    assert _gil_profile.spent_in(raw, 10.0) == {
        "MainThread": [["forward (model.py)", 9.0], ["run_backward (libtorch_python.so)", 1.0]],
        # three threads of one name, 180 samples: 60 a thread
        "penstock-mixed-decode": [["_run (penstock/_workers.py)", 12.5],
                                  ["(libnvjpeg.so.13) under decode (penstock/_cuda/_nvimgcodec.py)", 8.333],
                                  ["(libcuda.so.1) under cuStreamSynchronize (libcuda.so.1)", 5.0],
                                  ["time_sleep (python3.12)", 4.167]],
        "penstock-stage0": [["run (libnvimgcodec.so.0)", 6.0], ["Py_XDECREF (object.h)", 4.0]],
        "penstock-stage2": [["PyThread_acquire_lock_timed (libpython3.11.so.1.0)", 7.0],
                            ["_queue_SimpleQueue_get_impl (_queuemodule.c)", 2.0],
                            ["PyEval_RestoreThread (libpython3.12.so.1.0)", 1.0]]}


def test_the_steps_go_on_while_py_spy_samples_their_waits(tmp_path, monkeypatch):
    import _gil_profile
    (tmp_path / "raw").write_text(NATIVE)
    # a py-spy that samples for a while, then writes the samples above where it is told to (-o)
    monkeypatch.setattr(_gil_profile, "PY_SPY", _fake_py_spy(
        tmp_path, f'sleep 0.3; while [ "$1" != "-o" ]; do shift; done; cp {tmp_path / "raw"} "$2"\n'))
    steps = []
    table = _gil_profile.waits_while(lambda: (steps.append(1), time.sleep(0.01)), 1)
    assert len(steps) >= 10  # the steps went on while it sampled
    assert table["MainThread"]["share"] == 0.3 and table["MainThread"]["ms_per_step"] > 3.0  # 30% of >10 ms
    assert [site for site, _ in table["MainThread"]["spent_in"]] == ["forward (model.py)",
                                                                     "run_backward (libtorch_python.so)"]
    monkeypatch.setattr(_gil_profile, "PY_SPY", _fake_py_spy(tmp_path, "echo 'Operation not permitted' >&2; exit 1\n"))
    assert "Operation not permitted" in _gil_profile.waits_while(lambda: None, 1)["error"]


def test_blocked_in_names_the_c_library_wait_and_its_caller():
    import _gil_profile
    raw = ("thread (5): pt_autograd_0;cudaLaunchKernel (libcudart.so.13);0x7f00aa10 (/usr/lib/libcuda.so.1);"
           "pthread_rwlock_wrlock (libc.so.6);"
           "0x7f20d44a3f16 (libc.so.6) 30\n"
           "thread (5): pt_autograd_0;cudaLaunchKernel (libcudart.so.13);0x7f00aa10 (/usr/lib/libcuda.so.1) 50\n"
           "thread (5): pt_autograd_0;run_backward (libtorch_python.so);0x7f20d44a3f16 (libc.so.6) 20\n")
    # 100 samples, 10 ms a step: the driver's lock 3 ms; a wait py-spy gave no name for, as the C library's
    assert _gil_profile.blocked_in(raw, 10.0) == {"pt_autograd": [
        ["pthread_rwlock_wrlock in (libcuda.so.1) under cudaLaunchKernel (libcudart.so.13)", 3.0],
        ["(libc) in run_backward (libtorch_python.so)", 2.0]]}
    assert "MainThread" not in _gil_profile.blocked_in("thread (7): MainThread;forward (model.py:31) 60\n", 10.0)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reaped, or it lingers as a zombie
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_the_copying_processes_copy_beside_the_model_and_end_with_it():
    procs = train_e2e.copying_processes(2)
    time.sleep(0.5)
    assert [p.poll() for p in procs] == [None, None]  # copying
    for p in procs:
        p.kill()
        p.wait(timeout=10)
    # a worker killed outright (no atexit) leaves no process copying behind it
    child = subprocess.run([sys.executable, "-c", "import os, sys, time\n"
                            f"sys.path.insert(0, {os.path.dirname(train_e2e.__file__)!r})\n"
                            "import train_e2e\n"
                            "p = train_e2e.copying_processes(1)[0]\n"
                            "time.sleep(0.3)\n"
                            "print(p.pid, flush=True)\n"
                            "os._exit(0)"], capture_output=True, text=True, timeout=60)
    assert _gone_within(int(child.stdout.split()[0]), 10)
