"""SSD detection input pipeline on the CPU: penstock vs NVIDIA DALI (when installed).

The pipeline of examples/detection_coco.py (readers.coco -> random_bbox_crop -> decoders.image_slice
-> resize 300x300 -> flip of image and boxes -> crop_mirror_normalize -> box_encoder with the 8732
SSD300 anchors), batch 32, 2 threads, over a generated photo set (bench/photos.py, default
imagenet-like: COCO's pictures are of that size, 640x480 at most) with 1-8 random boxes per picture
in a COCO instances file. Each system runs in its own subprocess, alternating over rounds; one JSON
line per system with the median throughput, then the ratio (target: penstock >= 1.3x DALI).

    python bench/coco_cpu.py [--set imagenet-like] [--images 512] [--batches 8] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (EXAMPLES, alternating_rounds, bench_parser, library, parsed, peak_rss_mb, report,  # noqa: E402
                     run_worker, timed, with_dali)

BATCH, THREADS = 32, 2
CATEGORIES = 80


def write_instances(root: str, seed: int = 0) -> str:
    """A COCO instances file for the pictures under ``root`` (1-8 boxes of 5-60% of each side, in
    random categories), written beside the folder; returns its path."""
    from PIL import Image
    path = root + "-coco-instances.json"
    if os.path.exists(path):
        return path
    names = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)
    rng = np.random.default_rng(seed)
    images, annotations = [], []
    for image_id, name in enumerate(names, 1):
        with Image.open(os.path.join(root, name)) as im:  # reads the header only
            w, h = im.size
        images.append({"id": image_id, "file_name": name, "width": w, "height": h})
        n = int(rng.integers(1, 9))
        sizes = rng.uniform(0.05, 0.6, (n, 2)) * (w, h)
        corners = rng.uniform(0, 1, (n, 2)) * ((w, h) - sizes)
        for (x, y), (bw, bh) in zip(corners.tolist(), sizes.tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "bbox": [x, y, bw, bh],
                                "category_id": int(rng.integers(1, CATEGORIES + 1)), "iscrowd": 0, "area": bw * bh})
    with open(path + ".tmp", "w") as f:
        json.dump({"images": images, "annotations": annotations,
                   "categories": [{"id": c, "name": f"cat{c}"} for c in range(1, CATEGORIES + 1)]}, f)
    os.replace(path + ".tmp", path)
    return path


def worker(system: str, root: str, annotations: str, args: argparse.Namespace) -> dict:
    sys.path.insert(0, EXAMPLES)
    from detection_coco import ssd300_anchors, ssd_pipeline
    pipe = ssd_pipeline(library(system), root, annotations, BATCH, THREADS, ssd300_anchors(), seed=7)
    pipe.build()
    return {**timed(pipe.run, BATCH, steps=args.batches, warmup_steps=2).rates(), "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=8, worker=("SYSTEM", "ROOT", "ANNOTATIONS"), dataset={"default_images": 512})
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    annotations = write_instances(root)
    runs = alternating_rounds(args.rounds, with_dali(["penstock"]), lambda s: run_worker(
        __file__, ["--worker", s, root, annotations, "--batches", str(args.batches)]))
    report("coco_cpu", runs, target={"penstock_vs_dali": 1.3}, set=args.set, pipeline="ssd", batch=BATCH,
           threads=THREADS)


if __name__ == "__main__":
    main()
