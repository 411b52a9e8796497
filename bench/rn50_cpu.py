"""ResNet-50 input pipelines on the CPU: penstock vs NVIDIA DALI vs torch DataLoader.

The train and val pipelines of _pipelines.py (224 px), batch 64, 2 threads/workers, over a
generated photo set (bench/photos.py; default imagenet-like: short side 300-500, ~90 KB).
Each system runs in its own subprocess (so its peak RSS is its own), alternating over rounds;
one JSON line per (system, pipeline) with the median throughput and host CPU per image, then
the ratios. DALI is included when `import nvidia.dali` works.

    python bench/rn50_cpu.py [--set imagenet-like|high-res|noise] [--images 512] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (alternating_rounds, bench_parser, cycling, library, parsed, peak_rss_mb, report,  # noqa: E402
                     run_worker, timed, with_dali)
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, KINDS, rn50_pipeline  # noqa: E402


def worker(system: str, kind: str, root: str, args: argparse.Namespace) -> dict:
    if system == "dataloader":
        from torch_baseline import make_loader
        step = cycling(make_loader(kind, root, BATCH, THREADS))
    else:
        pipe = rn50_pipeline(library(system), kind, root, BATCH, THREADS)
        pipe.build()
        step = pipe.run
    return {**timed(step, BATCH, steps=args.batches).rates(), "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=15, worker=("SYSTEM", "PIPELINE", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--pipelines", default=",".join(KINDS))
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    systems = with_dali(["penstock", "dataloader"], at=1)
    for kind in args.pipelines.split(","):
        runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
            __file__, ["--worker", s, kind, root, "--batches", str(args.batches)]))
        report("rn50_cpu", runs, target={"penstock_vs_best": 1.5}, set=args.set, pipeline=kind, batch=BATCH,
               threads=THREADS)


if __name__ == "__main__":
    main()
