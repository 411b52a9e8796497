"""Speech front end on the CPU: penstock vs NVIDIA DALI and torchaudio (those installed).

The pipeline of examples/audio/speech_features.py (readers.nemo_asr -> audio_resample to 16 kHz ->
preemphasis -> spectrogram 400/160/512 -> 64 mel bands -> decibels -> normalize -> pad), batch 32,
2 threads, over generated speech-like utterances (0.4-1.2 s; WAV, FLAC and OGG/Vorbis at 8-48 kHz);
torchaudio's equivalent (_torchaudio_speech.py) in a DataLoader with 2 workers. Each system runs
in its own subprocess, alternating over rounds; one JSON line per system with the medians, then
the ratios (target: penstock >= 1.3x DALI and torchaudio).

    make torchaudio-site  # once; DALI's site comes with make test
    PYTHONPATH=.venv/dali-site:.venv/torchaudio-site python bench/audio_cpu.py [--utterances 256] [--batches 8] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _torchaudio_speech  # noqa: E402
from _common import (EXAMPLES, alternating_rounds, bench_parser, library, parsed, peak_rss_mb, report,  # noqa: E402
                     run_worker, timed, with_dali)

BATCH, THREADS = 32, 2


def worker(system: str, manifest: str, args: argparse.Namespace) -> dict:
    if system == "torchaudio":
        step = _torchaudio_speech.cpu_batches(manifest, BATCH, THREADS)
    else:
        sys.path.insert(0, os.path.join(EXAMPLES, "audio"))
        from speech_features import speech_pipeline
        pipe = speech_pipeline(library(system), manifest, BATCH, THREADS)
        pipe.build()
        step = pipe.run
    timing = timed(step, BATCH, steps=args.batches, warmup_steps=2)
    return {"utterances_per_s": round(timing.items_per_s, 1),
            "host_cpu_ms_per_utterance": round(timing.cpu_ms_per_item, 3), "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = bench_parser(__doc__, batches=8, worker=("SYSTEM", "MANIFEST"))
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_speech"))
    ap.add_argument("--utterances", type=int, default=256)
    args = parsed(ap, worker)
    if args is None:
        return
    manifest = os.path.join(args.data, "manifest.json")
    if not os.path.exists(manifest):
        sys.path.insert(0, os.path.join(EXAMPLES, "audio"))
        from speech_features import make_manifest
        os.makedirs(args.data, exist_ok=True)
        make_manifest(args.data, count=args.utterances)
    systems = with_dali(["penstock"]) + (["torchaudio"] if _torchaudio_speech.available() else [])
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
        __file__, ["--worker", s, manifest, "--batches", str(args.batches)]))
    report("audio_cpu", runs, target={"penstock_vs_dali": 1.3, "penstock_vs_torchaudio": 1.3},
           rate_key="utterances_per_s",
           pipeline="speech_front_end", batch=BATCH, threads=THREADS)


if __name__ == "__main__":
    main()
