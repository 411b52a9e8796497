"""ResNet-50 input pipelines on the CPU: penstock vs NVIDIA DALI vs torch DataLoader.

Two pipelines, batch 64, 2 threads/workers, over generated ImageNet-like JPEGs (≈500×400,
≈95 KB, quality 90):
  train: readers.file (shuffle) -> decoders.image_random_crop (area 0.08-1, aspect 3/4-4/3)
         -> resize 224×224 -> crop_mirror_normalize (float CHW, ImageNet mean/std, random mirror)
  val:   decoders.image -> resize(resize_shorter=256) -> crop_mirror_normalize(crop 224×224)
Each system runs in its own subprocess (so its peak RSS is its own), alternating over rounds;
one JSON line per (system, pipeline) with the median throughput, then the ratios.
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
sys.path.insert(0, HERE)

BATCH, THREADS = 64, 2
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def dali_like_pipeline(lib, kind: str, root: str):
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=7, prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=(kind == "train"), name="Reader")
        if kind == "train":
            images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB, random_area=[0.08, 1.0],
                                                   random_aspect_ratio=[0.75, 4 / 3], num_attempts=10)
            images = fn.resize(images, resize_x=224, resize_y=224)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                              mirror=fn.random.coin_flip())
        else:
            images = fn.decoders.image(jpegs, output_type=types.RGB)
            images = fn.resize(images, resize_shorter=256)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224),
                                              mean=MEAN, std=STD)
        return images, labels

    return pipe()


def run_pipeline(lib, kind: str, root: str, batches: int) -> float:
    pipe = dali_like_pipeline(lib, kind, root)
    pipe.build()
    for _ in range(3):
        pipe.run()
    start = time.perf_counter()
    for _ in range(batches):
        pipe.run()
    return batches * BATCH / (time.perf_counter() - start)


def run_dataloader(kind: str, root: str, batches: int) -> float:
    from torch_baseline import make_loader
    loader = make_loader(kind, root, BATCH, THREADS)
    it = iter(loader)
    for _ in range(3):
        next(it)
    start = time.perf_counter()
    n = 0
    for _ in range(batches):
        try:
            next(it)
        except StopIteration:
            it = iter(loader)
            next(it)
        n += 1
    return n * BATCH / (time.perf_counter() - start)


def worker(system: str, kind: str, root: str, batches: int) -> None:
    if system == "penstock":
        import penstock
        rate = run_pipeline(penstock, kind, root, batches)
    elif system == "dali":
        import nvidia.dali as dali
        rate = run_pipeline(dali, kind, root, batches)
    else:
        rate = run_dataloader(kind, root, batches)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # DataLoader workers
    print(json.dumps({"img_per_s": rate, "peak_rss_mb": round((own + children) / 1024, 1)}))


def available_systems() -> list[str]:
    systems = ["penstock", "dataloader"]
    try:
        import nvidia.dali  # noqa: F401
        systems.insert(1, "dali")
    except ImportError:
        pass
    return systems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "bench_imagenet_like"))
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pipelines", default="train,val")
    ap.add_argument("--worker", nargs=2, metavar=("SYSTEM", "PIPELINE"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.root, args.batches)
        return
    import penstock
    if not all(hasattr(penstock.fn, name) for name in ("resize", "crop_mirror_normalize")) or \
            not hasattr(penstock.fn, "decoders"):
        sys.exit("rn50_cpu: penstock lacks the image operators (decoders, resize, crop_mirror_normalize)")
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=8, per_class=args.images // 8, size=(400, 500), noise_sigma=17.0)
    systems = available_systems()
    for kind in args.pipelines.split(","):
        results: dict[str, list[dict]] = {s: [] for s in systems}
        for _ in range(args.rounds):
            for system in systems:
                out = subprocess.run([sys.executable, __file__, "--worker", system, kind, "--root", args.root,
                                      "--batches", str(args.batches)], capture_output=True, text=True)
                if out.returncode != 0:
                    raise RuntimeError(f"{system}/{kind} failed:\n{out.stderr[-2000:]}")
                results[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
        medians = {}
        for system, runs in results.items():
            medians[system] = statistics.median(r["img_per_s"] for r in runs)
            print(json.dumps({"bench": "rn50_cpu", "pipeline": kind, "system": system, "batch": BATCH,
                              "threads": THREADS, "img_per_s": round(medians[system], 1),
                              "peak_rss_mb": max(r["peak_rss_mb"] for r in runs), "rounds": len(runs)}))
        others = {s: v for s, v in medians.items() if s != "penstock"}
        best = max(others.values())
        print(json.dumps({"bench": "rn50_cpu", "pipeline": kind, "ratios": {
            f"penstock_vs_{s}": round(medians["penstock"] / v, 2) for s, v in others.items()},
            "penstock_vs_best": round(medians["penstock"] / best, 2), "target": 1.5}))


if __name__ == "__main__":
    main()
