"""End-to-end training throughput: a real training step fed by each loader, against the model's
speed on synthetic data (its ceiling). This is the number users feel.

Models (torchvision, bf16 autocast, channels_last, SGD with momentum, batch 256):
  resnet50 at 224 px, resnet18 at 176 px (small and fast: the loader has to keep up)
  python-loop at 176 px: no model, a training step's host side as ResNet-18's on an H200 has it
              (--loop-ms: Python that takes 5.5 ms alone, its forward pass and optimizer step, then 7.5 ms waiting
              with the GIL released, its backward pass); the loaders' cost to the training thread
              without the model's GPU time, whose spread between rounds hides differences of 10%
Feeds:
  synthetic   one fixed batch already on the GPU: the ceiling
  penstock    the ResNet-50 train pipeline of _pipelines.py on the GPU (mixed decoders, output
              HWC float, handed over as NCHW channels_last without a copy) through
              penstock.plugin.pytorch.DALIClassificationIterator
  dali        the same pipeline and iterator in NVIDIA DALI 2.4 (when it imports)
  penstock-beside
              the model on the synthetic batch while penstock's pipeline makes and hands over one
              batch a step in a thread of its own (not by default): what the pipeline's presence
              costs the model, apart from the batch's hand-off and any wait for it
  synthetic-copies
              the model on the synthetic batch while --copy-processes processes beside it copy 32 MB
              arrays without pause (not by default): what other cores' memory traffic costs the
              model's own host side on this machine, no loader involved (on an H100's host, six
              such processes cost ResNet-18 16% of its rate, its forward pass 40% more CPU time);
              a reference for reading how much of a loader's cost is its threads' mere presence
  dataloader  torch.utils.data.DataLoader over torchvision's ImageFolder with RandomResizedCrop,
              RandomHorizontalFlip, ToTensor, Normalize; N workers, pin_memory, copied to the GPU
The data: a generated photo set (bench/photos.py, default imagenet-like). Every (model, feed) runs
in its own process, alternating over rounds: the model is warmed up on synthetic data (cuDNN's
autotuning) before the loader starts, then trained for a warm-up and --seconds timed. One JSON
line per (model, feed) with the median training img/s, its fraction of the ceiling, and the host
cores the process (with its loader's threads and worker processes) kept busy and left free, and
the loader's share (busy beyond the ceiling run's), the process's peak GPU memory (sampled by the
launcher every 10 ms) and the loader's (beyond the ceiling run's), per batch the CPU time of
the process's threads by name (Python's, the engine's, torch's autograd thread) and how often each
went off the CPU to wait, and the training thread's wall and CPU time per step in each phase (next_batch,
forward, backward, optimizer, and loss_item with --loss-item: wall beyond CPU is waiting, for the GIL
among others); for penstock,
what its pipeline's threads waited for the training loop's Python a batch (consumer_turn) and, a
batch decoded, the JPEGs its mixed decoder's host and GPU sides took, each side's ms, the GPU
decoder's ms idle between its calls (the engines without work: where the step waits for its batch,
what the pipeline left them), of them the ms before the next batch had come to the decoder at all
(gpu_unfed_ms; the rest is its preparation: code streams staged, parsed, its wait for the turn), and
the share of batches split the lifted way, whole images on the host too (decoder_split: beside a
model the split follows the GPU side's slowed rate); with
--gil-profile, each thread's share of the wall time it held the GIL (gil_share:NAME) and, per thread
holding it 1% of the time or more, the functions it held it in, ms a batch (gil_ms_per_batch), and the
lines it held it at, its innermost frame's (gil_lines_ms_per_batch: a native call that holds the GIL
shows at its line); with
--cuda-profile STEPS, one timeline of that many more steps (torch.profiler, CUPTI): the GPU's idle
time, the model's streams' and the loader's busy time and their overlap, each stream with the threads
that queued its work, the copies by kind, and which host threads wait on the GPU in which call, for
how long, all per step (cuda_profile; bench/_cuda_timeline.py); with --gil-waits SECONDS, per
thread, its ms a step waiting to take the GIL back and the functions it waited in (gil_waits: the
training thread's are what the loader's Python costs it), and where its time went, a library's
unnamed code by the library and its innermost named caller (spent_in: a decoder's host work in nvJPEG
shows there, time in the CUDA driver under the driver's call), and which waits in the C library it
sat in, under whose call (blocked_in: a lock of the CUDA driver's shows there); then per model
the issue's target (penstock at 80% of the ceiling on resnet18, 97% on resnet50). On the CPU
(--device cpu) the numbers mean nothing: the run checks that every feed works.

    python bench/train_e2e.py --models resnet18                  # on the GPU, about 4 minutes
    python bench/train_e2e.py --models resnet50
    python bench/train_e2e.py --device cpu                        # smoke run of every path on the CPU:
                                                                  # tiny model, batch 8, 1 round
    python bench/train_e2e.py --models python-loop --feeds synthetic,penstock,dali --rounds 5
                                                                  # the loaders' cost to a training thread
    python bench/train_e2e.py --models resnet18 --feeds synthetic,penstock --rounds 5 \
        --variant cf PENSTOCK_CONSUMER_FIRST_US=4000 --variant hw decoder.hw_decoder_load=0.99
                                                                  # an A/B of settings, alternating

A --variant NAME SETTING... is one more feed, penstock:NAME: penstock with SETTINGs, each an
environment variable (ENV=VALUE) or an argument of the mixed decoder (decoder.ARG=VALUE, VALUE a
Python literal; decoder.device="'cpu'" decodes on the host and uploads the images), run in its turn
of every round like the other feeds.
"""
from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _cuda_timeline  # noqa: E402
import _gil_profile  # noqa: E402
import photos  # noqa: E402
from _common import (IMAGENET_MEAN, IMAGENET_STD, GpuMemorySampler, add_variant_option,  # noqa: E402
                     alternating_rounds, bench_parser, cycling, decoder_args_option, emit, gpu_name, host_cpu, library,
                     own_path, parsed, parsed_variants, run_worker, spin, spin_count, split_counts, split_per_batch,
                     summary, thread_stats, thread_stats_per_batch, timed, turn_counts, turn_per_batch,
                     variant_decoder_args, variant_of, with_dali)
from _pipelines import rn50_pipeline  # noqa: E402

MODELS = {"resnet50": 224, "resnet18": 176, "python-loop": 176}  # model -> training resolution
FEEDS = ("synthetic", "penstock", "dataloader")  # and "dali" when it imports
TARGET_FRACTION = {"resnet18": 0.80, "resnet50": 0.97}  # issue 45: of the model's synthetic ceiling


# ---- the model and its training step ---------------------------------------------------------

def make_model(name: str, device: str):
    """The torchvision model, channels_last on ``device``; on the CPU (smoke runs) a tiny network
    instead, so that the run checks the feeding paths in seconds."""
    import torch
    if device == "cpu":
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, stride=4), torch.nn.ReLU(),
                                    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 1000))
    else:
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=1000)
    return model.to(device, memory_format=torch.channels_last)


class Phases:
    """The training thread's time per phase of a step (milliseconds summed): wall, its own CPU and,
    where Linux counts it, its wait for a core (``runq``: time runnable but not running). Wall beyond
    CPU and run-queue wait is time it was blocked (the GIL, a lock, the GPU's queue); CPU beyond the
    synthetic feed's is work it did more."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.runq: dict[str, float] = {}

    def add(self, name: str, wall: float, cpu: float, runq: float | None = None) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu
        if runq is not None:
            self.runq[name] = self.runq.get(name, 0.0) + runq

    def timed(self, name: str, fn, *args):
        wall, cpu, runq = time.perf_counter(), time.thread_time(), run_queue_seconds()
        out = fn(*args)
        after = run_queue_seconds()
        self.add(name, time.perf_counter() - wall, time.thread_time() - cpu,
                 None if runq is None or after is None else after - runq)
        return out

    def per_step(self, steps: int) -> dict:
        return {f"{kind}_ms_per_step:{name}": round(1e3 * seconds / steps, 3)
                for kind, table in (("wall", self.wall), ("cpu", self.cpu), ("runq", self.runq))
                for name, seconds in table.items()}


_schedstat = threading.local()  # per thread: its schedstat file, kept open, and a buffer to read it into


def run_queue_seconds() -> float | None:
    """Seconds the calling thread has waited for a core so far (Linux's schedstat; None elsewhere).
    Read with the GIL kept: the training thread reads it twice a phase, and opening, reading and
    closing the file from Python gave the GIL away 8 times a read, 64 times a step that a user's loop
    does not, each an opening for a loader's thread to take it (in session 7's profile the loop
    waited 1.2-1.35 ms a step for the GIL in this function)."""
    try:
        if not hasattr(_schedstat, "fd"):
            libc = ctypes.PyDLL(None)  # PyDLL's calls keep the GIL
            libc.pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
            libc.pread.restype = ctypes.c_ssize_t
            _schedstat.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            _schedstat.pread, _schedstat.buffer = libc.pread, ctypes.create_string_buffer(128)
        # at offset 0 the kernel makes the file's text anew
        n = _schedstat.pread(_schedstat.fd, _schedstat.buffer, 127, 0)
        return int(_schedstat.buffer.raw[:max(n, 0)].split()[1]) * 1e-9
    except (OSError, AttributeError, IndexError, ValueError):
        return None


def trainer(model, device: str, phases: Phases | None = None, loss_item: bool = False):
    """A function doing one SGD step on a batch under bf16 autocast: torchvision's reference loop
    (its phases timed into ``phases`` when given); with ``loss_item``, reading the loss after each
    step as that loop logs it (the training thread waits for the GPU, in CUDA's spin-wait)."""
    import torch
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    loss_fn = torch.nn.CrossEntropyLoss()
    timed_phase = phases.timed if phases is not None else (lambda name, fn, *args: fn(*args))

    def forward(images, labels):
        with torch.autocast(device, dtype=torch.bfloat16):
            return loss_fn(model(images), labels)

    def backward(loss) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss.backward()

    def train(images, labels) -> None:
        loss = timed_phase("forward", forward, images, labels)
        timed_phase("backward", backward, loss)
        timed_phase("optimizer", optimizer.step)
        if loss_item:
            timed_phase("loss_item", loss.item)
    return train


def loop_trainer(python_ms: float, waiting_ms: float, phases: Phases | None = None):
    """A training step without a model: a fixed amount of pure Python that takes ``python_ms`` on
    its own (the forward pass's and the optimizer's kernel launches, GIL held: a loader that takes
    the GIL or the core from it makes it longer), then ``waiting_ms`` with the GIL released (the
    backward pass, run by the autograd engine's threads while this one waits)."""
    timed_phase = phases.timed if phases is not None else (lambda name, fn, *args: fn(*args))
    count = spin_count(python_ms / 1e3)  # measured here, before any loader runs

    def train(images, labels) -> None:
        timed_phase("forward", spin, count)
        timed_phase("backward", time.sleep, waiting_ms / 1e3)
    return train


# ---- the feeds: each a function giving the next (images NCHW channels_last, labels) on the device ----

def synthetic_feed(batch: int, size: int, device: str):
    import torch
    images = torch.randn(batch, 3, size, size, device=device).contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device=device)
    return lambda: (images, labels)


def pipeline_feed(system: str, root: str, batch: int, size: int, threads: int, device: str,
                  decoder_args: dict | None = None):
    """penstock's or DALI's train pipeline through its DALIClassificationIterator. The pipeline
    writes HWC; its permutation to NCHW is channels_last as it stands (no copy)."""
    pipe = rn50_pipeline(library(system), "train", root, batch, threads, device="gpu" if device == "cuda" else "cpu",
                         size=size, layout="HWC", decoder_args=decoder_args)
    next_output = cycling(library(system, "pytorch").DALIClassificationIterator(pipe, reader_name="Reader",
                                                                                auto_reset=True))

    def next_batch():
        out = next_output()[0]
        return out["data"].permute(0, 3, 1, 2), out["label"].squeeze(-1).long().to(device, non_blocking=True)
    return next_batch


def beside_feed(model_batch, pipeline_batch):
    """The model's batch from ``model_batch``, and for each, one batch taken from ``pipeline_batch``
    by a daemon thread and dropped. A failure of the pipeline is raised at the next step: the run
    must not go on measuring the model alone."""
    asked = threading.Semaphore(2)  # the pipeline's batches for this step and the next
    failed: list[BaseException] = []

    def take() -> None:
        try:
            while True:
                asked.acquire()
                pipeline_batch()
        except BaseException as exc:  # noqa: BLE001 - raised on the training thread
            failed.append(exc)
    threading.Thread(target=take, name="beside", daemon=True).start()

    def next_batch():
        if failed:
            raise RuntimeError("penstock-beside: the pipeline beside the model failed") from failed[0]
        asked.release()
        return model_batch()
    return next_batch


# a copying process: 32 MB arrays copied until its parent (the worker) is gone, a killed worker included
_COPY_LOOP = """
import os, numpy as np
parent, src = os.getppid(), np.ones(4 << 20)
dst = np.empty_like(src)
while os.getppid() == parent:
    for _ in range(16):
        np.copyto(dst, src)
"""


def copying_processes(count: int) -> list:
    """``count`` processes that copy memory beside this one until it exits (``_COPY_LOOP``)."""
    procs = [subprocess.Popen([sys.executable, "-c", _COPY_LOOP]) for _ in range(count)]
    for p in procs:
        atexit.register(p.kill)
    return procs


def dataloader_feed(root: str, batch: int, size: int, workers: int, device: str):
    """torchvision's ImageNet recipe in a DataLoader; without torchvision (the CPU test machine)
    the same steps in PIL and torch from torch_baseline.py, at 224 px."""
    import torch
    try:
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder
    except ImportError:
        from torch_baseline import make_loader
        loader = make_loader("train", root, batch, workers)
    else:
        transform = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(),
                               T.Normalize([m / 255 for m in IMAGENET_MEAN], [s / 255 for s in IMAGENET_STD])])
        loader = torch.utils.data.DataLoader(ImageFolder(root, transform), batch_size=batch, shuffle=True,
                                             num_workers=workers, pin_memory=device == "cuda", drop_last=True,
                                             persistent_workers=True)
    next_output = cycling(loader)

    def next_batch():
        images, labels = next_output()
        images = images.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
        return images, labels.to(device, non_blocking=True)
    return next_batch


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Fills the options left unset: a GPU run's, or a CPU smoke run's (small and short)."""
    smoke = args.device == "cpu"
    for name, gpu_default, cpu_default in (("batch", 256, 8), ("rounds", 3, 1), ("seconds", 6.0, 1.0),
                                           ("warmup_seconds", 4.0, 0.0)):
        if getattr(args, name) is None:
            setattr(args, name, cpu_default if smoke else gpu_default)
    return args


def worker(feed: str, model_name: str, root: str, args: argparse.Namespace) -> dict:
    import torch
    args = with_defaults(args)
    size = MODELS[model_name]
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.backends.cudnn.benchmark = True
    phases = Phases()
    if model_name == "python-loop":
        train = loop_trainer(*map(float, args.loop_ms.split(",")), phases)
    else:
        train = trainer(make_model(model_name, args.device), args.device, phases, args.loss_item)
    # the model first, on synthetic data: cuDNN's autotuning happens here, not while a loader that
    # has already started fills its queues (a backlog would be counted as the loader's speed)
    warm = synthetic_feed(args.batch, size, args.device)
    for _ in range(3):
        train(*warm())
    sync()
    if feed == "synthetic":
        next_batch = warm
    elif feed == "synthetic-copies":
        copying_processes(args.copy_processes)
        next_batch = warm
    elif feed == "penstock-beside":
        next_batch = beside_feed(warm, pipeline_feed("penstock", root, args.batch, size, args.threads, args.device))
    elif feed == "dataloader":
        next_batch = dataloader_feed(root, args.batch, size, args.threads, args.device)
    else:  # penstock, dali, or a variant penstock:NAME (its environment set by the parent)
        next_batch = pipeline_feed(feed.split(":")[0], root, args.batch, size, args.threads, args.device,
                                   variant_decoder_args(args))
    steps = [0]

    def step() -> None:
        train(*phases.timed("next_batch", next_batch))
        steps[0] += 1
    phases.clear()  # the model's warm-up on synthetic data does not count
    before = thread_stats()
    gil = _gil_profile.GilProfile(args.seconds) if args.gil_profile else None
    turn, split = {}, {}

    def ready() -> None:
        turn.update(turn_counts(feed))
        split.update(split_counts(feed))
        if gil:
            gil.start()
    # the warm-up covers the loaders' start (worker processes, decoders) and their queues filling
    t = timed(step, args.batch, seconds=args.seconds, warmup_steps=5, warmup_seconds=args.warmup_seconds, sync=sync,
              ready=ready)
    # every thread's CPU and waits: the loader's, and the training loop's (MainThread, pt_autograd)
    threads = thread_stats_per_batch(before, steps[0])
    held = {f"gil_share:{name}": share for name, share in gil.shares().items()} if gil else {}
    if gil:  # where each thread's GIL time went, by function (a step takes one batch)
        held["gil_ms_per_batch"] = gil.per_batch(t.steps / t.seconds)
        held["gil_lines_ms_per_batch"] = gil.lines_per_batch(t.steps / t.seconds)
    out = {"img_per_s": round(t.items_per_s, 1), "host_cores_busy": round(t.cores_busy, 2), "steps": t.steps,
           **threads, **phases.per_step(steps[0]), **held}
    if turn:  # what penstock's threads waited for the training loop's Python over the timed window
        out["consumer_turn"] = turn_per_batch(turn, turn_counts(feed), t.steps)
    decoded = split_per_batch(split, split_counts(feed))
    if decoded:  # how the mixed decoder's two sides shared the batches over the timed window
        out["decoder_split"] = decoded
    if args.cuda_profile:  # after the timed window, which the profiler's own work would slow down
        out["cuda_profile"] = _cuda_timeline.profiled(step, args.cuda_profile, sync, cuda=args.device == "cuda")
    if args.gil_waits:  # likewise: py-spy pauses the process at each sample
        out["gil_waits"] = _gil_profile.waits_while(step, args.gil_waits, sync)
    return out


def beyond_ceiling(line: dict, ceiling: dict) -> dict:
    """A feed's run against the model alone's (the ceiling): its fraction of the rate, and the host
    cores and peak GPU memory beyond the ceiling run's, which are the loader's (the training loop's
    own are the ceiling run's; no memory on a CPU run)."""
    extra = {"fraction_of_ceiling": round(line["img_per_s"] / ceiling["img_per_s"], 3),
             "loader_cores_busy": round(line["host_cores_busy"] - ceiling["host_cores_busy"], 2)}
    if line.get("peak_gpu_mb") is not None and ceiling.get("peak_gpu_mb") is not None:
        extra["loader_peak_gpu_mb"] = round(line["peak_gpu_mb"] - ceiling["peak_gpu_mb"], 1)
    return extra


def main() -> None:
    ap = bench_parser(__doc__, rounds=None, worker=("FEED", "MODEL", "ROOT"), dataset={})
    ap.add_argument("--models", default="resnet50,resnet18", help="of " + ", ".join(MODELS))
    ap.add_argument("--loop-ms", default="5.5,7.5",
                    help="python-loop's step: milliseconds of Python, then of waiting without the GIL")
    ap.add_argument("--feeds", default=None, help="of synthetic, penstock, dali, dataloader (default: all there are)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: a smoke run (tiny model; batch, rounds and seconds shrink unless given)")
    ap.add_argument("--batch", type=int, default=None, help="default 256 (8 on the CPU)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="the pipelines' threads and the DataLoader's workers (default: host cores)")
    ap.add_argument("--seconds", type=float, default=None, help="timed seconds per process (default 6; 1 on the CPU)")
    ap.add_argument("--copy-processes", type=int, default=6,
                    help="synthetic-copies: the processes copying memory beside the model (default 6)")
    ap.add_argument("--warmup-seconds", type=float, default=None, help="default 4 (0 on the CPU)")
    add_variant_option(ap, "feed")
    ap.add_argument("--loss-item", action="store_true",
                    help="read the loss after each step (loss.item(), as torchvision's reference recipe logs it): "
                         "the training thread then waits for the GPU every step")
    ap.add_argument("--gil-profile", action="store_true",
                    help="per thread, the share of the timed window it held the GIL and the functions it held "
                         "it in (py-spy --gil; needs py-spy)")
    ap.add_argument("--gil-waits", type=float, default=0, metavar="SECONDS",
                    help="after the timed window, SECONDS more of steps while py-spy samples every thread's native "
                         "stack 20 times a second: per thread, its ms a step waiting to take the GIL back and where, "
                         "where its time went and the C library's waits it sat in (gil_waits, spent_in, blocked_in; "
                         "needs py-spy; 5 s or more for a tenth of a ms at 100 steps a second)")
    ap.add_argument("--cuda-profile", type=int, default=0, metavar="STEPS",
                    help="after the timed window, STEPS more steps under torch.profiler's CUDA activities: the "
                         "GPU's idle time, the model's and the other streams' busy time, copies by kind and the "
                         "host threads' waits on the GPU, per step (cuda_profile)")
    args = parsed(ap, worker)
    if args is None:
        return
    if (args.gil_profile or args.gil_waits) and not _gil_profile.available():
        raise SystemExit("--gil-profile and --gil-waits sample the threads with py-spy: pip install py-spy")
    with_defaults(args)
    smoke = args.device == "cpu"
    root = photos.prepared(args)
    feeds = args.feeds.split(",") if args.feeds else with_dali(list(FEEDS), plugin="pytorch", at=2)
    variants = parsed_variants(args)
    feeds += [f"penstock:{name}" for name in variants]
    models = args.models.split(",")
    card = None if smoke else gpu_name()
    host = host_cpu()  # before the runs: the load average is other jobs', not ours
    passed = ["--device", args.device, "--batch", str(args.batch), "--threads", str(args.threads),
              "--seconds", str(args.seconds), "--warmup-seconds", str(args.warmup_seconds), "--loop-ms", args.loop_ms,
              "--copy-processes", str(args.copy_processes),
              "--cuda-profile", str(args.cuda_profile), "--gil-waits", str(args.gil_waits),
              *(["--gil-profile"] if args.gil_profile else []),
              *(["--loss-item"] if args.loss_item else [])]

    def run(job: tuple[str, str]) -> dict:
        model, feed = job
        env, decoder_args = variant_of(variants, feed)
        # sampled from this process, whose threads do not share the worker's GIL
        memory = None if smoke else GpuMemorySampler(interval=0.01)
        try:
            result = run_worker(__file__, ["--worker", feed, model, root, *passed, *decoder_args_option(decoder_args)],
                                own_path(feed, env))
        finally:
            peak = memory.stop_mb() if memory else None
        # each run's line as it ends, on stderr: a run cut short by its time limit still tells
        print(json.dumps({"run": f"{model} {feed}", "img_per_s": result.get("img_per_s"), "peak_gpu_mb": peak}),
              file=sys.stderr, flush=True)
        return {**result, "peak_gpu_mb": peak}
    runs = alternating_rounds(args.rounds, [(m, f) for m in models for f in feeds], run)
    cores = os.cpu_count()
    for model in models:
        rates = {feed: summary(runs[(model, feed)]) for feed in feeds}
        ceiling = rates.get("synthetic")
        for feed, line in rates.items():
            extra = {"host_cores_free": round(cores - line["host_cores_busy"], 2),
                     **(beyond_ceiling(line, ceiling) if ceiling else {})}
            emit({"bench": "train_e2e", "gpu": card, "device": args.device, "model": model, "size": MODELS[model],
                  "feed": feed, "set": args.set, "batch": args.batch, "threads": args.threads, "host_cores": cores,
                  "host_cpu": host, **({"copy_processes": args.copy_processes} if feed == "synthetic-copies" else {}),
                  **({"loss_item": True} if args.loss_item else {}),
                  **line, **extra, **({"smoke": True, "tiny_model": True} if smoke else {})})
        target = TARGET_FRACTION.get(model)
        if ceiling and "penstock" in rates and target and not smoke:
            fraction = rates["penstock"]["img_per_s"] / ceiling["img_per_s"]
            emit({"bench": "train_e2e", "gpu": card, "model": model, "penstock_fraction_of_ceiling": round(fraction, 3),
                  "target": target, "met": fraction >= target})


if __name__ == "__main__":
    main()
