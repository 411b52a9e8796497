"""ResNet-50 train input pipeline into TensorFlow: penstock's DALIDataset vs an equivalent tf.data pipeline.

Same generated JPEGs as rn50_cpu.py (≈500×400, ≈95 KB), batch 64, 2 threads:
  penstock:  readers.file (shuffle) -> decoders.image_random_crop -> resize 224×224 -> crop_mirror_normalize
             (float CHW, ImageNet mean/std, random mirror), as a DALIDataset (rn50_cpu.py's pipeline)
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
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

from rn50_cpu import BATCH, MEAN, STD, THREADS, dali_like_pipeline  # noqa: E402

SYSTEMS = ("penstock", "tf_data", "tf_data_noaa", "penstock_run")


def penstock_dataset(root: str):
    import tensorflow as tf
    import penstock
    import penstock.plugin.tf as dali_tf
    pipe = dali_like_pipeline(penstock, "train", root)
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
    mean = tf.constant(MEAN, tf.float32)
    std = tf.constant(STD, tf.float32)

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


def timed(step, batches: int) -> tuple[float, float]:
    """(img/s, img per CPU-second of the whole process) over ``batches`` calls of ``step`` after 3 warm-ups.

    The second is what a system gets out of the CPU: on a shared, oversubscribed machine wall-clock
    rates favour whichever system runs more threads, CPU efficiency does not."""
    for _ in range(3):
        step()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        step()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return batches * BATCH / wall, batches * BATCH / cpu


def run_dataset(ds, batches: int) -> tuple[float, float]:
    it = iter(ds)
    return timed(lambda: next(it), batches)


def run_pipeline(root: str, batches: int) -> tuple[float, float]:
    import penstock
    pipe = dali_like_pipeline(penstock, "train", root)
    return timed(pipe.run, batches)


def worker(system: str, root: str, batches: int) -> None:
    if system == "penstock_run":
        rate, efficiency = run_pipeline(root, batches)
    else:
        import tensorflow as tf
        tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        ds = penstock_dataset(root) if system == "penstock" else tf_data_dataset(root, system == "tf_data")
        rate, efficiency = run_dataset(ds, batches)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"img_per_s": rate, "img_per_cpu_s": efficiency, "peak_rss_mb": round(rss / 1024, 1)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "bench_imagenet_like"))
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--worker", metavar="SYSTEM")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.root, args.batches)
        return
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=8, per_class=args.images // 8, size=(400, 500), noise_sigma=17.0)
    systems = args.systems.split(",")
    results: dict[str, list[dict]] = {s: [] for s in systems}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    for _ in range(args.rounds):
        for system in systems:
            out = subprocess.run([sys.executable, __file__, "--worker", system, "--root", args.root,
                                  "--batches", str(args.batches)], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise RuntimeError(f"{system} failed:\n{out.stderr[-2000:]}")
            results[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians, efficiency = {}, {}
    for system, runs in results.items():
        medians[system] = statistics.median(r["img_per_s"] for r in runs)
        efficiency[system] = statistics.median(r["img_per_cpu_s"] for r in runs)
        print(json.dumps({"bench": "tf_dataset", "pipeline": "train", "system": system, "batch": BATCH,
                          "threads": THREADS, "img_per_s": round(medians[system], 1),
                          "img_per_cpu_s": round(efficiency[system], 1),
                          "peak_rss_mb": max(r["peak_rss_mb"] for r in runs), "rounds": len(runs)}))
    if "penstock" in medians:
        others = [s for s in medians if s != "penstock"]
        print(json.dumps({"bench": "tf_dataset", "pipeline": "train",
                          "ratios": {f"penstock_vs_{s}": round(medians["penstock"] / medians[s], 2) for s in others},
                          "cpu_efficiency_ratios": {f"penstock_vs_{s}": round(efficiency["penstock"] / efficiency[s], 2)
                                                    for s in others},
                          "target": {"penstock_vs_tf_data": 1.3}}))


if __name__ == "__main__":
    main()
