"""Conditional execution: rotate 25% of the images (the conditionals example of the spec) versus
rotating all of them, on the CPU.

Prints one JSON line per system: penstock with the conditional, penstock rotating every image,
and, when NVIDIA DALI is installed, DALI with the same conditional pipeline in the same run.
Targets: the conditional pipeline costs less than rotating everything, and runs >= 1.3x DALI's.
The images are pictures of a photo set (bench/photos.py, default imagenet-like), decoded once and
fed by external_source, so the measured work is the rotation and the split/merge around it. Each
system runs in its own process, alternating over rounds.

    python bench/conditionals.py [--set imagenet-like] [--batch 64] [--batches 10] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (alternating_rounds, bench_parser, library, parsed, report, run_worker, timed,  # noqa: E402
                     with_dali)

# system name -> (library, with the conditional)
SYSTEMS = {"penstock": ("penstock", True), "penstock_rotate_all": ("penstock", False), "dali": ("dali", True)}


def decoded_pictures(root: str, count: int) -> list[np.ndarray]:
    """The first ``count`` pictures of a set, decoded (HWC uint8)."""
    from PIL import Image
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names if f.endswith(".jpg"))
    out = []
    for path in files[:count]:
        with Image.open(path) as im:
            out.append(np.asarray(im.convert("RGB")))
    return out


def build(lib, data: list[np.ndarray], threads: int, conditional: bool):
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=len(data), num_threads=threads, device_id=None, seed=1,
                      enable_conditionals=conditional)
    def rotate_some():
        img = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=types.DALIDataType.BOOL)
        if do_rotate:
            result = fn.rotate(img, angle=fn.random.uniform(range=(10, 30)), fill_value=0)
        else:
            result = img
        return result

    @lib.pipeline_def(batch_size=len(data), num_threads=threads, device_id=None, seed=1)
    def rotate_all():
        img = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        return fn.rotate(img, angle=fn.random.uniform(range=(10, 30)), fill_value=0)

    p = rotate_some() if conditional else rotate_all()
    p.build()
    return p


def worker(system: str, root: str, args: argparse.Namespace) -> dict:
    lib_name, conditional = SYSTEMS[system]
    pipe = build(library(lib_name), decoded_pictures(root, args.batch), args.threads, conditional)
    return timed(pipe.run, args.batch, steps=args.batches).rates()


def main() -> None:
    ap = bench_parser(__doc__, batches=10, worker=("SYSTEM", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    systems = with_dali(["penstock", "penstock_rotate_all"])
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(__file__, [
        "--worker", s, root, "--batch", str(args.batch), "--threads", str(args.threads),
        "--batches", str(args.batches)]))
    report("conditionals", runs, target={"penstock_vs_dali": 1.3}, set=args.set, pipeline="rotate 25% (conditional)",
           batch=args.batch, threads=args.threads)


if __name__ == "__main__":
    main()
