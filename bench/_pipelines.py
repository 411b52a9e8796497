"""The pipelines the benchmarks run, written once for any library with DALI's API (penstock or
nvidia.dali, passed as ``lib``).

ResNet-50's input pipelines (as in DALI's ImageNet training example):
  train: readers.file (shuffle) -> decoders.image_random_crop (area 0.08-1, aspect 3/4-4/3,
         10 attempts) -> resize size x size -> crop_mirror_normalize (float, ImageNet mean/std,
         coin-flip mirror)
  val:   readers.file -> decoders.image -> resize(resize_shorter=size*256/224) -> crop_mirror_normalize
         (centre crop size x size)
On the GPU the decoders are "mixed" (host parsing, GPU decoding) and the labels move to the GPU.
"""
from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from _common import IMAGENET_MEAN, IMAGENET_STD, timed

KINDS = ("train", "val")
# The CPU benchmarks' batch and threads (workers, for DataLoader and tf.data): sized for the 2-core
# machine they are published from.
CPU_BATCH, CPU_THREADS = 64, 2
GPU_BATCH = 256  # the GPU benchmarks' batch, as the issue that set their targets measured


def rn50_graph(lib, kind: str, root: str, device: str = "cpu", size: int = 224, layout: str = "CHW",
               decoder_args: dict | None = None, shard_id: int = 0, num_shards: int = 1):
    """The graph of a ResNet-50 input pipeline, to call inside a pipeline definition: (images, labels)
    of shard ``shard_id`` of ``num_shards``."""
    fn, types = lib.fn, lib.types
    decoder = {"device": "mixed" if device == "gpu" else "cpu", "output_type": types.RGB, **(decoder_args or {})}

    def on_device(images):
        # a GPU pipeline asked to decode on the host (decoder_args={"device": "cpu"}) augments on the GPU
        return images.gpu() if device == "gpu" and decoder["device"] == "cpu" else images

    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=(kind == "train"), shard_id=shard_id,
                                    num_shards=num_shards, name="Reader")
    if kind == "train":
        images = on_device(fn.decoders.image_random_crop(jpegs, random_area=[0.08, 1.0],
                                                         random_aspect_ratio=[0.75, 4 / 3], num_attempts=10, **decoder))
        images = fn.resize(images, resize_x=size, resize_y=size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=layout, mean=IMAGENET_MEAN,
                                          std=IMAGENET_STD, mirror=fn.random.coin_flip())
    elif kind == "val":
        images = on_device(fn.decoders.image(jpegs, **decoder))
        images = fn.resize(images, resize_shorter=round(size * 256 / 224))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=layout, crop=(size, size),
                                          mean=IMAGENET_MEAN, std=IMAGENET_STD)
    else:
        raise ValueError(f"unknown pipeline {kind!r}: one of {KINDS}")
    return images, labels.gpu() if device == "gpu" else labels


def rn50_pipeline(lib, kind: str, root: str, batch: int, threads: int, device: str = "cpu", seed: int = 7,
                  device_id: int = 0, **graph_args) -> Any:
    """A ResNet-50 input pipeline (not built), on GPU ``device_id`` when ``device`` is "gpu"."""

    @lib.pipeline_def(batch_size=batch, num_threads=threads, device_id=device_id if device == "gpu" else None,
                      seed=seed)
    def pipe():
        return rn50_graph(lib, kind, root, device, **graph_args)

    return pipe()


def tiny_pipeline(lib, batch: int, threads: int) -> Any:
    """A pipeline whose work is nothing: ``batch`` int32[1] samples from an external source."""
    samples = [np.array([i], np.int32) for i in range(batch)]

    @lib.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return lib.fn.external_source(source=lambda: samples, batch=True)
    return pipe()


def iterator_overhead(lib, plugin, batch: int, threads: int, batches: int, repeats: int = 7) -> dict:
    """Microseconds per batch of pipe.run() and of a framework iterator (``plugin``'s
    DALIGenericIterator) over the same tiny pipeline, and their difference: what the iterator adds.
    Medians of ``repeats`` alternating blocks (the machine's noise hits both alike)."""
    pipe = tiny_pipeline(lib, batch, threads)
    pipe.build()
    it = plugin.DALIGenericIterator(tiny_pipeline(lib, batch, threads), ["x"])
    runs, iters, block = [], [], batches // repeats
    for _ in range(repeats):
        runs.append(timed(pipe.run, 1, steps=block, warmup_steps=20).seconds_per_step)
        iters.append(timed(lambda: next(it), 1, steps=block, warmup_steps=20).seconds_per_step)
    run_s, iter_s = statistics.median(runs), statistics.median(iters)
    return {"run_us_per_batch": round(run_s * 1e6, 1), "iterator_us_per_batch": round(iter_s * 1e6, 1),
            "overhead_us_per_batch": round((iter_s - run_s) * 1e6, 1)}
