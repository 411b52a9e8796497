"""ResNet-50 train input pipeline into TensorFlow: penstock's DALIDataset vs an equivalent tf.data pipeline.

The same generated photo set as rn50_cpu.py (bench/photos.py, default imagenet-like), batch 64, 2 threads:
  penstock:  readers.file (shuffle) -> decoders.image_random_crop -> resize 224×224 -> crop_mirror_normalize
             (float CHW, ImageNet mean/std, random mirror), as a DALIDataset (_pipelines.py's train pipeline)
  tf_data:   list_files + shuffle -> tf.image.sample_distorted_bounding_box + tf.io.decode_and_crop_jpeg
             (same area/aspect ranges, 10 attempts) -> tf.image.resize 224×224 (bilinear, antialiased like
             penstock's resize) -> random flip -> normalize -> CHW; map(AUTOTUNE) + batch + prefetch(AUTOTUNE),
             tf.data's private thread pool limited to the same 2 threads
  tf_data_noaa: the same without antialiasing (what most TF training scripts use; not the same images)
  penstock_run: the pipeline alone (pipe.run()), to show what the DALIDataset hand-off costs
Each system runs in its own subprocess, alternating over rounds; one JSON line per system with the
median img/s and img per CPU-second, then the ratios (target: DALIDataset >= 1.3x tf_data's img/s).
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import (IMAGENET_MEAN, IMAGENET_STD, alternating_rounds, bench_parser, emit, parsed,  # noqa: E402
                     peak_rss_mb, ratios, report, run_worker, summary, timed)
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, rn50_pipeline  # noqa: E402

SYSTEMS = ("penstock", "tf_data", "tf_data_noaa", "penstock_run")


def penstock_dataset(root: str):
    import tensorflow as tf
    import penstock
    import penstock.plugin.tf as dali_tf
    pipe = rn50_pipeline(penstock, "train", root, BATCH, THREADS)
    return dali_tf.DALIDataset(pipe, output_dtypes=(tf.float32, tf.int32),
                               output_shapes=((BATCH, 3, 224, 224), (BATCH, 1)),
                               batch_size=BATCH, num_threads=THREADS, device_id=None)


def tf_data_dataset(root: str, antialias: bool):
    import tensorflow as tf
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    paths, labels = [], []
    for k, c in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(root, c))):
            paths.append(os.path.join(root, c, f))
            labels.append(k)
    mean = tf.constant(IMAGENET_MEAN, tf.float32)
    std = tf.constant(IMAGENET_STD, tf.float32)

    def load(path, label):
        data = tf.io.read_file(path)
        shape = tf.io.extract_jpeg_shape(data)
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            shape, tf.zeros([0, 0, 4], tf.float32), min_object_covered=0.0, aspect_ratio_range=(0.75, 4 / 3),
            area_range=(0.08, 1.0), max_attempts=10, use_image_if_no_bounding_boxes=True)
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.io.decode_and_crop_jpeg(data, window, channels=3)
        image = tf.image.resize(image, (224, 224), antialias=antialias)
        image = tf.image.random_flip_left_right(image)
        image = (image - mean) / std
        return tf.transpose(image, (2, 0, 1)), tf.reshape(label, (1,))

    ds = tf.data.Dataset.from_tensor_slices((paths, tf.constant(labels, tf.int32)))
    ds = ds.shuffle(len(paths), reshuffle_each_iteration=True).repeat()
    ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH, drop_remainder=True)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = THREADS
    return ds.with_options(options)


def worker(system: str, root: str, args: argparse.Namespace) -> dict:
    if system == "penstock_run":
        import penstock
        pipe = rn50_pipeline(penstock, "train", root, BATCH, THREADS)
        pipe.build()
        step = pipe.run
    else:
        import tensorflow as tf
        tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        ds = penstock_dataset(root) if system == "penstock" else tf_data_dataset(root, system == "tf_data")
        it = iter(ds)
        step = lambda: next(it)  # noqa: E731
    t = timed(step, BATCH, steps=args.batches)
    # img per CPU-second is what a system gets out of the CPU: on a shared, oversubscribed machine
    # wall-clock rates favour whichever system runs more threads, CPU efficiency does not
    return {"img_per_s": t.items_per_s, "img_per_cpu_s": t.items_per_s / t.cores_busy, "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=15, worker=("SYSTEM", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    runs = alternating_rounds(args.rounds, args.systems.split(","), lambda s: run_worker(
        __file__, ["--worker", s, root, "--batches", str(args.batches)], env={"TF_CPP_MIN_LOG_LEVEL": "2"}))
    report("tf_dataset", runs, target={"penstock_vs_tf_data": 1.3}, set=args.set, pipeline="train", batch=BATCH,
           threads=THREADS)
    if "penstock" in runs and len(runs) > 1:
        efficiency = {s: summary(r)["img_per_cpu_s"] for s, r in runs.items()}
        emit({"bench": "tf_dataset", "set": args.set, "pipeline": "train", "cpu_efficiency_ratios": ratios(efficiency)})


if __name__ == "__main__":
    main()
