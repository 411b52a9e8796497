"""What the crop decoders' corruption check costs: reading a JPEG's entropy-coded data past the
window to the end marker (the rows below the window are entropy-decoded only, no inverse DCT), so
that a scan a flipped bit put out of step is refused wherever the window lies.

The ResNet-50 train pipeline of _pipelines.py (random-crop decode, resize 224, crop_mirror_normalize)
and the random-crop decoder alone, each twice in one process: with the check (the default) and
without it (accept_corrupt_jpeg=True, which stops decoding below the window as DALI does), over the
photo set of bench/photos.py. Blocks of batches alternate between the two, so the machine's noise
hits both alike; host CPU seconds and wall seconds per image, medians over the blocks, then the
check's cost as a fraction of the pipeline's.

    python bench/jpeg_end_check.py [--set imagenet-like] [--images 256] [--batches 4] [--rounds 9]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import bench_parser, cpu_seconds, emit  # noqa: E402
from _pipelines import CPU_BATCH as BATCH, CPU_THREADS as THREADS, rn50_pipeline  # noqa: E402


def _decoder_pipeline(lib, root: str, accept: bool):
    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=7)
    def pipe():
        jpegs, _ = lib.fn.readers.file(file_root=root, random_shuffle=True)
        return lib.fn.decoders.image_random_crop(jpegs, random_area=[0.08, 1.0], random_aspect_ratio=[0.75, 4 / 3],
                                                 num_attempts=10, accept_corrupt_jpeg=accept)
    return pipe()


def main() -> None:
    ap = bench_parser(__doc__, batches=4, rounds=9, dataset={"default_images": 256})
    args = ap.parse_args()
    root = photos.prepared(args)
    import penstock
    for name, make in (("rn50_train", lambda accept: rn50_pipeline(penstock, "train", root, BATCH, THREADS,
                                                                   decoder_args={"accept_corrupt_jpeg": accept})),
                       ("random_crop_decode", lambda accept: _decoder_pipeline(penstock, root, accept))):
        pipes = {"checked": make(False), "unchecked": make(True)}
        for p in pipes.values():
            p.build()
            p.run()  # warm: pools, first batches
        samples: dict[str, dict[str, list[float]]] = {k: {"cpu": [], "wall": []} for k in pipes}
        for _ in range(args.rounds):
            for key, p in pipes.items():
                cpu, wall = cpu_seconds(), time.perf_counter()
                for _ in range(args.batches):
                    p.run()
                images = args.batches * BATCH
                samples[key]["cpu"].append((cpu_seconds() - cpu) / images * 1e3)
                samples[key]["wall"].append((time.perf_counter() - wall) / images * 1e3)
        med = {k: {m: statistics.median(v) for m, v in s.items()} for k, s in samples.items()}
        emit({"bench": "jpeg_end_check", "pipeline": name, "set": args.set, "batch": BATCH, "threads": THREADS,
              **{f"{k}_{m}_ms_per_image": round(v, 4) for k, d in med.items() for m, v in d.items()},
              "cpu_cost": round(med["checked"]["cpu"] / med["unchecked"]["cpu"] - 1, 4),
              "wall_cost": round(med["checked"]["wall"] / med["unchecked"]["wall"] - 1, 4)})


if __name__ == "__main__":
    main()
