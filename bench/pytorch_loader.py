"""Feeding PyTorch on the CPU: penstock's DALIClassificationIterator vs DataLoader vs NVIDIA DALI's iterator.

1. Loader throughput: the ResNet-50 train pipeline (readers.file with shuffle ->
   decoders.image_random_crop -> resize 224x224 -> crop_mirror_normalize, float CHW; batch 64,
   2 threads) delivered as torch tensors through each system's PyTorch iterator, against
   torch.utils.data.DataLoader with the same transforms in PIL + torch (num_workers=2). Same
   JPEGs; each system in its own subprocess, alternating over rounds; one JSON line per system.
2. Iterator overhead: a pipeline of tiny external_source outputs, timed per batch through
   pipe.run() and through the iterator; the difference is what the iterator adds per batch.

    python bench/pytorch_loader.py [--images 512] [--batches 15] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

from rn50_cpu import BATCH, THREADS, dali_like_pipeline  # noqa: E402

IMAGE_OPS = ("decoders", "resize", "crop_mirror_normalize")


def plugin_of(system: str):
    if system == "penstock":
        import penstock
        from penstock.plugin import pytorch
        return penstock, pytorch
    import nvidia.dali as dali
    from nvidia.dali.plugin import pytorch
    return dali, pytorch


def timed(next_batch, warmup: int, batches: int) -> float:
    """Seconds per batch of ``next_batch()`` after ``warmup`` calls."""
    for _ in range(warmup):
        next_batch()
    start = time.perf_counter()
    for _ in range(batches):
        next_batch()
    return (time.perf_counter() - start) / batches


def loader_rate(system: str, root: str, batches: int) -> float:
    """Images per second delivered as torch tensors."""
    if system == "dataloader":
        from torch_baseline import make_loader
        loader = make_loader("train", root, BATCH, THREADS)

        def endless():
            while True:
                yield from loader
        batches_iter = endless()
        return BATCH / timed(lambda: next(batches_iter), 3, batches)
    lib, pytorch = plugin_of(system)
    it = pytorch.DALIClassificationIterator(dali_like_pipeline(lib, "train", root), reader_name="Reader",
                                            auto_reset=True)

    def next_batch():
        try:
            return next(it)
        except StopIteration:
            return next(it)
    return BATCH / timed(next_batch, 3, batches)


def tiny_pipeline(lib):
    import numpy as np
    batch = [np.array([i], np.int32) for i in range(BATCH)]

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return lib.fn.external_source(source=lambda: batch, batch=True)
    return pipe()


def iterator_overhead(system: str, batches: int, repeats: int = 7) -> dict:
    """Microseconds per batch of pipe.run() and of the iterator over the same tiny pipeline: the
    medians of ``repeats`` alternating blocks (the machine's noise hits both alike)."""
    lib, pytorch = plugin_of(system)
    pipe = tiny_pipeline(lib)
    pipe.build()
    it = pytorch.DALIGenericIterator(tiny_pipeline(lib), ["x"])
    runs, iters = [], []
    for _ in range(repeats):
        runs.append(timed(pipe.run, 20, batches // repeats))
        iters.append(timed(lambda: next(it), 20, batches // repeats))
    run_s, iter_s = statistics.median(runs), statistics.median(iters)
    return {"run_us_per_batch": round(run_s * 1e6, 1), "iterator_us_per_batch": round(iter_s * 1e6, 1),
            "overhead_us_per_batch": round((iter_s - run_s) * 1e6, 1)}


def available_systems() -> list[str]:
    try:
        import nvidia.dali.plugin.pytorch  # noqa: F401
        return ["penstock", "dali", "dataloader"]
    except ImportError:
        return ["penstock", "dataloader"]


def in_subprocess(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "bench_imagenet_like"))
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--overhead-batches", type=int, default=7000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "SYSTEM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, system = args.worker
        if kind == "loader":
            print(json.dumps({"img_per_s": loader_rate(system, args.root, args.batches)}))
        else:
            print(json.dumps(iterator_overhead(system, args.overhead_batches)))
        return

    systems = available_systems()
    for system in systems:
        if system == "dataloader":
            continue
        result = in_subprocess(["--worker", "overhead", system, "--overhead-batches", str(args.overhead_batches)])
        print(json.dumps({"bench": "pytorch_iterator_overhead", "system": system, "batch": BATCH,
                          "sample": "int32[1]", **result}), flush=True)

    from penstock import fn
    missing = [name for name in IMAGE_OPS if not hasattr(fn, name)]
    if missing:
        sys.exit(f"pytorch_loader: penstock lacks the image operators fn.{', fn.'.join(missing)}; "
                 "the loader comparison needs them (the iterator overhead above does not)")
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=8, per_class=args.images // 8, size=(400, 500), noise_sigma=17.0)
    rates: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(args.rounds):
        for system in systems:
            out = in_subprocess(["--worker", "loader", system, "--root", args.root, "--batches", str(args.batches)])
            rates[system].append(out["img_per_s"])
    for system, values in rates.items():
        print(json.dumps({"bench": "pytorch_loader", "pipeline": "rn50_train", "system": system, "batch": BATCH,
                          "threads": THREADS, "img_per_s": round(statistics.median(values), 1),
                          "rounds": len(values)}))


if __name__ == "__main__":
    main()
