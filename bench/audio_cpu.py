"""Speech front end on the CPU: penstock vs NVIDIA DALI and torchaudio (those installed).

The pipeline of examples/audio/speech_features.py (readers.nemo_asr -> audio_resample to 16 kHz ->
preemphasis -> spectrogram 400/160/512 -> 64 mel bands -> decibels -> normalize -> pad), batch 32,
2 threads, over generated speech-like utterances (0.4-1.2 s; WAV, FLAC and OGG/Vorbis at 8-48 kHz);
torchaudio's equivalent (_speech.py) in a DataLoader with 2 workers. Each system runs
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

import _speech  # noqa: E402
from _common import alternating_rounds, bench_parser, parsed, peak_rss_mb, report, run_worker, timed  # noqa: E402

BATCH, THREADS = 32, 2


def worker(system: str, manifest: str, args: argparse.Namespace) -> dict:
    step = _speech.step(system, manifest, BATCH, THREADS, "cpu")
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
    manifest = _speech.manifest(args.data, args.utterances)
    systems = _speech.systems()
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
        __file__, ["--worker", s, manifest, "--batches", str(args.batches)]))
    report("audio_cpu", runs, target=_speech.TARGETS,
           rate_key="utterances_per_s",
           pipeline="speech_front_end", batch=BATCH, threads=THREADS)


if __name__ == "__main__":
    main()
