"""What the crop decoders' corruption check costs: reading a JPEG's entropy-coded data past the
window to the end marker (the rows below the window are entropy-decoded only, no inverse DCT), so
that a scan a flipped bit put out of step is refused wherever the window lies. A file read through
once is remembered by a hash of its bytes, so later crops of it (later epochs) stop below the
window: the check costs the first epoch, and a hash per image after that.

The ResNet-50 train pipeline of _pipelines.py (random-crop decode, resize 224, crop_mirror_normalize)
with the check (the default) and without it (accept_corrupt_jpeg=True, which stops decoding below
the window as DALI does), over the photo set of bench/photos.py, each in a process of its own,
alternating: the first epoch (every file new to the process), and an epoch after it. Host CPU
milliseconds per image, medians over the rounds, and the check's cost as a fraction.

    python bench/jpeg_end_check.py [--set imagenet-like] [--images 256] [--rounds 9]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import alternating_rounds, bench_parser, cpu_seconds, emit, parsed, run_worker  # noqa: E402
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, rn50_pipeline  # noqa: E402

SIDES = ("checked", "unchecked")


def worker(side: str, root: str, images: str, args: argparse.Namespace) -> dict:
    import penstock
    pipe = rn50_pipeline(penstock, "train", root, BATCH, THREADS,
                         decoder_args={"accept_corrupt_jpeg": side == "unchecked"})
    pipe.build()
    epoch = -(-int(images) // BATCH)  # the first run prefetches: its queue's batches count to the first epoch
    result = {}
    for name in ("first_epoch", "later_epoch"):
        start = cpu_seconds()
        for _ in range(epoch):
            pipe.run()
        result[f"{name}_cpu_ms_per_image"] = (cpu_seconds() - start) / (epoch * BATCH) * 1e3
    return result


def main() -> None:
    ap = bench_parser(__doc__, rounds=9, worker=("SIDE", "ROOT", "IMAGES"), dataset={"default_images": 256})
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    runs = alternating_rounds(args.rounds, SIDES, lambda side: run_worker(
        __file__, ["--worker", side, root, str(args.images)]))
    record = {"bench": "jpeg_end_check", "pipeline": "rn50_train", "set": args.set, "images": args.images,
              "batch": BATCH, "threads": THREADS}
    for name in ("first_epoch", "later_epoch"):
        key = f"{name}_cpu_ms_per_image"
        med = {side: statistics.median(r[key] for r in runs[side]) for side in SIDES}
        record.update({f"{side}_{key}": round(v, 4) for side, v in med.items()})
        record[f"{name}_cost"] = round(med["checked"] / med["unchecked"] - 1, 4)
    emit(record)


if __name__ == "__main__":
    main()
