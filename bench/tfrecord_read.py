"""Throughput of readers.tfrecord's native read (``_engine.tfrecord_read``): records read from the
page cache, their CRC32Cs verified and their Examples parsed, a batch at a time.

Two record sizes: ~110 KB (an ImageNet JPEG and its label) and ~1 KB (small features). Each
configuration is timed as the best of ``--repeat`` passes over the whole file (warm cache), so
the numbers are the CPU cost of reading, checking and parsing, not the disk's. One JSON line per
configuration. Run it against two builds of the engine (``PYTHONPATH=…/core``) to compare them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from penstock import _engine
from penstock.tfrecord import make_index

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from make_sample_data import tf_example, tfrecord_record  # noqa: E402


def write_file(path: str, count: int, payload: int) -> None:
    """``count`` records cycling through 16 distinct ones (their CRCs computed once: Python CRC32C
    is slow)."""
    rng = np.random.default_rng(0)
    distinct = [tfrecord_record(tf_example({"image/encoded": rng.bytes(payload), "image/class/label": [label]}))
                for label in range(16)]
    with open(path, "wb") as f:
        for i in range(count):
            f.write(distinct[i % len(distinct)])


def measure(path: str, index: str, batch: int, threads: int, repeat: int) -> dict:
    table = np.loadtxt(index, np.int64).reshape(-1, 2)
    pool = _engine.ThreadPool(threads)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for b in range(0, len(table), batch):
            rows = table[b:b + batch]
            _engine.tfrecord_read(pool, [path] * len(rows), rows[:, 0].copy(), rows[:, 1].copy(),
                                  ["image/encoded", "image/class/label"], [0, 2])
        best = min(best, time.perf_counter() - start)
    total = int(table[:, 1].sum())
    return {"records_per_s": round(len(table) / best), "MB_per_s": round(total / best / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for payload, count in ((110_000, 2048), (1_000, 65536)):
            path, index = os.path.join(tmp, f"{payload}.tfrecord"), os.path.join(tmp, f"{payload}.idx")
            write_file(path, count, payload)
            make_index(path, index)
            for threads in (1, 2):
                result = measure(path, index, a.batch, threads, a.repeat)
                print(json.dumps({"record_bytes": payload, "records": count, "threads": threads, **result}),
                      flush=True)


if __name__ == "__main__":
    main()
