"""Video clips: penstock vs NVIDIA DALI 2.4, and vs PyAV or torchcodec behind a PyTorch DataLoader.

Every system reads the same natural-motion clips (examples/make_video_data.py: photographs under a
slow camera move) as sequences of 16 frames 2 apart, a sequence starting every 31 frames of a clip,
shuffled, batch 8; the rate is decoded frames per second.

CPU (the default): penstock's and DALI's experimental.readers.video, PyAV and torchcodec (where it
imports: it loads the system's FFmpeg libraries) in a DataLoader with one worker process per
thread, each decoding on one thread, at 2 and 4 threads, over 160x120 and 320x240 clips. The
codec is VP9 in WebM, which DALI 2.4's CPU reader decodes (it has no H.264 on the CPU); with
``--codec h264`` DALI sits out.

GPU (``--device gpu``): penstock's and DALI's readers.video on the GPU (NVDEC), H.264 MP4 clips at
640x360 and 1280x720, the sequences left in device memory (the device is synchronised before the
clock starts and stops); penstock's record says whether NVDEC decoded (``penstock_path``).

Each system runs in its own subprocess, alternating over rounds; one JSON line per system and case
with the medians (frames/s, host CPU per frame, peak memory), then the ratios.

    python bench/video.py [--clips 16] [--frames 96] [--batches 8] [--rounds 3] [--codec vp9]
    python bench/video.py --device gpu [--threads 4] [--systems penstock,dali]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import (EXAMPLES, alternating_rounds, bench_parser, cycling, dali_available, gpu_name,  # noqa: E402
                     library, module_exists, parsed, peak_rss_mb, report, run_worker, timed)

BATCH, SEQUENCE, STRIDE = 8, 16, 2
SPAN = (SEQUENCE - 1) * STRIDE + 1  # frames one sequence covers; also the step between sequences
CONTAINERS = {"vp9": "webm", "h264": "mp4", "vp8": "webm", "hevc": "mkv", "av1": "mkv"}
SIZES = {"cpu": ((120, 160), (240, 320)), "gpu": ((360, 640), (720, 1280))}
DATALOADERS = ("pyav", "torchcodec")


def reader_rate(system: str, root: str, threads: int, device: str, batches: int) -> dict:
    """penstock's or DALI's reader: experimental.readers.video on the CPU, readers.video on the GPU."""
    lib = library(system)
    gpu = device == "gpu"

    @lib.pipeline_def(batch_size=BATCH, num_threads=threads, device_id=0 if gpu else None, seed=1,
                      prefetch_queue_depth=2)
    def pipe():
        read = lib.fn.readers.video if gpu else lib.fn.experimental.readers.video
        kw = {"device": "gpu"} if gpu else {}
        video, label = read(file_root=root, sequence_length=SEQUENCE, stride=STRIDE, step=SPAN, random_shuffle=True,
                            initial_fill=64, name="r", **kw)
        return video, label
    sync = lambda: None  # noqa: E731
    if gpu:
        import cupy
        sync = cupy.cuda.runtime.deviceSynchronize
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = pipe()
        p.build()
        timing = timed(p.run, BATCH * SEQUENCE, steps=batches, warmup_steps=2, sync=sync)
    result = {"frames_per_s": round(timing.items_per_s, 1), "host_cpu_ms_per_frame": round(timing.cpu_ms_per_item, 3),
              "peak_rss_mb": peak_rss_mb()}
    if gpu and system == "penstock":
        fallback = [str(w.message) for w in caught if "decoding on the CPU" in str(w.message)]
        result["penstock_path"] = f"cpu-upload ({fallback[0]})" if fallback else "nvdec"
    return result


def _sequences(root: str) -> list[tuple[str, int]]:
    """(file, first frame) of every sequence, as the readers cut the clips (every file below
    ``root``'s class folders; a sequence every SPAN frames that fits)."""
    import av
    out = []
    for folder in sorted(os.listdir(root)):
        for name in sorted(os.listdir(os.path.join(root, folder))):
            path = os.path.join(root, folder, name)
            with av.open(path) as c:
                frames = sum(1 for p in c.demux(video=0) if p.size)
            out += [(path, start) for start in range(0, frames - SPAN + 1, SPAN)]
    return out


class _PyAVSequences:
    """Dataset of PyAV-decoded sequences: each worker keeps its files open (as the readers do),
    seeks to the keyframe before a sequence and decodes forward on one thread."""

    def __init__(self, sequences: list[tuple[str, int]]):
        self.sequences = sequences
        self.open: dict = {}

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, i: int):
        import av
        import numpy as np
        import torch
        path, start = self.sequences[i]
        if path not in self.open:
            container = av.open(path)
            stream = container.streams.video[0]
            stream.codec_context.thread_count = 1
            pts = sorted(p.pts for p in container.demux(stream) if p.size)
            self.open[path] = (container, stream, {t: n for n, t in enumerate(pts)}, pts)
        container, stream, number, pts = self.open[path]
        wanted = set(range(start, start + SPAN, STRIDE))
        container.seek(pts[start], stream=stream, backward=True, any_frame=False)
        frames = []
        for frame in container.decode(stream):
            n = number.get(frame.pts, -1)
            if n in wanted:
                frames.append(frame.to_ndarray(format="rgb24"))
            if n >= start + SPAN - 1:
                break
        return torch.from_numpy(np.stack(frames))


class _TorchCodecSequences:
    """Dataset of torchcodec-decoded sequences (exact seeking, one FFmpeg thread, a decoder kept
    per file in each worker)."""

    def __init__(self, sequences: list[tuple[str, int]]):
        self.sequences = sequences
        self.decoders: dict = {}

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, i: int):
        from torchcodec.decoders import VideoDecoder
        path, start = self.sequences[i]
        if path not in self.decoders:
            self.decoders[path] = VideoDecoder(path, dimension_order="NHWC", num_ffmpeg_threads=1, seek_mode="exact")
        return self.decoders[path].get_frames_at(list(range(start, start + SPAN, STRIDE))).data


def dataloader_rate(system: str, root: str, threads: int, batches: int) -> dict:
    """PyAV or torchcodec in a DataLoader of ``threads`` worker processes, shuffled, batch 8."""
    import torch
    dataset = (_PyAVSequences if system == "pyav" else _TorchCodecSequences)(_sequences(root))
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=threads,
                                         persistent_workers=True, prefetch_factor=2, drop_last=True)
    timing = timed(cycling(loader), BATCH * SEQUENCE, steps=batches, warmup_steps=2)
    return {"frames_per_s": round(timing.items_per_s, 1), "host_cpu_ms_per_frame": round(timing.cpu_ms_per_item, 3),
            "peak_rss_mb": peak_rss_mb()}


def worker(system: str, root: str, threads: str, args: argparse.Namespace) -> dict:
    if system in DATALOADERS:
        return dataloader_rate(system, root, int(threads), args.batches)
    return reader_rate(system, root, int(threads), args.device, args.batches)


def systems_here(device: str, codec: str) -> list[str]:
    """The systems that run here: DALI where it imports (and decodes the codec: its CPU reader only
    VP8/VP9), the DataLoaders on the CPU where torch (and torchcodec) import."""
    systems = ["penstock"]
    if dali_available() and (device == "gpu" or codec in ("vp9", "vp8")):
        systems.append("dali")
    if device == "cpu" and module_exists("torch"):
        systems.append("pyav")
        # its PyPI wheel is a CUDA build that loads the system's FFmpeg: found is not enough
        if module_exists("torchcodec") and subprocess.run([sys.executable, "-c", "import torchcodec.decoders"],
                                                          capture_output=True).returncode == 0:
            systems.append("torchcodec")
    return systems


def main() -> None:
    ap = bench_parser(__doc__, batches=8, worker=("SYSTEM", "ROOT", "THREADS"))
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_video"))
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--clips", type=int, default=16)
    ap.add_argument("--frames", type=int, default=96)
    ap.add_argument("--codec", choices=sorted(CONTAINERS), help="default: vp9 on the CPU, h264 on the GPU")
    ap.add_argument("--threads", type=int, nargs="+", help="default: 2 4 on the CPU, 4 on the GPU")
    ap.add_argument("--systems", help="comma-separated, of penstock, dali, pyav, torchcodec (default: those here)")
    args = parsed(ap, worker)
    if args is None:
        return
    codec = args.codec or ("h264" if args.device == "gpu" else "vp9")
    threads = args.threads or ([4] if args.device == "gpu" else [2, 4])
    systems = args.systems.split(",") if args.systems else systems_here(args.device, codec)
    sys.path.insert(0, EXAMPLES)
    from make_video_data import write_clips
    card = gpu_name() if args.device == "gpu" else None
    for height, width in SIZES[args.device]:
        root = os.path.join(args.data, f"{codec}_{width}x{height}_{args.frames}")
        write_clips(root, args.clips, args.frames, height, width, codec, CONTAINERS[codec], processes=os.cpu_count())
        for n in threads:
            runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
                __file__, ["--worker", s, root, str(n), "--batches", str(args.batches), "--device", args.device]))
            report(f"video_{args.device}", runs, target={"penstock_vs_dali": 1.2}, rate_key="frames_per_s",
                   codec=codec, size=f"{width}x{height}", sequence=SEQUENCE, stride=STRIDE, batch=BATCH, threads=n,
                   **({"gpu": card} if card else {}))


if __name__ == "__main__":
    main()
