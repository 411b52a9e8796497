"""Feeding JAX on the CPU: penstock's data_iterator vs NVIDIA DALI's (when installed), in the same run.

1. Iterator overhead: a pipeline of tiny external_source outputs, timed per batch through
   pipe.run() and through the JAX iterator (one dict of jax.Arrays per step); the difference is
   what the iterator adds per batch.
2. Loader throughput: the ResNet-50 train pipeline of _pipelines.py (batch 64, 2 threads) through
   each system's data_iterator decorator, each batch consumed by a jitted reduction so the arrays
   are really used, over a generated photo set (bench/photos.py). Each system in its own
   subprocess, alternating over rounds; one JSON line per system.

    python bench/jax_iterator.py [--set imagenet-like] [--images 512] [--batches 15] [--rounds 3]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _loader_bench  # noqa: E402
from _common import cycling, library, timed  # noqa: E402
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, rn50_graph  # noqa: E402


def loader_rate(system: str, root: str, batches: int) -> dict:
    """Images per second delivered as jax.Arrays and reduced by a jitted step."""
    import jax
    lib, plugin = library(system), library(system, "jax")

    @plugin.data_iterator(output_map=["images", "labels"], reader_name="Reader", auto_reset=True)
    def train():
        return rn50_graph(lib, "train", root)

    next_batch = cycling(train(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=7))
    reduce = jax.jit(lambda images, labels: images.mean() + labels.sum())

    def step():
        batch = next_batch()
        reduce(batch["images"], batch["labels"]).block_until_ready()
    return timed(step, BATCH, steps=batches).rates()


if __name__ == "__main__":
    _loader_bench.main(__file__, __doc__, "jax", ["penstock"], loader_rate, overhead_batches=3500)
