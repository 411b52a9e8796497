"""ResNet-50 train pipelines on several GPUs of one host, one process per GPU: aggregate img/s, penstock
vs NVIDIA DALI 2.4 side by side, and each system's scaling over its own one-GPU figure.

For each (system, GPUs, host threads per process), GPUS processes start at once, process k on GPU
k with the train pipeline of _pipelines.py (batch 256, mixed decoders) reading shard k of GPUS of
the photo set, as torchrun's ranks would (LOCAL_WORLD_SIZE=GPUS in their environment, which
penstock's decoders size their host threads by). Each builds and warms up its pipeline, the
processes meet, then each times --seconds; the aggregate is the sum of their img/s. The cases
alternate round after round (the systems side by side within each). One JSON line per (system,
GPUs, threads): the median aggregate img/s, per-GPU img/s, host cores busy (all processes) and
host CPU ms per image; then per (GPUs, threads) penstock over DALI (issue 33: >= 1.15 on 4 GPUs),
and per (system, threads) the scaling over one GPU (>= 3.6x on 4 GPUs, 90%).

    python bench/multi_gpu.py --dry-run                          # the plan and its estimated time
    python bench/multi_gpu.py --gpus 1,4 --threads 4,16          # 2 systems x 4 cases x 3 rounds
    python bench/multi_gpu.py --gpus 4 --threads 64 --no-local-world-size   # decoders sized by the whole host
    python bench/multi_gpu.py --device cpu --set noise --images 64 --gpus 1,2 --threads 1   # smoke run, no GPU
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (alternating_rounds, bench_parser, dali_available, emit, gpu_name, library,  # noqa: E402
                     module_exists, parsed, run_workers, summary, timed)
from _pipelines import rn50_pipeline  # noqa: E402

BATCH = 256
SYSTEMS = ("penstock", "dali")
VS_DALI_TARGET = {4: 1.15}           # issue 33: penstock's aggregate over DALI's, at that many GPUs
SCALING_EFFICIENCY_TARGET = 0.9      # issue 33: >= 3.6x the one-GPU figure on 4 GPUs
SECONDS_PER_CASE = 6.0               # start-up, CUDA and the decoders' set-up: for --dry-run (plus warm-up and timing)
MEET_TIMEOUT_S = 300


def meet(folder: str, rank: int, processes: int) -> None:
    """Waits until all ``processes`` processes got here (a file each in ``folder``)."""
    open(os.path.join(folder, f"ready.{rank}"), "w").close()
    deadline = time.monotonic() + MEET_TIMEOUT_S
    while sum(name.startswith("ready.") for name in os.listdir(folder)) < processes:
        if time.monotonic() > deadline:
            raise SystemExit(f"multi_gpu: process {rank} waited {MEET_TIMEOUT_S} s for the others")
        time.sleep(0.005)


def worker(system: str, rank: str, gpus: str, root: str, threads: str, meeting: str, args: argparse.Namespace) -> dict:
    rank, gpus, threads = int(rank), int(gpus), int(threads)
    shard = {"shard_id": rank, "num_shards": gpus}
    if args.device == "cpu":  # the smoke run: the same processes and shards, CPU decoders
        pipe = rn50_pipeline(library(system), "train", root, BATCH, threads, **shard)
        pipe.build()
        t = timed(pipe.run, BATCH, seconds=args.seconds, warmup_steps=1, ready=lambda: meet(meeting, rank, gpus))
        return {**t.rates(), "cores_busy": round(t.cores_busy, 2), "batches": t.steps}
    if system == "penstock" and not module_exists("nvidia.nvimgcodec"):
        raise SystemExit("penstock's GPU decoding needs nvImageCodec (nvidia-nvimgcodec-cu13): install it, or stage "
                         "DALI, which brings it (bench/gpu_run.sh installs it from .whl/)")
    import cupy
    cupy.cuda.runtime.setDevice(rank)  # as a rank does (torch.cuda.set_device) before its work
    pipe = rn50_pipeline(library(system), "train", root, BATCH, threads, device="gpu", device_id=rank, **shard)
    pipe.build()
    # the warm-up covers the decoder processes' start (after 16 batches) and the clocks ramping up
    t = timed(pipe.run, BATCH, seconds=args.seconds, warmup_steps=4, warmup_seconds=args.warmup_seconds,
              sync=cupy.cuda.runtime.deviceSynchronize, ready=lambda: meet(meeting, rank, gpus))
    return {**t.rates(), "cores_busy": round(t.cores_busy, 2), "batches": t.steps}


def gpu_count() -> int:
    """GPUs on this host, by nvidia-smi (0 without one)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in out.stdout.splitlines()) if out.returncode == 0 else 0


def run_case(case: tuple, root: str, args: argparse.Namespace) -> dict:
    """One (system, GPUs, threads): its processes at once; their aggregate."""
    system, gpus, threads = case
    env = {} if args.no_local_world_size else {"LOCAL_WORLD_SIZE": str(gpus)}
    with tempfile.TemporaryDirectory(prefix="multi_gpu_meet_") as meeting:
        per_gpu = run_workers(__file__, [["--worker", system, str(k), str(gpus), root, str(threads), meeting,
                                          "--seconds", str(args.seconds), "--warmup-seconds", str(args.warmup_seconds),
                                          "--device", args.device]
                                         for k in range(gpus)], env)
    rates = [r["img_per_s"] for r in per_gpu]
    cores = sum(r["cores_busy"] for r in per_gpu)
    total = sum(rates)
    result = {"img_per_s": round(total, 1), "min_gpu_img_per_s": min(rates), "max_gpu_img_per_s": max(rates),
              "host_cores_busy": round(cores, 2), "host_cpu_ms_per_img": round(1000 * cores / total, 3)}
    emit({"bench": "multi_gpu_round", "system": system, "gpus": gpus, "threads": threads, **result,
          "per_gpu_img_per_s": rates})
    return result


def comparison_lines(results: dict, card: str | None, smoke: bool) -> None:
    """Per (GPUs, threads): penstock over DALI; per (system, threads): the scaling over one GPU (with
    the issue's targets, except in a CPU smoke run)."""
    rate = {case: statistics.median(r["img_per_s"] for r in runs) for case, runs in results.items()}
    for gpus, threads in sorted({(g, t) for _, g, t in rate}):
        if ("penstock", gpus, threads) in rate and ("dali", gpus, threads) in rate:
            ratio = rate[("penstock", gpus, threads)] / rate[("dali", gpus, threads)]
            target = None if smoke else VS_DALI_TARGET.get(gpus)
            emit({"bench": "multi_gpu", "gpu": card, "gpus": gpus, "threads": threads,
                  "penstock_vs_dali": round(ratio, 3), "target": target,
                  "met": None if target is None else ratio >= target})
    for system, gpus, threads in sorted(rate):
        one = rate.get((system, 1, threads))
        if gpus > 1 and one:
            scaling = rate[(system, gpus, threads)] / one
            target = None if smoke else SCALING_EFFICIENCY_TARGET
            emit({"bench": "multi_gpu", "gpu": card, "system": system, "gpus": gpus, "threads": threads,
                  "scaling_vs_one_gpu": round(scaling, 2), "efficiency": round(scaling / gpus, 3),
                  "target_efficiency": target, "met": None if target is None else scaling / gpus >= target})


def main() -> None:
    ap = bench_parser(__doc__, worker=("SYSTEM", "RANK", "GPUS", "ROOT", "THREADS", "MEETING"), dataset={})
    ap.add_argument("--gpus", default=None, help="GPU counts, comma-separated (default: 1, 2, 4 ... up to all)")
    ap.add_argument("--threads", default="4,16", help="host threads per process (pipeline num_threads)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="of " + ", ".join(SYSTEMS) + " (DALI where it imports)")
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per process, after the warm-up")
    ap.add_argument("--warmup-seconds", type=float, default=5.0, help="untimed seconds per process first")
    ap.add_argument("--no-local-world-size", action="store_true",
                    help="leave LOCAL_WORLD_SIZE out of the processes' environment, as a launcher that does not "
                         "set it: penstock's decoders then size their threads by the whole host")
    ap.add_argument("--dry-run", action="store_true", help="make the set, print the plan, run nothing")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="cpu: the same processes and shards with CPU decoders, to check the bench without a GPU")
    args = parsed(ap, worker)
    if args is None:
        return
    smoke = args.device == "cpu"
    available = gpu_count()
    if args.gpus:
        counts = [int(g) for g in args.gpus.split(",")]
    else:
        counts = [g for g in (1, 2, 4, 8) if g <= available] + ([available] if available not in (0, 1, 2, 4, 8) else [])
    if not smoke and (not counts or max(counts) > available):
        raise SystemExit(f"multi_gpu: this host has {available} GPU(s); --gpus asks for {counts}")
    root = photos.prepared(args)
    systems = [s for s in args.systems.split(",") if s == "penstock" or dali_available()]
    cases = [(system, gpus, threads) for gpus, threads in itertools.product(counts, map(int, args.threads.split(",")))
             for system in systems]
    card = "none (CPU smoke run)" if smoke else gpu_name()
    emit({"bench": "multi_gpu", "plan": {"systems": systems, "gpus": counts, "threads": args.threads,
                                         "cases": len(cases), "rounds": args.rounds, "gpu": card,
                                         "host_gpus": available, "host_cores": os.cpu_count(),
                                         "local_world_size_set": not args.no_local_world_size,
                                         "estimated_minutes": round(len(cases) * args.rounds *
                                                                    (SECONDS_PER_CASE + args.warmup_seconds + args.seconds) / 60, 1)}})
    if args.dry_run:
        return
    results = alternating_rounds(args.rounds, cases, lambda case: run_case(case, root, args))
    for (system, gpus, threads), runs in results.items():
        emit({"bench": "multi_gpu", "gpu": card, "system": system, "gpus": gpus, "threads": threads, "batch": BATCH,
              "set": args.set, **summary(runs), "img_per_s_rounds": [round(r["img_per_s"]) for r in runs]})
    comparison_lines(results, card, smoke)


if __name__ == "__main__":
    main()
