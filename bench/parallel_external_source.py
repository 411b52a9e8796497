"""Parallel external source on the CPU: penstock vs NVIDIA DALI 2.4 (when installed).

A per-sample callback reads one JPEG file and its label (py_num_workers=2 worker processes),
then decode and resize to 224×224 on the CPU (``--no-decode``: nothing, the transport alone),
batch 64, 2 threads, over generated ImageNet-like JPEGs (500×375). Each system runs in its own
subprocess, alternating over rounds; one JSON line per system with the median img/s. For penstock also the per-batch transport cost in the pipeline
process (a filled shared-memory region -> the pipeline's batch, in µs; the batch views the region)
and the bytes copied per sample on the way from the worker's array to the batch (all of it in the
workers, once: bytes_copied_per_sample / payload_bytes_per_sample = copies per sample).
"penstock_serial" is the same pipeline with parallel=False (the callback in the main process).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

BATCH, THREADS, WORKERS = 64, 2, 2


class JpegSource:
    """Per-sample callback: (encoded JPEG, label) for ``idx_in_epoch``; StopIteration at the end."""

    def __init__(self, root: str):
        classes = sorted(os.listdir(root))
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
    if system == "dali":
        import nvidia.dali as lib
    else:
        import penstock as lib
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


def available_systems() -> list[str]:
    systems = ["penstock", "penstock_serial"]
    try:
        import nvidia.dali  # noqa: F401
        systems.insert(1, "dali")
    except ImportError:
        pass
    return systems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "bench_parallel_es"))
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-decode", action="store_true",
                    help="the pipeline outputs the files as read: measures the transport alone")
    ap.add_argument("--worker", metavar="SYSTEM")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.root, args.batches, not args.no_decode)))
        return
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=4, per_class=args.images // 4, size=(375, 500))
    systems = available_systems()
    runs: dict[str, list[dict]] = {s: [] for s in systems}
    for _ in range(args.rounds):
        for s in systems:
            cmd = [sys.executable, __file__, "--root", args.root, "--batches", str(args.batches), "--worker", s]
            out = subprocess.run(cmd + ["--no-decode"] * args.no_decode, capture_output=True, text=True, check=True)
            runs[s].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for s in systems:
        rates = [r["img_per_s"] for r in runs[s]]
        line = {"system": s, "bench": "parallel_external_source" + "_transport" * args.no_decode, "batch": BATCH,
                "py_num_workers": WORKERS,
                "img_per_s": round(statistics.median(rates), 1), "rounds": [round(r, 1) for r in rates]}
        extra = {k: statistics.median(r[k] for r in runs[s]) for k in runs[s][0] if k != "img_per_s"}
        line.update(extra)
        if "dali" in runs:
            line["vs_dali"] = round(line["img_per_s"] / statistics.median(r["img_per_s"] for r in runs["dali"]), 2)
        print(json.dumps(line))


if __name__ == "__main__":
    main()
