"""A training loop's step beside penstock's GPU train pipeline, on a machine without a GPU.

The pipeline's host side runs for real (its stages' threads, the mixed decoder's jobs, the hand-off to
the loop) over the tests' host emulation of the device (tests/_cuda_on_host.py: device memory is host
memory, the kernels do nothing) and a stand-in for nvImageCodec's hardware decoder: a sleep without
the GIL, --decoder-ms for 256 JPEGs, one batch at a time as the engines take them; it gets every
JPEG unless --hw-decoder-load says otherwise. The JPEGs are small (the stand-in never decodes them;
the host reads them, checks them through and decodes its share). The loop's
step stands in for a model's:

  torch   a forward pass of --ops operators, each about 15 us of Python around a native call that
          releases the GIL (as torch's operators are called; --op-native-us long, else at once),
          then --backward-ms waiting without the GIL (the backward pass, in the autograd engine's
          threads)
  python  --python-ms of Python that never releases the GIL, then --backward-ms waiting

--backward spin keeps a CPU busy through the backward pass's ms, still without the GIL, as a loop
that waits for the GPU each step (``loss.item()``) does in CUDA's spin-wait.
--backward autograd waits asleep while a thread of its own, as torch's autograd engine's, takes the
GIL back --autograd-takes times over the backward pass's ms (torch's does, to free the Python
objects of the tensors the forward pass saved).
--gpu-ms G gives the loop a GPU: the step's kernels, G ms of them (a third launched by the forward
pass's operators, two thirds over the backward pass), run one after the other on a virtual GPU, and a
launch that finds more than --gpu-ahead-ms queued waits without the GIL until that much is left, as
CUDA's launch queue holds a thread that runs ahead of its GPU. A model whose kernels take longer than
its host side (ResNet-18 at 176 px on an H100: ~14 ms of GPU a step, ~12 of CPU) leaves its threads
such waits, in which a loader's Python costs it nothing; without --gpu-ms every ms of the step is the
host's.

Feeds: synthetic (the loop alone: its ceiling) and penstock, its batches taken as the framework
iterators take them (share_outputs, release_outputs, schedule_run: the next batch is on the way as
one is handed out) or, with --take run, by pipe.run(); a --variant NAME ENV=VALUE... is penstock with
those settings. Each feed runs in its own process, alternating over rounds. --pin gives the loop's
thread a core of its own and the pipeline's threads the others, as a GPU host with cores to spare
does (on 2 cores the pipeline's threads otherwise pre-empt the loop's). One JSON line per feed: ms a
step, the fraction of the loop alone's rate, and per step the wait for the batch and the forward
pass's wall and CPU ms, each thread's CPU ms and waits (off the CPU: for the GIL among others); for
penstock the decoder's idle ms a batch and what the pipeline's threads
waited for the loop's Python a batch (consumer_turn); with --gil-waits, each thread's ms a step
waiting to take the GIL back, and where (the loop's thread is MainThread); with --gpu-ms, the share
of the timed steps the virtual GPU was busy (gpu_busy_share).

    python bench/train_emulated.py --pin                            # torch-like loop, iterator hand-off
    python bench/train_emulated.py --pin --loop python --python-ms 13 --backward-ms 0
    python bench/train_emulated.py --pin --variant off PENSTOCK_CONSUMER_FIRST_US=0
    python bench/train_emulated.py --pin --backward autograd --gpu-ms 16  # a model whose GPU is the slower side
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _gil_profile  # noqa: E402
from _common import (add_variant_option, alternating_rounds, bench_parser, emit, parsed, parsed_variants,  # noqa: E402
                     run_worker, spin, spin_count, summary, thread_stats, thread_stats_per_batch, turn_counts,
                     turn_per_batch, variant_of)

BATCH = 256
OP_US = 15  # an operator's Python in the torch-like forward pass


class StandInDecoder:
    """nvImageCodec's decoder as the mixed decoder uses it: ``seconds`` for 256 JPEGs without the GIL,
    one batch at a time (the hardware engines'); every JPEG decodes. ``log`` keeps (asked, began, ended)."""
    turn = threading.Lock()
    log: list = []
    seconds = 0.01
    usable = True

    def __init__(self, *args, **kwargs) -> None:
        from penstock._cuda._nvimgcodec import IdleClock
        self.idle = IdleClock()

    def decode(self, encoded, starts, lengths, shapes, windows, reverse, out, out_offsets, ready, orient):
        import numpy as np
        asked = time.perf_counter()
        with self.turn:
            began = time.perf_counter()
            time.sleep(self.seconds * len(starts) / BATCH)
            ended = time.perf_counter()
            StandInDecoder.log.append((asked, began, ended))
            self.idle.turn(ended, ended - began, asked)
        return np.ones(len(starts), bool), self.seconds * len(starts) / BATCH

    def close(self) -> None:
        pass


def small_jpegs(root: str, count: int = 32) -> str:
    """``count`` small JPEGs (gradients) in two class folders."""
    import numpy as np
    from PIL import Image
    for k in range(count):
        folder = os.path.join(root, str(k % 2))
        os.makedirs(folder, exist_ok=True)
        h, w = 20 + k, 28 + 2 * k
        y, x, c = np.mgrid[0:h, 0:w, 0:3]
        Image.fromarray(((x * 7 + y * 5 + c * 40 + k) % 256).astype(np.uint8)).save(
            os.path.join(folder, f"{k}.jpg"), quality=90)
    return root


def emulated_pipeline(root: str, threads: int, hw_decoder_load: float | None):
    """The ResNet-50 train pipeline's shape on the emulated device, built (``hw_decoder_load`` None:
    the mixed decoder's own split between the stand-in and the host)."""
    import pytest
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from _cuda_on_host import HostDevice, use_host_device

    from penstock import fn, pipeline_def, types
    from penstock._cuda import _nvimgcodec
    from penstock.operators import _image_decode_mixed

    patch = pytest.MonkeyPatch()
    HostDevice._launcher = lambda self, module, name: (lambda grid, block, args, stream=None: None)
    use_host_device(patch, HostDevice({}))
    patch.setattr(_image_decode_mixed, "_has_nvimgcodec", lambda: True)
    patch.setattr(_nvimgcodec, "DeviceDecoder", StandInDecoder)

    @pipeline_def(batch_size=BATCH, num_threads=threads, device_id=0, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        load = {} if hw_decoder_load is None else {"hw_decoder_load": hw_decoder_load}
        images = fn.decoders.image_random_crop(jpegs, device="mixed", **load)
        images = fn.resize(images, resize_x=160, resize_y=160)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mirror=fn.random.coin_flip())
        return images, labels.gpu()
    p = pipe()
    p.build()
    return p


class VirtualGpu:
    """The loop's GPU (--gpu-ms): kernels run in the order launched, each ``ms`` long; a launch waits
    without the GIL while more than ``ahead_ms`` of kernels are queued before it, else it returns at
    once, having given the GIL away for the call as torch's bindings do."""

    def __init__(self, ahead_ms: float, libc) -> None:
        self.ahead = ahead_ms / 1e3
        self.libc = libc
        self.free_at = 0.0  # when the kernels queued so far will have run (perf_counter's clock)

    def launch(self, ms: float) -> None:
        now = time.perf_counter()
        self.free_at = max(self.free_at, now) + ms / 1e3
        wait = self.free_at - now - self.ahead
        if wait > 0:
            self.libc.usleep(int(wait * 1e6))
        else:
            self.libc.labs(1)


def loop_step(args):
    """The loop's forward pass and its backward pass's wait (module docstring)."""
    libc = ctypes.CDLL(None)
    count = args.op_count  # measured once by the parent: every feed's loop does the same work
    gpu = VirtualGpu(args.gpu_ahead_ms, libc) if args.gpu_ms else None
    queue = gpu.launch if gpu else (lambda ms: None)  # kernels queued where the loop makes a native call anyway
    # the forward pass's third of the step's kernels, an operator's at a time (the python loop's at its end)
    op_ms = args.gpu_ms / 3 / (args.ops if args.loop == "torch" else 1)

    if args.loop == "torch" and args.op_native_us:
        native = bytes(max(args.native_bytes, 4096))  # hashlib keeps the GIL below 2 KB

        def forward() -> None:
            for _ in range(args.ops):
                spin(count)
                hashlib.sha256(native)  # the operator's native part, on a CPU without the GIL
                queue(op_ms)
    elif args.loop == "torch":
        def forward() -> None:
            for _ in range(args.ops):
                spin(count)
                if gpu:  # ctypes releases the GIL around the call, as torch's bindings do
                    gpu.launch(op_ms)
                else:
                    libc.labs(1)
    else:
        def forward() -> None:
            end = time.perf_counter() + args.python_ms / 1e3
            while time.perf_counter() < end:
                spin(count)
            queue(op_ms)

    backward_ms = 2 * args.gpu_ms / 3  # the backward pass's kernels
    if args.backward == "autograd":
        return forward, _autograd_backward(args, count, libc, queue, backward_ms)
    if args.backward == "spin":
        block = bytes(args.hash_bytes)

        def backward() -> None:
            if args.backward_ms:
                hashlib.sha256(block)  # one call without the GIL, a CPU busy throughout
            queue(backward_ms)
    else:
        def backward() -> None:
            if args.backward_ms:
                libc.usleep(int(args.backward_ms * 1000))  # without the GIL
            queue(backward_ms)
    return forward, backward


AUTOGRAD_THREAD = "autograd"


def _autograd_backward(args, count: int, libc, queue=lambda ms: None, gpu_ms: float = 0.0):
    """The backward pass as torch runs it: the loop's thread waits without the GIL while a thread of
    the autograd engine's queues the kernels, taking the GIL back --autograd-takes times over
    --backward-ms for a few microseconds of Python each (torch frees the Python objects of tensors
    the forward pass saved; on an H200 beside the pipeline, ResNet-18's autograd thread waited ~4 ms
    a step in pybind11's gil_scoped_acquire). Each take first ``queue``s its share of the backward
    pass's ``gpu_ms`` of kernels (--gpu-ms)."""
    takes = max(1, args.autograd_takes)
    gap_us = int(args.backward_ms * 1000 / takes)
    todo, done = threading.Semaphore(0), threading.Semaphore(0)

    def engine() -> None:
        while True:
            todo.acquire()
            for _ in range(takes):
                libc.usleep(gap_us)  # queuing kernels, without the GIL
                queue(gpu_ms / takes)
                spin(max(1, count // 3))  # a few microseconds with the GIL
            done.release()
    threading.Thread(target=engine, name=AUTOGRAD_THREAD, daemon=True).start()

    def backward() -> None:
        todo.release()
        done.acquire()  # without the GIL
    return backward


def hash_bytes(seconds: float) -> int:
    """The bytes hashlib's sha256 takes ``seconds`` over here (the median of 5 timings of 4 MiB)."""
    block, times = bytes(1 << 22), []
    for _ in range(5):
        start = time.perf_counter()
        hashlib.sha256(block)
        times.append(time.perf_counter() - start)
    return max(1, round(len(block) * seconds / sorted(times)[2]))


def pin_loop_thread() -> None:
    """The calling thread on core 0, every other thread of the process on the others."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("--pin needs two cores at least")
    mine = {threading.get_native_id()} | {t.native_id for t in threading.enumerate() if t.name == AUTOGRAD_THREAD}
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), {cores[0]} if int(task) in mine else set(cores[1:]))


def worker(feed: str, root: str, args) -> dict:
    forward, backward = loop_step(args)
    pipe = None
    if feed == "synthetic":
        def next_batch() -> None:
            pass
    else:
        StandInDecoder.seconds = args.decoder_ms / 1e3
        pipe = emulated_pipeline(root, args.threads, None if args.hw_decoder_load < 0 else args.hw_decoder_load)
        if args.take == "run":
            next_batch = pipe.run
        else:
            pipe.schedule_run()

            def next_batch() -> None:
                pipe.share_outputs()
                pipe.release_outputs()
                pipe.schedule_run()
    waited = forward_wall = forward_cpu = 0.0

    def step() -> None:
        nonlocal waited, forward_wall, forward_cpu
        start = time.perf_counter()
        next_batch()
        begun, cpu = time.perf_counter(), time.thread_time()
        forward()
        forward_wall += time.perf_counter() - begun
        forward_cpu += time.thread_time() - cpu
        waited += begun - start
        backward()
    for _ in range(12):  # warm-up: the pipeline's queues filled, the consumer's period known
        step()
    if args.pin:
        pin_loop_thread()
    waited = forward_wall = forward_cpu = 0.0
    StandInDecoder.log.clear()
    turn = turn_counts(feed)
    before = thread_stats()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    gpu_busy = {"gpu_busy_share": round(min(1.0, args.gpu_ms * args.steps / (1e3 * seconds)), 3)} if args.gpu_ms else {}
    out = {"step_ms": round(1e3 * seconds / args.steps, 3), "next_batch_ms": round(1e3 * waited / args.steps, 3),
           **gpu_busy,
           "forward_wall_ms": round(1e3 * forward_wall / args.steps, 3),
           "forward_cpu_ms": round(1e3 * forward_cpu / args.steps, 3), **thread_stats_per_batch(before, args.steps)}
    if turn:
        out["consumer_turn"] = turn_per_batch(turn, turn_counts(feed), args.steps)
    if args.gil_waits:  # after the timed steps: py-spy pauses the process at each sample
        out["gil_waits"] = _gil_profile.waits_while(step, args.gil_waits)
    log = StandInDecoder.log[2:]
    if len(log) > 2:  # the decoder waits for its next batch from the last one's end to that one's arrival
        out["decoder_idle_ms"] = round(1e3 * statistics.mean(
            max(0.0, asked - ended) for (asked, _, _), (_, _, ended) in zip(log[1:], log[:-1])), 3)
    return out


def main() -> None:
    ap = bench_parser(__doc__, rounds=3, worker=("FEED", "ROOT"))
    ap.add_argument("--loop", choices=("torch", "python"), default="torch")
    ap.add_argument("--ops", type=int, default=300, help="torch: the forward pass's operators")
    ap.add_argument("--op-native-us", type=float, default=0.0,
                    help="torch: each operator's native part, on a CPU without the GIL (0: a call that returns at once)")
    ap.add_argument("--python-ms", type=float, default=5.0, help="python: the forward pass's ms of Python")
    ap.add_argument("--backward-ms", type=float, default=7.0, help="the backward pass's wait without the GIL")
    ap.add_argument("--backward", choices=("sleep", "spin", "autograd"), default="sleep",
                    help="how the loop's thread waits through the backward pass: asleep, busy on a CPU, or asleep "
                         "while an autograd-like thread takes the GIL back now and then")
    ap.add_argument("--autograd-takes", type=int, default=40,
                    help="autograd: the times the autograd-like thread takes the GIL in a backward pass")
    ap.add_argument("--gpu-ms", type=float, default=0.0,
                    help="the step's kernels on a virtual GPU, ms (0: no GPU, the step is the host's alone)")
    ap.add_argument("--gpu-ahead-ms", type=float, default=8.0,
                    help="--gpu-ms: how far the loop's launches may run ahead of the virtual GPU, ms")
    ap.add_argument("--take", choices=("iterator", "run"), default="iterator")
    ap.add_argument("--decoder-ms", type=float, default=10.0, help="the stand-in decoder's ms for 256 JPEGs")
    ap.add_argument("--threads", type=int, default=2, help="the pipeline's num_threads")
    ap.add_argument("--hw-decoder-load", type=float, default=1.0,
                    help="the JPEGs' share for the stand-in decoder (-1: the mixed decoder's own split, the "
                         "host decoding the rest; the host's rate here is a 2-core machine's)")
    ap.add_argument("--steps", type=int, default=150, help="timed steps per process")
    ap.add_argument("--pin", action="store_true", help="the loop's thread on a core of its own")
    ap.add_argument("--gil-waits", type=float, default=0, metavar="SECONDS",
                    help="after the timed steps, SECONDS more while py-spy samples every thread: per thread, its ms "
                         "a step waiting to take the GIL back and where (gil_waits; needs py-spy)")
    ap.add_argument("--op-count", type=int, default=None, help=argparse.SUPPRESS)  # an operator's Python, measured
    ap.add_argument("--hash-bytes", type=int, default=None, help=argparse.SUPPRESS)  # a spinning backward's, measured
    ap.add_argument("--native-bytes", type=int, default=None, help=argparse.SUPPRESS)  # an operator's native part's
    add_variant_option(ap, "feed")
    args = parsed(ap, worker)
    if args is None:
        return
    variants = parsed_variants(args)
    feeds = ["synthetic", "penstock"] + [f"penstock:{name}" for name in variants]
    passed = ["--op-count", str(spin_count(OP_US / 1e6)), "--hash-bytes", str(hash_bytes(args.backward_ms / 1e3)),
              "--native-bytes", str(hash_bytes(args.op_native_us / 1e6)), "--op-native-us", str(args.op_native_us),
              "--backward", args.backward, "--autograd-takes", str(args.autograd_takes),
              "--hw-decoder-load", str(args.hw_decoder_load),
              "--loop", args.loop, "--ops", str(args.ops), "--python-ms", str(args.python_ms), "--backward-ms",
              str(args.backward_ms), "--take", args.take, "--decoder-ms", str(args.decoder_ms), "--threads",
              str(args.threads), "--steps", str(args.steps), "--gil-waits", str(args.gil_waits),
              "--gpu-ms", str(args.gpu_ms), "--gpu-ahead-ms", str(args.gpu_ahead_ms),
              *(["--pin"] if args.pin else [])]
    with tempfile.TemporaryDirectory(prefix="train-emulated-") as root:
        small_jpegs(root)

        def run(feed: str) -> dict:
            env, decoder_args = variant_of(variants, feed)
            if decoder_args:
                raise SystemExit("train_emulated: a variant's settings are environment variables only")
            return run_worker(__file__, ["--worker", feed, root, *passed], env or None)
        runs = alternating_rounds(args.rounds, feeds, run)
    ceiling = summary(runs["synthetic"])["step_ms"]
    for feed in feeds:
        line = summary(runs[feed])
        emit({"bench": "train_emulated", "feed": feed, "loop": args.loop, "op_native_us": args.op_native_us,
              "backward": args.backward,
              **({"autograd_takes": args.autograd_takes} if args.backward == "autograd" else {}),
              "take": args.take, "pinned": args.pin,
              **({"gpu_ms": args.gpu_ms, "gpu_ahead_ms": args.gpu_ahead_ms} if args.gpu_ms else {}),
              **line, "fraction_of_ceiling": round(ceiling / line["step_ms"], 3)})


if __name__ == "__main__":
    main()
