"""What the decoders' corruption check costs: reading a JPEG's entropy-coded data through to the end
marker (no inverse DCT), so that a scan a flipped bit put out of step is refused wherever the
window lies. A file read through once is remembered by a hash of its bytes: the check costs the
first epoch, and a hash per image after that.

The ResNet-50 train pipeline of _pipelines.py (random-crop decode, resize 224, crop_mirror_normalize)
with the check (the default) and without it (accept_corrupt_jpeg=True, as DALI decodes), over the
photo set of bench/photos.py, each in a process of its own, alternating: the first epoch (every
file new to the process), and an epoch after it. On the CPU (the default) the crop decoders read
the rows below the window; the host CPU milliseconds per image, medians over the rounds, and the
check's cost as a fraction. With --device gpu the mixed decoder's host reads the GPU's JPEGs
through beside the decoding (about half a host decode each): the same, with each epoch's img/s
(its first batch, the decoders' set-up, left out; a set of thousands of photographs, so that the
first epoch is more than the prefetching).

    python bench/jpeg_end_check.py [--set imagenet-like] [--images 256] [--rounds 9]
    python bench/jpeg_end_check.py --device gpu --images 4096 --threads 16 --rounds 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import alternating_rounds, bench_parser, cpu_seconds, emit, gpu_name, parsed, run_worker  # noqa: E402
from _pipelines import CPU_BATCH, CPU_THREADS, GPU_BATCH, rn50_pipeline  # noqa: E402

SIDES = ("checked", "unchecked")
EPOCHS = ("first_epoch", "later_epoch")


def worker(side: str, root: str, images: str, args: argparse.Namespace) -> dict:
    import time

    import penstock
    gpu = args.device == "gpu"
    batch, threads = (GPU_BATCH, args.threads) if gpu else (CPU_BATCH, CPU_THREADS)
    sync = lambda: None  # noqa: E731
    if gpu:
        import cupy
        sync = cupy.cuda.runtime.deviceSynchronize
    pipe = rn50_pipeline(penstock, "train", root, batch, threads, device=args.device,
                         decoder_args={"accept_corrupt_jpeg": side == "unchecked"})
    pipe.build()
    epoch = -(-int(images) // batch)  # the first run prefetches: its queue's batches count to the first epoch
    skipped = 1 if gpu else 0  # the decoders' set-up: nvImageCodec's first call
    for _ in range(skipped):
        pipe.run()
    sync()
    result = {}
    for name, runs in zip(EPOCHS, (epoch - skipped, epoch)):
        start, wall = cpu_seconds(), time.perf_counter()
        for _ in range(runs):
            pipe.run()
        sync()
        result[f"{name}_cpu_ms_per_image"] = (cpu_seconds() - start) / (runs * batch) * 1e3
        result[f"{name}_img_per_s"] = runs * batch / (time.perf_counter() - wall)
    return result


def main() -> None:
    ap = bench_parser(__doc__, rounds=9, worker=("SIDE", "ROOT", "IMAGES"), dataset={"default_images": 256})
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                    help="cpu: the CPU decoders; gpu: the mixed decoder, GPU 0")
    ap.add_argument("--threads", type=int, default=16, help="the GPU pipeline's num_threads")
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    options = ["--device", args.device, "--threads", str(args.threads)]
    runs = alternating_rounds(args.rounds, SIDES, lambda side: run_worker(
        __file__, ["--worker", side, root, str(args.images)] + options))
    gpu = args.device == "gpu"
    record = {"bench": "jpeg_end_check", "pipeline": "rn50_train", "device": args.device, "set": args.set,
              "images": args.images, "batch": GPU_BATCH if gpu else CPU_BATCH,
              "threads": args.threads if gpu else CPU_THREADS, "gpu": gpu_name() if gpu else None}
    for name in EPOCHS:
        for key, rounding in ((f"{name}_cpu_ms_per_image", 4), (f"{name}_img_per_s", 1)):
            med = {side: statistics.median(r[key] for r in runs[side]) for side in SIDES}
            record.update({f"{side}_{key}": round(v, rounding) for side, v in med.items()})
        record[f"{name}_cost"] = round(record[f"checked_{name}_cpu_ms_per_image"]
                                       / record[f"unchecked_{name}_cpu_ms_per_image"] - 1, 4)
        record[f"{name}_rate"] = round(record[f"checked_{name}_img_per_s"] / record[f"unchecked_{name}_img_per_s"], 4)
    emit(record)


if __name__ == "__main__":
    main()
