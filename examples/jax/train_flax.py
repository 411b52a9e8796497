"""Trains a small Flax CNN for a few optax steps on JPEGs fed by penstock's data_iterator (CPU).

The pipeline decodes, randomly crops and mirrors, resizes and normalizes the images (float HWC,
as Flax convolutions take them); the iterator hands over batches sharded over every JAX device
(one pipeline per device, each on its own shard of the files), and the jitted train step runs
data-parallel over that sharding, with the parameters replicated.

    python examples/jax/train_flax.py [--data DIR] [--steps 20] [--batch 16]
    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/jax/train_flax.py
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from penstock import fn, types
from penstock.plugin.jax import data_iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_sample_data import make_dataset  # noqa: E402

SIZE, CLASSES = 32, 4
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train_data(root: str, shard_id: int = 0, num_shards: int = 1):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, shard_id=shard_id, num_shards=num_shards,
                                    name="Reader")
    images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB, random_area=[0.5, 1.0])
    images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", mean=MEAN, std=STD,
                                      mirror=fn.random.coin_flip())
    return images, labels


class SmallCNN(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for features in (16, 32):
            x = nn.relu(nn.Conv(features, (3, 3))(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(CLASSES)(x.mean(axis=(1, 2)))


def main(argv: list[str] | None = None) -> list[float]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="ImageFolder of JPEGs with 4 classes (default: generated)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16, help="global batch size")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args(argv)
    root = args.data or make_dataset(os.path.join(tempfile.mkdtemp(), "train"), classes=CLASSES, per_class=12,
                                     size=(60, 80))

    mesh = Mesh(jax.devices(), ("batch",))
    data_sharding = NamedSharding(mesh, PartitionSpec("batch"))
    replicated = NamedSharding(mesh, PartitionSpec())
    loader = data_iterator(train_data, output_map=["images", "labels"], reader_name="Reader",
                           sharding=data_sharding, auto_reset=True)(root, batch_size=args.batch, seed=0)

    model = SmallCNN()
    params = jax.device_put(model.init(jax.random.key(0), jnp.zeros((1, SIZE, SIZE, 3))), replicated)
    optimizer = optax.adam(args.lr)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, images, labels):
        def loss_fn(p):
            logits = model.apply(p, images)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels[:, 0]).mean()
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    step = 0
    while step < args.steps:
        for batch in loader:
            params, opt_state, loss = train_step(params, opt_state, batch["images"], batch["labels"])
            losses.append(float(loss))
            step += 1
            if step == args.steps:
                break
    print(json.dumps({"steps": len(losses), "devices": len(jax.devices()), "first_loss": round(losses[0], 4),
                      "last_loss": round(losses[-1], 4)}))
    return losses


if __name__ == "__main__":
    main()
