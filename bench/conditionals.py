"""Conditional execution: rotate 25% of the images (the conditionals example of the spec) versus
rotating all of them, on the CPU.

Prints one JSON line per system: penstock with the conditional, penstock rotating every image,
and, when NVIDIA DALI is installed, DALI with the same conditional pipeline in the same run.
Targets: the conditional pipeline costs less than rotating everything, and runs >= 1.3x DALI's.
Images are decoded once and fed by external_source, so the measured work is the rotation and
the split/merge around it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import time

import numpy as np


def images(batch: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (400 + 8 * (i % 5), 500, 3), dtype=np.uint8) for i in range(batch)]


def build(lib, batch: int, threads: int, conditional: bool):
    fn, types = lib.fn, lib.types
    data = images(batch)

    @lib.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=1,
                      enable_conditionals=conditional)
    def rotate_some():
        img = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=types.DALIDataType.BOOL)
        if do_rotate:
            result = fn.rotate(img, angle=fn.random.uniform(range=(10, 30)), fill_value=0)
        else:
            result = img
        return result

    @lib.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=1)
    def rotate_all():
        img = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        return fn.rotate(img, angle=fn.random.uniform(range=(10, 30)), fill_value=0)

    p = rotate_some() if conditional else rotate_all()
    p.build()
    return p


def images_per_second(p, batch: int, iterations: int) -> float:
    for _ in range(3):
        p.run()
    start = time.perf_counter()
    for _ in range(iterations):
        p.run()
    return batch * iterations / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; the median is reported")
    args = ap.parse_args()
    systems = [("penstock", "penstock", True), ("penstock rotate all", "penstock", False)]
    try:
        importlib.import_module("nvidia.dali")
        systems.append(("DALI", "nvidia.dali", True))
    except ImportError:
        pass
    pipes = {name: build(importlib.import_module(mod), args.batch, args.threads, cond) for name, mod, cond in systems}
    rates: dict[str, list[float]] = {name: [] for name in pipes}
    for _ in range(args.rounds):
        for name, p in pipes.items():
            rates[name].append(images_per_second(p, args.batch, args.iterations))
    for name, _, cond in systems:
        print(json.dumps({"bench": "conditionals", "system": name,
                          "pipeline": "rotate 25% (conditional)" if cond else "rotate all",
                          "batch": args.batch, "threads": args.threads,
                          "images_per_s": round(float(np.median(rates[name])), 1)}))


if __name__ == "__main__":
    main()
