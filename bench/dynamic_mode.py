"""The dynamic mode's cost on the CPU: a user's loop over batches in the dynamic mode against the same
graph as a pipeline, and against a Python loop over samples.

The ResNet-50 input graphs of _pipelines.py (train: random-crop decode, resize, mirror-normalize;
val: decode, resize, center crop-normalize), batch 64, 2 threads, over a generated photo set
(bench/photos.py). Systems, each in its own process, alternating over rounds:

  pipeline          penstock's pipeline (the reference)
  dynamic           ndd.readers.File + ndd calls per batch, EvalMode.default (eager: in the background)
  dynamic-deferred  the same loop under EvalMode.deferred (calls evaluated together when read)
  samples           the same calls on one sample at a time (a Python loop over the batch's samples)
  dali-dynamic      DALI 2.4's dynamic mode running the dynamic loop, when `import nvidia.dali` works

One JSON line per (system, graph) with the median img/s and host CPU per image, then the ratios of
penstock's pipeline over the others; the target is dynamic >= 0.9 x pipeline.

    python bench/dynamic_mode.py [--set imagenet-like] [--images 512] [--rounds 3] [--pipelines train,val]
"""
from __future__ import annotations

import importlib
import itertools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (IMAGENET_MEAN, IMAGENET_STD, alternating_rounds, bench_parser, dali_available, emit,  # noqa: E402
                     library, parsed, peak_rss_mb, ratios, run_worker, summary, timed)
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, KINDS, rn50_pipeline  # noqa: E402

SYSTEMS = ("pipeline", "dynamic", "dynamic-deferred", "samples")
DYNAMIC_MODULES = {"dali-dynamic": "nvidia.dali.experimental.dynamic"}


def dynamic_graph(ndd, kind: str, jpegs, batch_size: int | None, size: int = 224):
    """rn50_graph's operators called in the dynamic mode on one Batch (or one Tensor of encoded data)."""
    if kind == "train":
        images = ndd.decoders.image_random_crop(jpegs, random_area=[0.08, 1.0], random_aspect_ratio=[0.75, 4 / 3],
                                                num_attempts=10)
        images = ndd.resize(images, resize_x=size, resize_y=size)
        mirror = ndd.random.coin_flip(batch_size=batch_size)
        return ndd.crop_mirror_normalize(images, dtype=ndd.float32, output_layout="CHW", mean=IMAGENET_MEAN,
                                         std=IMAGENET_STD, mirror=mirror)
    images = ndd.decoders.image(jpegs)
    images = ndd.resize(images, resize_shorter=round(size * 256 / 224))
    return ndd.crop_mirror_normalize(images, dtype=ndd.float32, output_layout="CHW", crop=(size, size),
                                     mean=IMAGENET_MEAN, std=IMAGENET_STD)


def dynamic_step(system: str, kind: str, root: str):
    """One batch of the dynamic-mode loop, as a user writes it: read, process, evaluate."""
    ndd = importlib.import_module(DYNAMIC_MODULES.get(system, "penstock.experimental.dynamic"))
    ndd.set_num_threads(THREADS)
    reader = ndd.readers.File(file_root=root, random_shuffle=(kind == "train"), seed=7)
    batches = itertools.chain.from_iterable(reader.next_epoch(batch_size=BATCH) for _ in itertools.count())
    mode = ndd.EvalMode.deferred if system == "dynamic-deferred" else ndd.EvalMode.default

    def step():
        jpegs, labels = next(batches)
        with mode:
            if system == "samples":
                images = [dynamic_graph(ndd, kind, t, None).evaluate() for t in jpegs.tensors]
            else:
                images = dynamic_graph(ndd, kind, jpegs, BATCH).evaluate()
        return images, labels
    return step


def worker(system: str, kind: str, root: str, args) -> dict:
    if system == "pipeline":
        pipe = rn50_pipeline(library("penstock"), kind, root, BATCH, THREADS)
        pipe.build()
        step = pipe.run
    else:
        step = dynamic_step(system, kind, root)
    return {**timed(step, BATCH, steps=args.batches).rates(), "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=12, worker=("SYSTEM", "PIPELINE", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--pipelines", default=",".join(KINDS))
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    systems = list(SYSTEMS) + (["dali-dynamic"] if dali_available() else [])
    for kind in args.pipelines.split(","):
        runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
            __file__, ["--worker", s, kind, root, "--batches", str(args.batches)]))
        rates = {}
        for system, results in runs.items():
            emit({"bench": "dynamic_mode", "pipeline": kind, "batch": BATCH, "threads": THREADS, "set": args.set,
                  "system": system, **summary(results)})
            rates[system] = summary(results)["img_per_s"]
        emit({"bench": "dynamic_mode", "pipeline": kind, "ratios": ratios(rates, subject="dynamic"),
              "target": {"dynamic_vs_pipeline": 0.9}})


if __name__ == "__main__":
    main()
