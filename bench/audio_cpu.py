"""Speech front end on the CPU: penstock vs NVIDIA DALI (when installed).

The pipeline of examples/audio/speech_features.py (readers.nemo_asr -> audio_resample to 16 kHz ->
preemphasis -> spectrogram 400/160/512 -> 64 mel bands -> decibels -> normalize -> pad), batch 32,
2 threads, over generated speech-like utterances (0.4-1.2 s; WAV, FLAC and OGG/Vorbis at 8-48 kHz).
Each system runs in its own subprocess, alternating over rounds; one JSON line per system with the
median throughput, then the ratio (target: penstock >= 1.3x DALI). torchaudio is not compared yet.
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
sys.path.insert(0, os.path.join(HERE, "..", "examples", "audio"))

BATCH, THREADS = 32, 2


def worker(system: str, manifest: str, batches: int) -> None:
    from speech_features import speech_pipeline
    if system == "penstock":
        import penstock as lib
    else:
        import nvidia.dali as lib
    pipe = speech_pipeline(lib, manifest, BATCH, THREADS)
    pipe.build()
    for _ in range(2):
        pipe.run()
    start = time.perf_counter()
    for _ in range(batches):
        pipe.run()
    rate = batches * BATCH / (time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"utterances_per_s": rate, "peak_rss_mb": round(rss / 1024, 1)}))


def available_systems() -> list[str]:
    systems = ["penstock"]
    try:
        import nvidia.dali  # noqa: F401
        systems.append("dali")
    except ImportError:
        pass
    return systems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "bench_speech"))
    ap.add_argument("--utterances", type=int, default=256)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", metavar="SYSTEM")
    args = ap.parse_args()
    manifest = os.path.join(args.data, "manifest.json")
    if args.worker:
        worker(args.worker, manifest, args.batches)
        return
    if not os.path.exists(manifest):
        from speech_features import make_manifest
        os.makedirs(args.data, exist_ok=True)
        make_manifest(args.data, count=args.utterances)
    systems = available_systems()
    results: dict[str, list[dict]] = {s: [] for s in systems}
    for _ in range(args.rounds):
        for system in systems:
            out = subprocess.run([sys.executable, __file__, "--worker", system, "--data", args.data,
                                  "--batches", str(args.batches)], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{system} failed:\n{out.stderr[-2000:]}")
            results[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians = {}
    for system, runs in results.items():
        medians[system] = statistics.median(r["utterances_per_s"] for r in runs)
        print(json.dumps({"bench": "audio_cpu", "pipeline": "speech_front_end", "system": system, "batch": BATCH,
                          "threads": THREADS, "utterances_per_s": round(medians[system], 1),
                          "peak_rss_mb": max(r["peak_rss_mb"] for r in runs), "rounds": args.rounds}))
    if "dali" in medians:
        print(json.dumps({"bench": "audio_cpu", "ratio_penstock_over_dali": round(medians["penstock"] / medians["dali"], 2)}))


if __name__ == "__main__":
    main()
