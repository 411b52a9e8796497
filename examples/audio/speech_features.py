"""A speech-recognition front end, written as for DALI (the same code runs on both), feeding PyTorch.

NeMo ASR manifest -> readers.nemo_asr (reads and decodes each file at its own rate) ->
audio_resample to 16 kHz -> preemphasis_filter -> spectrogram (25 ms windows every 10 ms) ->
mel_filter_bank (64 bands) -> to_decibels -> normalize (per band) -> pad (to the batch's longest
utterance) -> DALIGenericIterator: float32 features [batch, 64, frames], their lengths, and the
transcripts as padded UTF-8 bytes with their lengths. With --device gpu the audio moves to the GPU
after resampling and the features are computed there (cuFFT for the spectrogram).

    python examples/audio/speech_features.py [--manifest FILE] [--batch-size 8] [--batches 4] [--device cpu|gpu]

Without --manifest it writes a small one of speech-like audio (WAV, FLAC and OGG/Vorbis at 8 to
48 kHz) into a temporary folder first.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

import penstock
from penstock.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

SAMPLE_RATE = 16000
WINDOW, STEP, NFFT, BANDS = 400, 160, 512, 64   # 25 ms windows every 10 ms at 16 kHz


def make_manifest(folder: str, count: int = 12, seed: int = 0) -> str:
    """``count`` speech-like utterances (a gliding voiced tone with pauses) and their manifest."""
    import soundfile
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(count):
        rate = (8000, 16000, 22050, 44100, 48000)[k % 5]
        seconds = 0.4 + 0.8 * rng.random()
        t = np.arange(int(rate * seconds)) / rate
        pitch = 110 + 50 * np.sin(2 * np.pi * (1 + k % 3) * t)
        phase = 2 * np.pi * np.cumsum(pitch) / rate
        voiced = sum(np.sin(h * phase) / h for h in range(1, 10)) * (np.sin(2 * np.pi * 3 * t) > -0.3)
        audio = (0.25 * voiced + 0.005 * rng.standard_normal(len(t))).astype(np.float32)
        if k % 2:
            audio = np.stack([audio, 0.8 * audio], axis=1)  # stereo: the reader downmixes
        fmt, ext = [("WAV", "wav"), ("FLAC", "flac"), ("OGG", "ogg")][k % 3]
        path = os.path.join(folder, f"utterance{k:03d}.{ext}")
        soundfile.write(path, audio, rate, format=fmt)
        lines.append(json.dumps({"audio_filepath": path, "duration": round(seconds, 4),
                                 "text": f"utterance number {k}"}))
    manifest = os.path.join(folder, "manifest.json")
    with open(manifest, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return manifest


def speech_pipeline(lib, manifest: str, batch_size: int, threads: int = 2, shard_id: int = 0, num_shards: int = 1,
                    seed: int = 1, device: str = "cpu"):
    """The front end as a pipeline of ``lib``: ``penstock`` or ``nvidia.dali`` (bench/audio_cpu.py);
    ``device="gpu"`` computes the features on GPU 0."""
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=batch_size, num_threads=threads, device_id=0 if device == "gpu" else None,
                      seed=seed)
    def pipe():
        audio, rate, text = fn.readers.nemo_asr(manifest_filepaths=[manifest], dtype=types.FLOAT, downmix=True,
                                                shard_id=shard_id, num_shards=num_shards, random_shuffle=True,
                                                name="Reader")
        audio = fn.audio_resample(audio, in_rate=rate, out_rate=float(SAMPLE_RATE))
        if device == "gpu":
            audio = audio.gpu()
        audio = fn.preemphasis_filter(audio, preemph_coeff=0.97)
        spectrum = fn.spectrogram(audio, nfft=NFFT, window_length=WINDOW, window_step=STEP)
        mel = fn.mel_filter_bank(spectrum, sample_rate=float(SAMPLE_RATE), nfilter=BANDS)
        log_mel = fn.to_decibels(mel, multiplier=10.0, reference=1.0, cutoff_db=-80.0)
        frames = fn.slice(fn.shapes(log_mel), 1, 1, axes=[0])      # frames per utterance, before padding
        features = fn.normalize(log_mel, axes=[1], epsilon=1e-5)    # zero mean, unit variance per band
        features = fn.pad(features, axes=[1], fill_value=0.0)
        return features, frames, fn.pad(text, fill_value=0), fn.shapes(text)

    return pipe()


def loader(manifest: str, batch_size: int, threads: int = 2, device: str = "cpu") -> DALIGenericIterator:
    pipe = speech_pipeline(penstock, manifest, batch_size, threads, device=device)
    pipe.build()
    return DALIGenericIterator([pipe], ["features", "frames", "text", "text_length"], reader_name="Reader",
                               last_batch_policy=LastBatchPolicy.PARTIAL)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", help="NeMo manifest (JSON lines); default: a generated one")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batches", type=int, default=4, help="batches to show")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="where the features are computed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        manifest = args.manifest or make_manifest(folder)
        summary = []
        for k, batch in enumerate(loader(manifest, args.batch_size, device=args.device)):
            if k == args.batches:
                break
            b = batch[0]
            texts = [bytes(row[:n].tolist()).decode() for row, n in zip(b["text"], b["text_length"].view(-1).tolist())]
            summary.append({"features": list(b["features"].shape), "dtype": str(b["features"].dtype),
                            "frames": b["frames"].view(-1).tolist(), "texts": texts})
            print(json.dumps(summary[-1]))
        return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
