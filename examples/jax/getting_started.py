"""Getting started with penstock and JAX: a data_iterator over JPEGs, on one device and sharded.

The pipeline reads an ImageFolder of JPEGs (generated if --data is not given), decodes,
randomly rotates and resizes them; the iterator hands each batch to JAX as a dict of
``jax.Array``s. With a ``NamedSharding`` over every device, each device runs its own pipeline on
its own shard of the files and the batch arrives as one global array, ready for ``jax.jit``.

    python examples/jax/getting_started.py [--data DIR] [--batch 8]
    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/jax/getting_started.py
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from penstock import fn
from penstock.plugin.jax import data_iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_sample_data import make_dataset  # noqa: E402

SIZE = 128


def images_and_labels(root: str, shard_id: int = 0, num_shards: int = 1):
    """The graph: every data_iterator below is made from this one function."""
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, shard_id=shard_id, num_shards=num_shards,
                                    name="Reader")
    images = fn.decoders.image(jpegs)
    images = fn.rotate(images, angle=fn.random.uniform(range=(-10.0, 10.0)), fill_value=0)
    images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
    return images, labels


@jax.jit
def brightness_per_label(images: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean brightness of the batch's images of each of 4 classes (a stand-in for a training step)."""
    brightness = images.astype(jnp.float32).mean(axis=(1, 2, 3))
    onehot = jax.nn.one_hot(labels[:, 0], 4)
    return (onehot * brightness[:, None]).sum(0) / jnp.maximum(onehot.sum(0), 1)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="ImageFolder of JPEGs (default: 64 generated images)")
    ap.add_argument("--batch", type=int, default=8, help="global batch size")
    args = ap.parse_args(argv)
    root = args.data or make_dataset(os.path.join(tempfile.mkdtemp(), "images"), classes=4, per_class=16,
                                     size=(120, 160))
    report = {}

    # One device: the pipeline's batch, as it is.
    single = data_iterator(images_and_labels, output_map=["images", "labels"], reader_name="Reader")
    it = single(root, batch_size=args.batch, seed=0, device_id=None)
    print(f"one device: {len(it)} batches per epoch")
    for step, batch in enumerate(it):
        if step == 0:
            print(f"  images {batch['images'].shape} {batch['images'].dtype} on {batch['images'].device}, "
                  f"labels {batch['labels'].shape}")
        report.setdefault("single", []).append(np.asarray(brightness_per_label(batch["images"], batch["labels"])))

    # Every device: one pipeline per device, one global array per output.
    sharding = NamedSharding(Mesh(jax.devices(), ("batch",)), PartitionSpec("batch"))
    sharded = data_iterator(images_and_labels, output_map=["images", "labels"], reader_name="Reader",
                            sharding=sharding)
    it = sharded(root, batch_size=args.batch * len(jax.devices()), seed=0)
    print(f"{len(jax.devices())} device(s): {len(it)} batches per epoch, sharding {sharding}")
    for step, batch in enumerate(it):
        images = batch["images"]
        if step == 0:
            for shard in images.addressable_shards:
                print(f"  shard on {shard.device}: {shard.data.shape}")
        report.setdefault("sharded", []).append(np.asarray(brightness_per_label(images, batch["labels"])))
    return report


if __name__ == "__main__":
    main()
