"""SSD detection input pipeline on the CPU: penstock vs NVIDIA DALI (when installed).

The pipeline of examples/detection_coco.py (readers.coco -> random_bbox_crop -> decoders.image_slice
-> resize 300x300 -> flip of image and boxes -> crop_mirror_normalize -> box_encoder with the 8732
SSD300 anchors), batch 32, 2 threads, over a generated COCO-like set (500x375 JPEGs, 1-8 boxes
each). Each system runs in its own subprocess, alternating over rounds; one JSON line per system
with the median throughput, then the ratio (target: penstock >= 1.3x DALI).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

BATCH, THREADS = 32, 2


def worker(system: str, root: str, annotations: str, batches: int) -> None:
    from detection_coco import ssd300_anchors, ssd_pipeline
    if system == "penstock":
        import penstock as lib
    else:
        import nvidia.dali as lib
    pipe = ssd_pipeline(lib, root, annotations, BATCH, THREADS, ssd300_anchors(), seed=7)
    pipe.build()
    for _ in range(2):
        pipe.run()
    start = time.perf_counter()
    for _ in range(batches):
        pipe.run()
    rate = batches * BATCH / (time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"img_per_s": rate, "peak_rss_mb": round(rss / 1024, 1)}))


def available_systems() -> list[str]:
    systems = ["penstock"]
    try:
        import nvidia.dali  # noqa: F401
        systems.append("dali")
    except ImportError:
        pass
    return systems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_coco_like"))
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", metavar="SYSTEM")
    args = ap.parse_args()
    root, annotations = os.path.join(args.data, "images"), os.path.join(args.data, "instances.json")
    if args.worker:
        worker(args.worker, root, annotations, args.batches)
        return
    from detection_coco import make_coco_like
    make_coco_like(args.data, images=args.images)
    systems = available_systems()
    results: dict[str, list[dict]] = {s: [] for s in systems}
    for _ in range(args.rounds):
        for system in systems:
            out = subprocess.run([sys.executable, __file__, "--worker", system, "--data", args.data,
                                  "--batches", str(args.batches)], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{system} failed:\n{out.stderr[-2000:]}")
            results[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians = {}
    for system, runs in results.items():
        medians[system] = statistics.median(r["img_per_s"] for r in runs)
        print(json.dumps({"bench": "coco_cpu", "pipeline": "ssd", "system": system, "batch": BATCH,
                          "threads": THREADS, "img_per_s": round(medians[system], 1),
                          "peak_rss_mb": max(r["peak_rss_mb"] for r in runs), "rounds": len(runs)}))
    if "dali" in medians:
        print(json.dumps({"bench": "coco_cpu", "pipeline": "ssd",
                          "ratios": {"penstock_vs_dali": round(medians["penstock"] / medians["dali"], 2)},
                          "target": 1.3}))


if __name__ == "__main__":
    main()
