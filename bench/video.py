"""Video clips on the CPU: penstock vs NVIDIA DALI 2.4 (when installed).

experimental.readers.video over natural-motion clips (examples/make_video_data.py: photographs
under a slow camera move, 160x120 and 320x240), sequences of 16 frames 2 apart, shuffled, batch
8, at 2 and 4 threads. The codec is VP9 in WebM, which DALI 2.4's CPU reader decodes (it has no
H.264 on the CPU); ``--codec h264`` times penstock alone on H.264 MP4. Each system runs in its own
subprocess, alternating over rounds; one JSON line per system with the medians (frames/s, host
CPU per frame, peak memory), then the ratio.

    python bench/video.py [--clips 16] [--frames 96] [--batches 8] [--rounds 3] [--codec vp9]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import (EXAMPLES, alternating_rounds, bench_parser, library, parsed, peak_rss_mb, report,  # noqa: E402
                     run_worker, timed, with_dali)

BATCH, SEQUENCE, STRIDE = 8, 16, 2
CONTAINERS = {"vp9": "webm", "h264": "mp4", "vp8": "webm", "hevc": "mkv", "av1": "mkv"}


def worker(system: str, root: str, threads: str, args: argparse.Namespace) -> dict:
    lib = library(system)

    @lib.pipeline_def(batch_size=BATCH, num_threads=int(threads), device_id=None, seed=1, prefetch_queue_depth=2)
    def pipe():
        video, label = lib.fn.experimental.readers.video(file_root=root, sequence_length=SEQUENCE, stride=STRIDE,
                                                         random_shuffle=True, initial_fill=64, name="r")
        return video, label
    p = pipe()
    p.build()
    timing = timed(p.run, BATCH * SEQUENCE, steps=args.batches, warmup_steps=2)
    return {"frames_per_s": round(timing.items_per_s, 1), "host_cpu_ms_per_frame": round(timing.cpu_ms_per_item, 3),
            "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=8, worker=("SYSTEM", "ROOT", "THREADS"))
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_video"))
    ap.add_argument("--clips", type=int, default=16)
    ap.add_argument("--frames", type=int, default=96)
    ap.add_argument("--codec", default="vp9", choices=sorted(CONTAINERS))
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 4])
    args = parsed(ap, worker)
    if args is None:
        return
    sys.path.insert(0, EXAMPLES)
    from make_video_data import write_clips
    systems = with_dali(["penstock"]) if args.codec in ("vp9", "vp8") else ["penstock"]
    for height, width in ((120, 160), (240, 320)):
        root = os.path.join(args.data, f"{args.codec}_{width}x{height}")
        write_clips(root, args.clips, args.frames, height, width, args.codec, CONTAINERS[args.codec])
        for threads in args.threads:
            runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
                __file__, ["--worker", s, root, str(threads), "--batches", str(args.batches)]))
            report("video_cpu", runs, target={"penstock_vs_dali": 1.2}, rate_key="frames_per_s", codec=args.codec,
                   size=f"{width}x{height}", sequence=SEQUENCE, stride=STRIDE, batch=BATCH, threads=threads)


if __name__ == "__main__":
    main()
