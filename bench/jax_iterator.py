"""Feeding JAX on the CPU: penstock's data_iterator vs NVIDIA DALI's (when installed), in the same run.

1. Iterator overhead: a pipeline of tiny external_source outputs, timed per batch through
   pipe.run() and through the JAX iterator (one dict of jax.Arrays per step); the difference is
   what the iterator adds per batch.
2. Loader throughput: the ResNet-50 train pipeline (readers.file with shuffle ->
   decoders.image_random_crop -> resize 224x224 -> crop_mirror_normalize, float CHW; batch 64,
   2 threads) through each system's data_iterator, each batch consumed by a jitted reduction so
   the arrays are really used. Same JPEGs; each system in its own subprocess, alternating over
   rounds; one JSON line per system.

    python bench/jax_iterator.py [--images 512] [--batches 15] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

from pytorch_loader import timed, tiny_pipeline  # noqa: E402  (the same timing and tiny pipeline)
from rn50_cpu import BATCH, MEAN, STD, THREADS  # noqa: E402

IMAGE_OPS = ("decoders", "resize", "crop_mirror_normalize")


def plugin_of(system: str):
    if system == "penstock":
        import penstock
        from penstock.plugin import jax as plugin
        return penstock, plugin
    import nvidia.dali as dali
    from nvidia.dali.plugin import jax as plugin
    return dali, plugin


def rn50_iterator(lib, plugin, root: str):
    fn, types = lib.fn, lib.types

    @plugin.data_iterator(output_map=["images", "labels"], reader_name="Reader", auto_reset=True)
    def train():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB, random_area=[0.08, 1.0],
                                               random_aspect_ratio=[0.75, 4 / 3], num_attempts=10)
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels

    return train(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=7, prefetch_queue_depth=2)


def loader_rate(system: str, root: str, batches: int) -> float:
    """Images per second delivered as jax.Arrays and reduced by a jitted step."""
    import jax
    lib, plugin = plugin_of(system)
    it = rn50_iterator(lib, plugin, root)
    step = jax.jit(lambda images, labels: images.mean() + labels.sum())

    def next_batch():
        try:
            batch = next(it)
        except StopIteration:
            batch = next(it)
        step(batch["images"], batch["labels"]).block_until_ready()
    return BATCH / timed(next_batch, 3, batches)


def iterator_overhead(system: str, batches: int, repeats: int = 7) -> dict:
    """Microseconds per batch of pipe.run() and of the iterator over the same tiny pipeline: the
    medians of ``repeats`` alternating blocks (the machine's noise hits both alike)."""
    lib, plugin = plugin_of(system)
    pipe = tiny_pipeline(lib)
    pipe.build()
    it = plugin.DALIGenericIterator(tiny_pipeline(lib), ["x"])
    runs, iters = [], []
    for _ in range(repeats):
        runs.append(timed(pipe.run, 20, batches // repeats))
        iters.append(timed(lambda: next(it), 20, batches // repeats))
    run_s, iter_s = statistics.median(runs), statistics.median(iters)
    return {"run_us_per_batch": round(run_s * 1e6, 1), "iterator_us_per_batch": round(iter_s * 1e6, 1),
            "overhead_us_per_batch": round((iter_s - run_s) * 1e6, 1)}


def available_systems() -> list[str]:
    try:
        import nvidia.dali.plugin.jax  # noqa: F401
        return ["penstock", "dali"]
    except ImportError:
        return ["penstock"]


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
    ap.add_argument("--overhead-batches", type=int, default=3500)
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
        result = in_subprocess(["--worker", "overhead", system, "--overhead-batches", str(args.overhead_batches)])
        print(json.dumps({"bench": "jax_iterator_overhead", "system": system, "batch": BATCH,
                          "sample": "int32[1]", **result}), flush=True)

    from penstock import fn
    missing = [name for name in IMAGE_OPS if not hasattr(fn, name)]
    if missing:
        sys.exit(f"jax_iterator: penstock lacks the image operators fn.{', fn.'.join(missing)}; "
                 "the loader comparison needs them (the iterator overhead above does not)")
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=8, per_class=args.images // 8, size=(400, 500), noise_sigma=17.0)
    rates: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(args.rounds):
        for system in systems:
            out = in_subprocess(["--worker", "loader", system, "--root", args.root, "--batches", str(args.batches)])
            rates[system].append(out["img_per_s"])
    for system, values in rates.items():
        print(json.dumps({"bench": "jax_loader", "pipeline": "rn50_train", "system": system, "batch": BATCH,
                          "threads": THREADS, "img_per_s": round(statistics.median(values), 1),
                          "rounds": len(values)}), flush=True)
    if "dali" in rates:
        print(json.dumps({"bench": "jax_loader_ratio", "penstock_over_dali":
                          round(statistics.median(rates["penstock"]) / statistics.median(rates["dali"]), 2)}))


if __name__ == "__main__":
    main()
