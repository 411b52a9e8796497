"""bench/train_emulated.py: a training loop's step beside the GPU train pipeline on the host emulation
(a stand-in for the hardware decoder), and the loop-shaped Python the benches share."""
import json
import os
import subprocess
import sys
import time

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)


def test_a_spin_count_takes_about_the_time_asked():
    from _common import spin, spin_count
    count = spin_count(0.004)
    start = time.perf_counter()
    spin(count)
    assert 0.0005 < time.perf_counter() - start < 0.5  # 4 ms asked: its order of magnitude on a loaded CI core


def test_the_bench_runs_each_loop_and_hand_off_beside_the_loop_alone():
    for extra in (["--loop", "torch", "--ops", "50", "--backward-ms", "2", "--variant", "off",
                   "PENSTOCK_CONSUMER_FIRST_US=0"],
                  ["--loop", "torch", "--ops", "30", "--op-native-us", "20", "--backward", "spin", "--backward-ms", "2"],
                  ["--loop", "python", "--python-ms", "3", "--backward-ms", "0", "--take", "run",
                   "--hw-decoder-load", "-1"]):
        out = subprocess.run([sys.executable, os.path.join(BENCH, "train_emulated.py"), "--rounds", "1", "--steps",
                              "16", "--decoder-ms", "2", *extra], capture_output=True, text=True, timeout=300,
                             check=True).stdout
        lines = {line["feed"]: line for line in map(json.loads, out.splitlines())}
        assert set(lines) == {"synthetic", "penstock"} | ({"penstock:off"} if "--variant" in extra else set())
        assert lines["synthetic"]["fraction_of_ceiling"] == 1.0 and "decoder_idle_ms" not in lines["synthetic"]
        for feed, line in lines.items():
            assert line["backward"] == ("spin" if "spin" in extra else "sleep")
            assert line["step_ms"] > 0 and line["forward_wall_ms"] > 0 and line["forward_cpu_ms"] > 0
            assert line["fraction_of_ceiling"] > 0
            if feed != "synthetic":  # the stand-in decoder decoded the batches, and says how long it waited
                assert line["decoder_idle_ms"] >= 0
                # the pipeline's threads by name, each having waited for its work
                assert line["thread_waits_per_batch:penstock-stage0"] > 0, line
                turn = line["consumer_turn"]
                assert set(turn) == {"waits_per_batch", "waited_ms_per_batch", "to_the_bound", "turned_off"}
                if feed == "penstock:off" or "--take" in extra:  # turned off, or run(): its caller gets no turn
                    assert turn["waits_per_batch"] == 0


def test_an_autograd_like_backward_takes_the_gil_back_on_a_thread_of_its_own():
    out = subprocess.run([sys.executable, os.path.join(BENCH, "train_emulated.py"), "--rounds", "1", "--steps", "6",
                          "--decoder-ms", "2", "--ops", "20", "--backward", "autograd", "--backward-ms", "3",
                          "--autograd-takes", "12"], capture_output=True, text=True, timeout=300, check=True).stdout
    for line in map(json.loads, out.splitlines()):
        assert line["backward"] == "autograd" and line["autograd_takes"] == 12
        # each take sleeps without the GIL before its Python: at least one wait a take, every step
        assert line["thread_waits_per_batch:autograd"] >= 12, line
        assert line["step_ms"] >= 3  # the loop waited for the whole backward pass


def test_the_turns_counts_per_batch_and_none_for_other_systems():
    from _common import turn_counts, turn_per_batch
    assert turn_counts("dali") == {} and turn_counts("synthetic") == {}
    assert set(turn_counts("penstock:off")) == {"waits", "waited_us", "to_the_bound", "turned_off"}
    before = {"waits": 10, "waited_us": 5_000, "to_the_bound": 1, "turned_off": 0}
    after = {"waits": 30, "waited_us": 25_000, "to_the_bound": 6, "turned_off": 1}
    assert turn_per_batch(before, after, 4) == {"waits_per_batch": 5.0, "waited_ms_per_batch": 5.0,
                                                "to_the_bound": 0.25, "turned_off": 1}


def test_a_virtual_gpu_holds_a_launch_that_runs_too_far_ahead_of_it():
    import ctypes
    from train_emulated import VirtualGpu
    gpu = VirtualGpu(5.0, ctypes.CDLL(None))
    start = time.perf_counter()
    gpu.launch(1.0)  # 1 ms queued: the launch returns at once
    queued = time.perf_counter() - start
    gpu.launch(30.0)  # 31 ms queued: it returns once no more than 5 are left
    held = time.perf_counter() - start
    assert held >= 0.024 and held > queued, (queued, held)


def test_a_loop_with_a_gpu_runs_at_the_gpus_pace_where_its_kernels_take_longer():
    out = subprocess.run([sys.executable, os.path.join(BENCH, "train_emulated.py"), "--rounds", "1", "--steps", "6",
                          "--decoder-ms", "2", "--ops", "20", "--backward-ms", "2", "--gpu-ms", "30"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    lines = {line["feed"]: line for line in map(json.loads, out.splitlines())}
    assert set(lines) == {"synthetic", "penstock"}
    for line in lines.values():
        assert line["gpu_ms"] == 30.0 and line["gpu_ahead_ms"] == 8.0
        # 6 steps of 30 ms of kernels, the loop at most 8 ms ahead when the clock stops
        assert line["step_ms"] >= (6 * 30 - 8) / 6, line
        assert 0 < line["gpu_busy_share"] <= 1.0
    assert lines["synthetic"]["gpu_busy_share"] >= 0.8
