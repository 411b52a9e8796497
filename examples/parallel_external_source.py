"""Parallel external source: a per-sample Python loader run by worker processes.

A callable reads one JPEG and its label per call (``SampleInfo`` says which), raising
StopIteration at the end of the epoch. Two pipelines (training with a random contrast,
validation with a fixed one) each get 4 worker processes, started with ``start_py_workers()``
before anything is built: forked workers must exist before the process touches CUDA.

    python examples/parallel_external_source.py            # CPU decoding
    python examples/parallel_external_source.py --device mixed   # GPU decoding (GPU machine)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from penstock import fn, pipeline_def, types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_data import make_dataset  # noqa: E402


class JpegLoader:
    """Per-sample source: (encoded JPEG, label) for ``sample_info.idx_in_epoch``."""

    def __init__(self, root: str, batch_size: int):
        classes = sorted(os.listdir(root))
        self.files = [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
                      for f in sorted(os.listdir(os.path.join(root, c)))]
        self.full_iterations = len(self.files) // batch_size  # a partial last batch is dropped

    def __call__(self, sample_info):
        if sample_info.iteration >= self.full_iterations:
            raise StopIteration  # end of the epoch; later indices keep raising
        path, label = self.files[sample_info.idx_in_epoch]
        with open(path, "rb") as f:
            return np.frombuffer(f.read(), np.uint8), np.int32([label])


def make_pipeline(root: str, batch_size: int, device: str, train: bool):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None if device == "cpu" else 0,
                  py_num_workers=4, py_start_method="fork")
    def pipe():
        jpegs, labels = fn.external_source(source=JpegLoader(root, batch_size), num_outputs=2, batch=False,
                                           parallel=True, dtype=[types.UINT8, types.INT32])
        images = fn.decoders.image(jpegs, device=device, output_type=types.RGB)
        contrast = fn.random.uniform(range=(1.0, 3.0)) if train else 1.5
        return fn.brightness_contrast(images, contrast=contrast), labels

    return pipe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "mixed"], help="where images are decoded")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--root", help="ImageFolder-style JPEG directory (default: generated sample data)")
    args = ap.parse_args()
    root = args.root or make_dataset(os.path.join(tempfile.gettempdir(), "penstock_parallel_es"),
                                     classes=3, per_class=12, size=(240, 320))
    pipelines = {"train": make_pipeline(root, args.batch_size, args.device, True),
                 "val": make_pipeline(root, args.batch_size, args.device, False)}
    for pipe in pipelines.values():
        pipe.start_py_workers()  # before build(): nothing has touched the GPU yet
    for pipe in pipelines.values():
        pipe.build()
    for name, pipe in pipelines.items():
        start, batches, samples = time.perf_counter(), 0, 0
        try:
            while True:
                images, labels = pipe.run()
                batches += 1
                samples += len(images)
        except StopIteration:
            pipe.reset()
        first = images.as_cpu().at(0)
        print(f"{name}: {batches} batches, {samples} images in {time.perf_counter() - start:.2f} s; "
              f"first image {first.shape} {first.dtype}, last labels {labels.as_array().ravel().tolist()}")
        print(f"  shared memory: {pipe.external_source_shm_statistics()}")


if __name__ == "__main__":
    main()
