"""Trains a small Keras CNN for one epoch on generated JPEGs, fed by penstock's DALIDataset.

The pipeline decodes, resizes, mirrors and normalizes on penstock's threads; TensorFlow gets
float32 NHWC batches and int32 labels as a tf.data.Dataset (zero-copy for the image batches).
A DALIDataset streams forever, so Keras is told how many steps make an epoch.

    python examples/tensorflow/keras_fit.py [--data DIR] [--batch 32] [--size 64]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import tensorflow as tf

from penstock import fn, pipeline_def, types
import penstock.plugin.tf as dali_tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_sample_data import make_dataset  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train_pipeline(root: str, batch_size: int, size: int, threads: int):
    @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=None, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=size, resize_y=size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels
    return pipe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", help="ImageFolder of JPEGs (generated in a temporary directory if not given)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or make_dataset(os.path.join(tmp, "jpegs"), classes=4, per_class=32, size=(120, 160))
        pipe = train_pipeline(root, args.batch, args.size, args.threads)
        classes = len([d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))])
        steps = pipe.epoch_size("Reader") // args.batch
        dataset = dali_tf.DALIDataset(
            pipe, output_dtypes=(tf.float32, tf.int32),
            output_shapes=((args.batch, args.size, args.size, 3), (args.batch,)),  # labels' unit dim squeezed
            batch_size=args.batch, num_threads=args.threads, device_id=None)
        model = tf.keras.Sequential([
            tf.keras.Input((args.size, args.size, 3)),
            tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            tf.keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(classes)])
        model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        start = time.perf_counter()
        history = model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)
        seconds = time.perf_counter() - start
    print(json.dumps({"example": "keras_fit", "steps": steps, "batch": args.batch,
                      "loss": round(history.history["loss"][-1], 4),
                      "accuracy": round(history.history["accuracy"][-1], 4), "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
