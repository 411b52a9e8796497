"""Speech front end with its features on the GPU: penstock vs NVIDIA DALI and torchaudio on CUDA.

The pipeline of examples/audio/speech_features.py with --device gpu: readers.nemo_asr decodes on
the host (libsndfile), audio_resample to 16 kHz on the host, then on GPU 0 preemphasis ->
spectrogram 400/160/512 (cuFFT) -> 64 mel bands -> decibels -> normalize -> pad; batch 64 over
generated speech-like utterances (0.4-1.2 s; WAV, FLAC and OGG/Vorbis at 8-48 kHz). torchaudio's
equivalent (_speech.GpuFrontEnd): DataLoader workers decode and resample, the padded
batch's features are computed on the GPU. Each system runs in its own process for --seconds after
a warm-up, alternating over rounds; one JSON line per system (median utterances/s, host CPU ms per
utterance, peak GPU memory, the GPU's name), then the ratios (target: penstock >= 1.3x DALI and
torchaudio). About 90 s for 3 systems x 3 rounds on an H100 machine, once penstock is built there.

    bash bench/gpu_run.sh audio_gpu                 # on the GPU machine (soundfile's wheel in .whl/)
    python bench/audio_gpu.py --device cpu --rounds 1 --seconds 1   # the bench's machinery, no GPU
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _speech  # noqa: E402
from _common import (GpuMemorySampler, alternating_rounds, bench_parser, emit, gpu_name, parsed, report,  # noqa: E402
                     run_worker, timed)

BATCH = 64


def worker(system: str, manifest: str, args: argparse.Namespace) -> dict:
    on_gpu = args.device == "gpu"
    sync, memory = (lambda: None), None
    if on_gpu:
        import cupy
        cupy.cuda.runtime.setDevice(0)
        sync, memory = cupy.cuda.runtime.deviceSynchronize, GpuMemorySampler()
    # the "cpu" smoke run computes torchaudio's features on the host too, through GpuFrontEnd
    step = (_speech.GpuFrontEnd(manifest, BATCH, args.threads, "cpu") if system == "torchaudio" and not on_gpu
            else _speech.step(system, manifest, BATCH, args.threads, args.device))
    # a second of warm-up at least: clocks ramp up, cuFFT plans and kernels are made
    timing = timed(step, BATCH, seconds=args.seconds, warmup_steps=3, warmup_seconds=1.0, sync=sync)
    return {"utterances_per_s": round(timing.items_per_s, 1),
            "host_cpu_ms_per_utterance": round(timing.cpu_ms_per_item, 3),
            "peak_gpu_mb": memory.stop_mb() if memory else None}


def main() -> None:
    ap = bench_parser(__doc__, worker=("SYSTEM", "MANIFEST"))
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_speech_gpu"))
    ap.add_argument("--utterances", type=int, default=512)
    ap.add_argument("--threads", type=int, default=4, help="host threads (DataLoader workers for torchaudio)")
    ap.add_argument("--seconds", type=float, default=2.5, help="timed seconds per process, after the warm-up")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="cpu: the same processes with the features on the host, to check the bench without a GPU")
    args = parsed(ap, worker)
    if args is None:
        return
    manifest = _speech.manifest(args.data, args.utterances)
    systems = _speech.systems()
    card = gpu_name() if args.device == "gpu" else "none (CPU smoke run)"
    emit({"bench": "audio_gpu", "plan": {"systems": systems, "rounds": args.rounds, "gpu": card,
                                         "host_cores": os.cpu_count()}})
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
        __file__, ["--worker", s, manifest, "--threads", str(args.threads), "--seconds", str(args.seconds),
                   "--device", args.device]))
    report("audio_gpu", runs, target=_speech.TARGETS,
           rate_key="utterances_per_s", pipeline="speech_front_end", gpu=card, batch=BATCH, threads=args.threads)


if __name__ == "__main__":
    main()
