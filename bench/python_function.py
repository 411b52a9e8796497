"""A per-sample python_function on decoded images, and the operator's own per-batch overhead.

Prints one JSON line per system and configuration:
  * "decoded_images": file reader -> CPU JPEG decode -> per-sample python_function computing each
    image's mean colour (every 4th pixel) in numpy (batch 64, 2 threads), over a generated photo set
    (bench/photos.py, default imagenet-like): images/s, and the same pipeline without the Python
    operator for reference;
  * "overhead": batch 64 of tiny samples through python_function(lambda x: x): the operator's
    time per batch beyond its function calls (converting, calling, packing), per batch and sample.
penstock runs with the default executor, with exec_async=False/exec_pipelined=False (DALI's
synchronous mode, everything on the calling thread), and as "penstock_python_in_line": the
default executor without giving Python operators their own worker. NVIDIA DALI is measured in
the same run when ``import nvidia.dali`` works.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import photos  # noqa: E402
from _common import dali_available, emit, timed  # noqa: E402

BATCH = 64
THREADS = 2


def mean_colour(image):
    return image[::4, ::4].mean(axis=(0, 1), dtype=np.float32)


def build_images(lib, root: str, with_function: bool, exec_async: bool):
    fn = lib.fn

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=1,
                      exec_async=exec_async, exec_pipelined=exec_async)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=True)
        images = fn.decoders.image(jpegs, device="cpu", output_type=lib.types.RGB)
        if with_function:
            return fn.python_function(images, function=mean_colour)
        return images

    p = pipe()
    p.build()
    return p


def build_tiny(lib, exec_async: bool):
    fn = lib.fn
    batch = [np.full((4,), k, np.float32) for k in range(BATCH)]

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None,
                      exec_async=exec_async, exec_pipelined=exec_async)
    def pipe():
        x = fn.external_source(source=lambda: batch)
        return fn.python_function(x, function=lambda s: s), x

    p = pipe()
    p.build()
    return p


def seconds_per_batch(p, iterations: int) -> float:
    return timed(p.run, BATCH, steps=iterations, warmup_steps=5).seconds_per_step


def function_seconds(lib, root: str) -> float:
    """What the function itself costs on one batch of decoded images, called directly."""
    images = build_images(lib, root, False, False).run()[0]
    samples = [np.array(images.at(i)) for i in range(len(images))]
    start = time.perf_counter()
    for _ in range(3):
        for s in samples:
            mean_colour(s)
    return (time.perf_counter() - start) / 3


def identity_calls_seconds(n: int) -> float:
    """What BATCH calls of the identity lambda cost by themselves (subtracted from the op time)."""
    f = lambda s: s  # noqa: E731
    x = np.zeros(4, np.float32)
    start = time.perf_counter()
    for _ in range(n):
        for _ in range(BATCH):
            f(x)
    return (time.perf_counter() - start) / n


def measure(lib, name: str, root: str, iterations: int, rounds: int, sync_too: bool = True) -> None:
    for exec_async in (True, False) if sync_too else (True,):
        with_fn, without = [], []
        for _ in range(rounds):  # alternate, so machine load affects both alike
            with_fn.append(seconds_per_batch(build_images(lib, root, True, exec_async), iterations))
            without.append(seconds_per_batch(build_images(lib, root, False, exec_async), iterations))
        t_fn, t_plain = float(np.median(with_fn)), float(np.median(without))
        t_calls = function_seconds(lib, root)
        emit({"bench": "python_function", "case": "decoded_images", "system": name,
              "exec_async": exec_async, "batch": BATCH, "threads": THREADS,
              "img_per_s": round(BATCH / t_fn, 1),
              "img_per_s_without_python_function": round(BATCH / t_plain, 1),
              "added_ms_per_batch": round((t_fn - t_plain) * 1e3, 2),
              "function_alone_ms_per_batch": round(t_calls * 1e3, 2)})
        if name.startswith("penstock"):
            p = build_tiny(lib, exec_async)
            seconds_per_batch(p, iterations * 4)
            op = next(n for n, s in p.executor_statistics().items() if n.startswith("python_function#"))
            op_s = p.executor_statistics()[op]["total_seconds"] / p.executor_statistics()[op]["runs"]
            overhead = op_s - identity_calls_seconds(50)
            emit({"bench": "python_function", "case": "overhead", "system": name,
                  "exec_async": exec_async, "batch": BATCH,
                  "per_batch_overhead_us": round(overhead * 1e6, 1),
                  "per_sample_overhead_us": round(overhead / BATCH * 1e6, 2)})
        else:
            p = build_tiny(lib, exec_async)
            t = seconds_per_batch(p, iterations * 4)
            emit({"bench": "python_function", "case": "overhead", "system": name,
                  "exec_async": exec_async, "batch": BATCH,
                  "pipeline_us_per_batch": round(t * 1e6, 1)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    photos.add_arguments(ap, default_images=512)
    ap.add_argument("--folder", help="a folder of JPEGs in class sub-folders, instead of a generated set")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = args.folder or photos.prepared(args)
    import penstock
    measure(penstock, "penstock", root, args.iterations, args.rounds)
    # the same with Python operators run in line with the native ones (as DALI does): what
    # their own pipelined worker gains
    from penstock.operators.python_function import PythonFunctionCPU
    PythonFunctionCPU.runs_python = False
    measure(penstock, "penstock_python_in_line", root, args.iterations, args.rounds, sync_too=False)
    PythonFunctionCPU.runs_python = True
    if not dali_available():
        emit({"bench": "python_function", "system": "dali", "skipped": "nvidia-dali not installed"})
        return
    import nvidia.dali as dali
    measure(dali, "dali", root, args.iterations, args.rounds)


if __name__ == "__main__":
    main()
