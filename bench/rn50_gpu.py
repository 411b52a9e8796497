"""ResNet-50 input pipelines on the GPU: penstock vs NVIDIA DALI 2.4, side by side in one run.

A sweep over photo sets (bench/photos.py: imagenet-like, high-res), pipelines (train, val of
_pipelines.py, batch 256, mixed decoders) and host threads (4, 8, 16). Every (system, set,
pipeline, threads) runs in its own process; the sweep repeats in rounds, each round running
every case once, so the systems alternate. Systems: penstock (default settings), DALI with its
defaults (the reference) and DALI tuned (hw_decoder_load=0.9), DALI when `import nvidia.dali`
works. One JSON line per (system, set, pipeline, threads): median img/s, peak GPU memory (device
memory in use above the process's start, sampled every 2 ms) and for penstock what of it its
pools and arenas hold at the end (held_gpu_mb:HOLDER) and how its mixed decoders split the timed
window's batches (decoder_split, as train_e2e.py reports it), host CPU ms per image (the process's and
its children's), the GPU's name; then per (set, pipeline, threads) the ratios
against both DALI settings with the targets of issue 34.

    python bench/rn50_gpu.py --dry-run                       # the plan and its estimated time
    python bench/rn50_gpu.py --sets imagenet-like --pipelines train   # 27 processes, ~4 minutes
    python bench/rn50_gpu.py --sets high-res --threads 16             # issue 34's targets there are at 16
    python bench/rn50_gpu.py --sets noise --threads 16                # the synthetic stress case
    python bench/rn50_gpu.py --sets imagenet-like --threads 16 --systems penstock \
        --variant normal PENSTOCK_STREAM_PRIORITY=normal --variant hw decoder.hw_decoder_load=0.99
                                                                      # an A/B of settings, alternating

A --variant NAME SETTING... is one more system, penstock:NAME: penstock with SETTINGs, each an
environment variable (ENV=VALUE) or an argument of the mixed decoders (decoder.ARG=VALUE, VALUE a
Python literal), run in its turn of every round like the other systems.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (GpuMemorySampler, add_variant_option, alternating_rounds, bench_parser,  # noqa: E402
                     dali_available, decoder_args_option, emit, gpu_name, host_cpu, library, median, module_exists,
                     own_path, parsed, parsed_variants, run_worker, split_counts, split_per_batch, summary, timed,
                     variant_decoder_args, variant_of)
from _pipelines import GPU_BATCH as BATCH, KINDS, rn50_pipeline  # noqa: E402

# The systems, each a library and the decoder arguments it runs with.
SYSTEMS = {"penstock": ("penstock", {}), "dali": ("dali", {}), "dali-tuned": ("dali", {"hw_decoder_load": 0.9})}
# penstock with a given number of decoder processes beside its in-process decoder (not in the default sweep)
PROCESS_VARIANTS = {f"penstock-p{k}": k for k in range(4)}
SYSTEMS.update({name: ("penstock", {}) for name in PROCESS_VARIANTS})
# Issue 34's targets: penstock over DALI's defaults, per set and host threads; >= 1.0 over DALI tuned.
TARGETS = {"imagenet-like": {16: 1.15, 8: 1.3, 4: 1.5}, "high-res": {16: 1.15}}
TUNED_TARGET = 1.0
SECONDS_PER_PROCESS = 6.0  # start-up, CUDA and the decoders' set-up: for --dry-run (plus warm-up and timing)


def system_settings(system: str) -> tuple[str, dict]:
    """A system's library and decoder arguments; a variant, penstock:NAME, is penstock's (its own
    settings come on top)."""
    return SYSTEMS[system.partition(":")[0]]


def worker(system: str, kind: str, root: str, threads: str, args: argparse.Namespace) -> dict:
    lib_name, decoder_args = system_settings(system)
    decoder_args = {**decoder_args, **(variant_decoder_args(args) or {})}
    if system in PROCESS_VARIANTS:
        os.environ["PENSTOCK_DECODER_PROCESSES"] = str(PROCESS_VARIANTS[system])
    threads, seconds = int(threads), args.seconds
    if args.device == "cpu":  # the smoke run of the sweep's machinery: same pipelines, CPU decoders
        pipe = rn50_pipeline(library(lib_name), kind, root, BATCH, threads, decoder_args=decoder_args)
        pipe.build()
        t = timed(pipe.run, BATCH, seconds=seconds, warmup_steps=1)
        return {"img_per_s": round(t.items_per_s, 1), "peak_gpu_mb": None,
                "host_cpu_ms_per_img": round(t.cpu_ms_per_item, 3), "batches": t.steps}
    if lib_name == "penstock" and not module_exists("nvidia.nvimgcodec"):
        # without it penstock's mixed decoders decode on the host: a number, but not of the GPU path
        raise SystemExit("penstock's GPU decoding needs nvImageCodec (nvidia-nvimgcodec-cu13), which staging "
                         "DALI brings; install it or put DALI's site folder on PYTHONPATH")
    import cupy
    cupy.cuda.runtime.setDevice(0)
    memory = GpuMemorySampler()
    pipe = rn50_pipeline(library(lib_name), kind, root, BATCH, threads, device="gpu", decoder_args=decoder_args)
    pipe.build()
    # warm up for seconds: with 4 batches (50 ms) the first process after the GPU sat idle measured
    # up to 40% slower than the next ones (clocks ramping up, caches filling), and penstock's decoder
    # processes come up a few seconds after the first batches (a training job runs for hours)
    split: dict = {}
    t = timed(pipe.run, BATCH, seconds=seconds, warmup_steps=4, warmup_seconds=args.warmup_seconds,
              sync=cupy.cuda.runtime.deviceSynchronize, ready=lambda: split.update(split_counts(system)))
    # how the mixed decoders' two sides shared the timed window's batches, and how many went the lifted way
    decoded = split_per_batch(split, split_counts(system))
    return {"img_per_s": round(t.items_per_s, 1), "peak_gpu_mb": memory.stop_mb(),
            "host_cpu_ms_per_img": round(t.cpu_ms_per_item, 3), "batches": t.steps, **held_gpu_mb(lib_name),
            **({"decoder_split": decoded} if decoded else {})}


def held_gpu_mb(lib_name: str) -> dict:
    """penstock's device memory at the run's end by holder (held_gpu_mb:arenas, :pool, :pool_in_use).
    The pool keeps its blocks and the arenas keep blocks of their largest batch, so the peak holds
    about as much of each; the peak beyond them is mostly the CUDA context's and nvImageCodec's."""
    if lib_name != "penstock":
        return {}
    from penstock._cuda._pools import device_memory_held
    return {f"held_gpu_mb:{holder}": round(nbytes / 2**20, 1) for holder, nbytes in device_memory_held().items()}


def ratio_lines(results: dict, card: str | None) -> None:
    """Per (set, pipeline, threads) and penstock system: its rate over DALI default and DALI tuned,
    with the targets, and a variant's (penstock:NAME) over penstock's defaults."""
    cases = sorted({key[1:] for key in results})
    for set_name, kind, threads in cases:
        rate = {system: median(runs, "img_per_s")
                for (system, *case), runs in results.items() if tuple(case) == (set_name, kind, threads)}
        for system in [s for s in rate if system_settings(s)[0] == "penstock"]:
            ratios = {}
            if "dali" in rate:
                target = TARGETS.get(set_name, {}).get(threads)
                ratio = rate[system] / rate["dali"]
                ratios.update(penstock_vs_dali=round(ratio, 3), target=target,
                              met=None if target is None else ratio >= target)
            if "dali-tuned" in rate:
                ratio = rate[system] / rate["dali-tuned"]
                ratios.update(penstock_vs_dali_tuned=round(ratio, 3), target_vs_tuned=TUNED_TARGET,
                              met_vs_tuned=ratio >= TUNED_TARGET)
            if ":" in system and "penstock" in rate:
                ratios.update(vs_penstock=round(rate[system] / rate["penstock"], 3))
            if ratios:
                emit({"bench": "rn50_gpu", "gpu": card, "system": system, "set": set_name, "pipeline": kind,
                      "threads": threads, **ratios})


def main() -> None:
    ap = bench_parser(__doc__, worker=("SYSTEM", "PIPELINE", "ROOT", "THREADS"),
                      dataset={"default_set": "imagenet-like,high-res", "sweep": True})
    ap.add_argument("--threads", default="4,8,16", help="host threads per pipeline, comma-separated")
    ap.add_argument("--pipelines", default=",".join(KINDS))
    ap.add_argument("--systems", default="penstock,dali,dali-tuned", help="of " + ", ".join(SYSTEMS))
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per process, after the warm-up")
    ap.add_argument("--warmup-seconds", type=float, default=5.0, help="untimed seconds per process first")
    ap.add_argument("--dry-run", action="store_true", help="make the sets, print the plan, run nothing")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="cpu: the same sweep with CPU decoders, to check the bench itself without a GPU")
    add_variant_option(ap, "system")
    args = parsed(ap, worker)
    if args is None:
        return

    sets = args.sets.split(",")
    roots = {name: photos.prepared(args, name) for name in sets}
    dali = dali_available()
    variants = parsed_variants(args)
    systems = [s for s in args.systems.split(",") if SYSTEMS[s][0] == "penstock" or dali]
    systems += [f"penstock:{name}" for name in variants]
    # the systems side by side within each round: each case's systems run one after the other
    cases = [(system, *case) for case in itertools.product(sets, args.pipelines.split(","),
                                                           map(int, args.threads.split(",")))
             for system in systems]
    processes = len(cases) * args.rounds
    card = gpu_name() if args.device == "gpu" else "none (CPU smoke run)"
    minutes = processes * (SECONDS_PER_PROCESS + args.warmup_seconds + args.seconds) / 60
    emit({"bench": "rn50_gpu", "plan": {"systems": systems, "sets": sets, "cases": len(cases), "rounds": args.rounds,
                                        "processes": processes, "gpu": card, "host_cores": os.cpu_count(),
                                        "host_cpu": host_cpu(),
                                        "estimated_minutes": round(minutes, 1)}})
    if args.dry_run:
        return

    def run(case: tuple) -> dict:
        system, set_name, kind, threads = case
        env, decoder_args = variant_of(variants, system)
        result = run_worker(__file__, ["--worker", system, kind, roots[set_name], str(threads),
                                       "--seconds", str(args.seconds), "--warmup-seconds", str(args.warmup_seconds),
                                       "--device", args.device, *decoder_args_option(decoder_args)],
                            own_path(system, env))
        # each process's result as it comes: a sweep cut off by a time limit still leaves its rounds
        emit({"bench": "rn50_gpu_process", "system": system, "set": set_name, "pipeline": kind, "threads": threads,
              **result})
        return result

    results = alternating_rounds(args.rounds, cases, run)
    for (system, set_name, kind, threads), runs in results.items():
        env, decoder_args = variant_of(variants, system)
        emit({"bench": "rn50_gpu", "gpu": card, "system": system, "set": set_name, "pipeline": kind,
              "threads": threads, "batch": BATCH,
              "decoder_args": {**system_settings(system)[1], **decoder_args}, **({"env": env} if env else {}),
              **summary(runs), "img_per_s_rounds": [round(r["img_per_s"]) for r in runs]})
    ratio_lines(results, card)


if __name__ == "__main__":
    main()
