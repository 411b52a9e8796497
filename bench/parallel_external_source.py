"""Parallel external source on the CPU: penstock vs NVIDIA DALI 2.4 (when installed).

A per-sample callback reads one JPEG file and its label (py_num_workers=2 worker processes),
then decode and resize to 224×224 on the CPU (``--no-decode``: nothing, the transport alone),
batch 64, 2 threads, over a generated photo set (bench/photos.py, default imagenet-like). Each system runs in its own
subprocess, alternating over rounds; one JSON line per system with the median img/s. For penstock also the per-batch transport cost in the pipeline
process (a filled shared-memory region -> the pipeline's batch, in µs; the batch views the region)
and the bytes copied per sample on the way from the worker's array to the batch (all of it in the
workers, once: bytes_copied_per_sample / payload_bytes_per_sample = copies per sample).
"penstock_serial" is the same pipeline with parallel=False (the callback in the main process).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (alternating_rounds, bench_parser, emit, library, parsed, run_worker, summary,  # noqa: E402
                     with_dali)

BATCH, THREADS, WORKERS = 64, 2, 2


class JpegSource:
    """Per-sample callback: (encoded JPEG, label) for ``idx_in_epoch``; StopIteration at the end."""

    def __init__(self, root: str):
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.files = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                      for f in sorted(os.listdir(os.path.join(root, c)))]
        self.iterations = len(self.files) // BATCH

    def __call__(self, info):
        if info.iteration >= self.iterations:
            raise StopIteration
        path, label = self.files[info.idx_in_epoch]
        with open(path, "rb") as f:
            return np.frombuffer(f.read(), np.uint8), np.array([label], np.int32)


def build(lib, root: str, parallel: bool, decode: bool = True):
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, py_num_workers=WORKERS,
                      prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.external_source(source=JpegSource(root), num_outputs=2, batch=False,
                                           parallel=parallel, dtype=[types.UINT8, types.INT32])
        if not decode:  # transport alone: the encoded files are the pipeline's output
            return jpegs, labels
        images = fn.resize(fn.decoders.image(jpegs, device="cpu", output_type=types.RGB),
                           resize_x=224, resize_y=224)
        return images, labels

    p = pipe()
    if parallel:
        p.start_py_workers()
    p.build()
    return p


def measure(system: str, root: str, batches: int, decode: bool) -> dict:
    lib = library("dali" if system == "dali" else "penstock")
    pipe = build(lib, root, parallel=system != "penstock_serial", decode=decode)

    def next_batch():
        try:
            return pipe.run()
        except StopIteration:
            pipe.reset()
            return pipe.run()

    for _ in range(3):
        next_batch()
    pool = getattr(pipe, "_py_pool", None) if system == "penstock" else None
    before = (pool.assemble_seconds, pool.copied_bytes, pool.copied_samples, pool.batches) if pool else None
    start = time.perf_counter()
    for _ in range(batches):
        next_batch()
    result = {"img_per_s": batches * BATCH / (time.perf_counter() - start)}
    if pool is not None:
        secs, nbytes, samples, n = (a - b for a, b in zip(
            (pool.assemble_seconds, pool.copied_bytes, pool.copied_samples, pool.batches), before))
        result["transport_us_per_batch"] = round(1e6 * secs / max(n, 1), 1)
        result["bytes_copied_per_sample"] = round(nbytes / max(samples, 1))
        # what a sample carries (file + label): bytes_copied_per_sample / this = copies per sample
        src = JpegSource(root)
        result["payload_bytes_per_sample"] = round(np.mean([os.path.getsize(f) for f, _ in src.files]) + 4)
    return result


def main() -> None:
    ap = bench_parser(__doc__, batches=12, worker=("SYSTEM", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--no-decode", action="store_true",
                    help="the pipeline outputs the files as read: measures the transport alone")
    args = parsed(ap, lambda system, root, a: measure(system, root, a.batches, not a.no_decode))
    if args is None:
        return
    root = photos.prepared(args)
    systems = with_dali(["penstock", "penstock_serial"], at=1)
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
        __file__, ["--worker", s, root, "--batches", str(args.batches)] + ["--no-decode"] * args.no_decode))
    dali_rate = summary(runs["dali"])["img_per_s"] if "dali" in runs else None
    for s, results in runs.items():
        line = {"system": s, "bench": "parallel_external_source" + "_transport" * args.no_decode, "set": args.set,
                "batch": BATCH, "py_num_workers": WORKERS, **summary(results),
                "img_per_s_rounds": [round(r["img_per_s"], 1) for r in results]}
        if dali_rate:
            line["vs_dali"] = round(line["img_per_s"] / dali_rate, 2)
        emit(line)


if __name__ == "__main__":
    main()
