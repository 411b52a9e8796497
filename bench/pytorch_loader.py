"""Feeding PyTorch on the CPU: penstock's DALIClassificationIterator vs DataLoader vs NVIDIA DALI's iterator.

1. Loader throughput: the ResNet-50 train pipeline of _pipelines.py (batch 64, 2 threads)
   delivered as torch tensors through each system's PyTorch iterator, against
   torch.utils.data.DataLoader with the same transforms in PIL + torch (num_workers=2), over a
   generated photo set (bench/photos.py). Each system in its own subprocess, alternating over
   rounds; one JSON line per system.
2. Iterator overhead: a pipeline of tiny external_source outputs, timed per batch through
   pipe.run() and through the iterator; the difference is what the iterator adds per batch.

    python bench/pytorch_loader.py [--set imagenet-like] [--images 512] [--batches 15] [--rounds 3]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _loader_bench  # noqa: E402
from _common import cycling, library, timed  # noqa: E402
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, rn50_pipeline  # noqa: E402


def loader_rate(system: str, root: str, batches: int) -> dict:
    """Images per second delivered as torch tensors."""
    if system == "dataloader":
        from torch_baseline import make_loader
        loader = make_loader("train", root, BATCH, THREADS)
    else:
        loader = library(system, "pytorch").DALIClassificationIterator(
            rn50_pipeline(library(system), "train", root, BATCH, THREADS), reader_name="Reader", auto_reset=True)
    return timed(cycling(loader), BATCH, steps=batches).rates()


if __name__ == "__main__":
    _loader_bench.main(__file__, __doc__, "pytorch", ["penstock", "dataloader"], loader_rate, overhead_batches=7000,
                       dali_at=1)
