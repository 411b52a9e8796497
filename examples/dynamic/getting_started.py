"""Getting started with the dynamic mode: operators called directly on images, no pipeline.

Reads an ImageFolder of JPEGs (generated if --data is not given) with ``ndd.readers.File``,
decodes a batch, augments it (random crops, flips, colour, normalization), looks at the results
as a Python user does (shapes, values, single samples), and hands the batch to PyTorch. Each call
returns a Batch (or a Tensor for one sample) at once; the work runs in the background and a
result is computed by the time it is read. ``--device gpu`` runs it on the GPU.

    python examples/dynamic/getting_started.py [--data DIR] [--batch 8] [--device cpu|gpu]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

import penstock.experimental.dynamic as ndd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_sample_data import make_dataset  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def augment(jpegs: ndd.Batch, device: str, size: int = 96) -> ndd.Batch:
    """Decode, crop and resize, jitter the colours, mirror and normalize a batch of JPEGs."""
    n = jpegs.batch_size
    images = ndd.decoders.image_random_crop(jpegs, device=device, random_area=[0.3, 1.0])
    images = ndd.resize(images, size=(size, size))
    images = ndd.color_twist(images, brightness=ndd.random.uniform(batch_size=n, range=(0.8, 1.2)),
                             saturation=ndd.random.uniform(batch_size=n, range=(0.7, 1.3)))
    return ndd.crop_mirror_normalize(images, mean=MEAN, std=STD, mirror=ndd.random.coin_flip(batch_size=n),
                                     dtype=ndd.float32, output_layout="CHW")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="an ImageFolder of JPEGs (default: a generated one)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = ap.parse_args(argv)
    root = args.data or make_dataset(os.path.join(tempfile.gettempdir(), "penstock_dynamic_example"),
                                     classes=2, per_class=8, size=(120, 160))
    ndd.random.set_seed(42)  # every random draw below is reproducible from here

    # One image: a Tensor, read and decoded in one call
    first = os.path.join(root, sorted(os.listdir(root))[0])
    image = ndd.imread(os.path.join(first, sorted(os.listdir(first))[0]))
    print("one image:", image.shape, image.dtype, image.layout)
    print("its top-left pixel:", np.asarray(image)[0, 0].tolist())
    print("flipped, then its top-right pixel:", np.asarray(ndd.flip(image, horizontal=1))[0, -1].tolist())

    # Batches from a reader: the reader keeps its place from one epoch to the next
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=1)
    jpegs, labels = next(reader.next_epoch(batch_size=args.batch))
    batch = augment(jpegs, args.device)
    print("a batch:", batch.batch_size, "samples of", batch.shape[0], batch.dtype, batch.layout, "on", batch.device)
    print("labels:", np.asarray(ndd.as_tensor(labels)).ravel().tolist())
    print("sample 0's mean per channel:", [round(float(v), 3) for v in np.asarray(batch.tensors[0].cpu()).mean(axis=(1, 2))])

    # Arithmetic works on batches like on arrays
    brighter = batch * 1.5 + 0.1
    print("arithmetic on the batch:", brighter.batch_size, "samples of", brighter.shape[0], brighter.dtype)

    result = {"image": image.shape, "batch": [batch.batch_size, *batch.shape[0]]}
    try:
        import torch
    except ImportError:
        return result
    images = batch.torch()  # one (N, C, H, W) tensor; on the GPU, shared with torch without a copy
    print("for PyTorch:", tuple(images.shape), images.dtype, images.device)
    result["torch"] = tuple(images.shape)
    return result


if __name__ == "__main__":
    main()
