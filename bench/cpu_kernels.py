"""Milliseconds per batch of single CPU operators at sizes where the kernel's time dominates (16
images of 500x375, 4 s of 16 kHz audio; one thread): the numbers behind setup.py's optimization
level per kernel file. Each build (a folder holding penstock with its engine, built one way: this
tree's core/ by default) runs in processes of its own, the builds taking turns over the rounds;
one JSON line per build and case with the median, then each case's ratios to the first build.

    python bench/cpu_kernels.py [--builds core,/tmp/o3/core] [--cases hsv,resize_linear] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import alternating_rounds, bench_parser, emit, parsed, run_worker, timed  # noqa: E402

BATCH = 16


def cases(fn, types, math) -> dict:
    """case -> (input kind, the operator applied to the input)."""
    return {
        "cast_u8_f32": ("image", lambda x: fn.cast(x, dtype=types.FLOAT)),
        "add_f32": ("image_f32", lambda x: x + x),
        "mul_u8": ("image", lambda x: x * x),
        "sqrt_f32": ("image_f32", lambda x: math.sqrt(x)),
        "brightness_contrast": ("image", lambda x: fn.brightness_contrast(x, brightness=1.2, contrast=0.8)),
        "hsv": ("image", lambda x: fn.hsv(x, hue=10.0, saturation=1.2)),
        "crop_mirror_normalize": ("image", lambda x: fn.crop_mirror_normalize(
            x, crop=(224, 224), mirror=1, mean=[120.0, 110.0, 100.0], std=[60.0, 60.0, 60.0], dtype=types.FLOAT,
            output_layout="CHW")),
        "resize_linear": ("image", lambda x: fn.resize(x, resize_x=224, resize_y=224)),
        "resize_cubic": ("image", lambda x: fn.resize(x, resize_x=640, resize_y=480, interp_type=types.INTERP_CUBIC)),
        "rotate": ("image", lambda x: fn.rotate(x, angle=17.0, fill_value=0)),
        "gaussian_blur": ("image", lambda x: fn.gaussian_blur(x, sigma=2.0)),
        "normalize": ("image_f32", lambda x: fn.normalize(x, axes=[0, 1])),
        "reduce_mean": ("image_f32", lambda x: fn.reductions.mean(x, axes=[0, 1])),
        "transpose": ("image", lambda x: fn.transpose(x, perm=[2, 0, 1])),
        "flip": ("image", lambda x: fn.flip(x, horizontal=1)),
        "spectrogram": ("audio", lambda x: fn.spectrogram(x, nfft=512, window_length=400, window_step=160)),
        "audio_resample": ("audio", lambda x: fn.audio_resample(x, scale=0.75)),
    }


def worker(build: str, case: str, args: argparse.Namespace) -> dict:
    sys.path.insert(0, os.path.abspath(build))
    import numpy as np
    import penstock
    from penstock import fn, math, pipeline_def, types
    if not os.path.realpath(penstock.__file__).startswith(os.path.realpath(build)):
        raise RuntimeError(f"penstock imports from {penstock.__file__}, not from {build}")
    kind, op = cases(fn, types, math)[case]
    rng = np.random.default_rng(0)
    if kind == "audio":
        data = [rng.standard_normal(16000 * 4).astype(np.float32) for _ in range(BATCH)]
    else:
        data = [rng.integers(0, 255, (375, 500, 3), np.uint8) for _ in range(BATCH)]
        if kind == "image_f32":
            data = [a.astype(np.float32) for a in data]

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, prefetch_queue_depth=1, exec_async=False,
                  exec_pipelined=False)
    def pipe():
        return op(fn.external_source(source=lambda: data, batch=True, no_copy=True))

    p = pipe()
    p.build()
    return {"ms": round(1e3 * timed(p.run, BATCH, steps=args.batches).seconds_per_step, 2)}


def main() -> None:
    ap = bench_parser(__doc__, batches=10, worker=("BUILD", "CASE"))
    ap.add_argument("--builds", default=os.path.join(HERE, "..", "core"),
                    help="comma-separated folders holding penstock (default: this tree's core/)")
    ap.add_argument("--cases", help="comma-separated cases (default: all)")
    args = parsed(ap, worker)
    if args is None:
        return
    builds = args.builds.split(",")
    names = args.cases.split(",") if args.cases else list(cases(None, None, None))
    for case in names:
        runs = alternating_rounds(args.rounds, builds, lambda b: run_worker(
            __file__, ["--worker", b, case, "--batches", str(args.batches)]))
        medians = {b: statistics.median(r["ms"] for r in runs[b]) for b in builds}
        for b in builds:
            emit({"bench": "cpu_kernels", "case": case, "build": b, "ms_per_batch": medians[b],
                  "rounds": args.rounds, "batch": BATCH})
        if len(builds) > 1:
            emit({"bench": "cpu_kernels", "case": case,
                  "vs_first": {b: round(medians[b] / medians[builds[0]], 2) for b in builds[1:]}})


if __name__ == "__main__":
    main()
