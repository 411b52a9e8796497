"""What the speech benches (bench/audio_cpu.py, bench/audio_gpu.py) share: their utterances
(``manifest``), their systems and targets, and torchaudio's equivalent of
examples/audio/speech_features.py: the NeMo manifest's files decoded by soundfile (libsndfile, as the other
systems) and downmixed, resampled to 16 kHz (torchaudio's windowed sinc with 16 zero crossings per
side, as DALI's quality 50), preemphasis 0.97, a power spectrogram (512-point FFT of Hann windows
of 400 samples every 160, centred, reflect-padded), 64 Slaney mel bands with Slaney's area
normalization, 10 log10 clamped at 1e-8 (-80 dB against 1), each band normalized over the
utterance's frames, padded to the batch's longest utterance; the transcripts as padded UTF-8 bytes.

On the CPU (``cpu_batches``) the whole chain runs per utterance in a torch DataLoader's workers (one
per host thread, one torch thread each) and its collate pads. On the GPU (``GpuFrontEnd``) the
workers decode and resample (the rates differ per file, as in the other systems' GPU pipelines),
and the batch's padded waveforms go through the features on the GPU in one call of each transform;
the normalization counts each utterance's own frames only.

torchaudio without its compiled extension (PyPI's wheel links CUDA builds of torch's libraries,
so on a CPU-only torch: ``make torchaudio-site``) still has all of these: they are PyTorch code.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from _common import EXAMPLES, library, with_dali

SAMPLE_RATE, WINDOW, STEP, NFFT, BANDS = 16000, 400, 160, 512, 64
ZERO_CROSSINGS = 16  # DALI's (and penstock's) resampling quality 50
FLOOR = 1e-8         # -80 dB against a reference of 1
EPSILON = 1e-5
TARGETS = {"penstock_vs_dali": 1.3, "penstock_vs_torchaudio": 1.3}  # issue 29


def manifest(folder: str, count: int) -> str:
    """The manifest of ``count`` generated utterances in ``folder`` (written there the first time)."""
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        _example().make_manifest(folder, count=count)
    return path


def _example() -> Any:
    sys.path.insert(0, os.path.join(EXAMPLES, "audio"))
    import speech_features
    return speech_features


def step(system: str, manifest: str, batch: int, threads: int, device: str) -> Any:
    """A call that returns the next batch of ``system``'s front end: the example's pipeline on
    penstock or DALI (``device`` "gpu": features on GPU 0), torchaudio's (``cpu_batches`` on the
    CPU, ``GpuFrontEnd`` on the GPU)."""
    if system == "torchaudio":
        if device == "cpu":
            return cpu_batches(manifest, batch, threads)
        return GpuFrontEnd(manifest, batch, threads)
    pipe = _example().speech_pipeline(library(system), manifest, batch, threads, device=device)
    pipe.build()
    return pipe.run


def systems() -> list[str]:
    """penstock, then DALI and torchaudio where they import here."""
    return with_dali(["penstock"]) + (["torchaudio"] if torchaudio_available() else [])


def torchaudio_available() -> bool:
    try:
        import torchaudio  # noqa: F401
        return True
    except (ImportError, OSError):
        return False


def _entries(manifest: str) -> list[dict]:
    with open(manifest, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class _Utterances:
    """A map-style dataset: item i -> (waveform at 16 kHz, or its features with ``features``; text bytes)."""

    def __init__(self, manifest: str, features: bool):
        self.entries = _entries(manifest)
        self.features = features
        self._resamplers: dict = {}
        self._mel = None

    def __len__(self) -> int:
        return len(self.entries)

    def _resampled(self, path: str) -> Any:
        import soundfile
        import torch
        import torchaudio.transforms as T
        audio, rate = soundfile.read(path, dtype="float32", always_2d=True)
        x = torch.from_numpy(audio.mean(axis=1))
        if rate not in self._resamplers:
            self._resamplers[rate] = T.Resample(rate, SAMPLE_RATE, lowpass_filter_width=ZERO_CROSSINGS)
        return self._resamplers[rate](x)

    def __getitem__(self, i: int) -> tuple:
        entry = self.entries[i]
        x = self._resampled(entry["audio_filepath"])
        text = entry["text"].encode("utf-8")
        if not self.features:
            return x, text
        if self._mel is None:
            self._mel = mel_spectrogram()
        features, = normalized_log_mel(self._mel, x[None], None)
        return features, text


def mel_spectrogram() -> Any:
    import torchaudio.transforms as T
    return T.MelSpectrogram(SAMPLE_RATE, n_fft=NFFT, win_length=WINDOW, hop_length=STEP, n_mels=BANDS, power=2.0,
                            center=True, pad_mode="reflect", norm="slaney", mel_scale="slaney")


def normalized_log_mel(mel: Any, waves: Any, frames: Any) -> Any:
    """[batch, samples] waveforms -> [batch, bands, frames] normalized log mel spectra; ``frames``
    (a tensor of each utterance's frame count, or None: all) bounds the statistics."""
    import torch
    import torchaudio.functional as F
    x = F.preemphasis(waves, 0.97)
    db = 10.0 * torch.log10(torch.clamp(mel(x), min=FLOOR))
    if frames is None:
        mean = db.mean(dim=2, keepdim=True)
        var = db.var(dim=2, unbiased=False, keepdim=True)
        return (db - mean) / torch.sqrt(var + EPSILON)
    valid = (torch.arange(db.shape[2], device=db.device)[None, :] < frames[:, None]).to(db.dtype)[:, None, :]
    count = frames.to(db.dtype)[:, None, None]
    mean = (db * valid).sum(dim=2, keepdim=True) / count
    var = (((db - mean) * valid) ** 2).sum(dim=2, keepdim=True) / count
    return (db - mean) / torch.sqrt(var + EPSILON) * valid


def _pad_texts(texts: list[bytes]) -> tuple:
    import torch
    lengths = torch.tensor([len(t) for t in texts])
    padded = torch.zeros(len(texts), int(lengths.max()), dtype=torch.uint8)
    for k, t in enumerate(texts):
        padded[k, :len(t)] = torch.frombuffer(bytearray(t), dtype=torch.uint8)
    return padded, lengths


def _collate_features(items: list) -> tuple:
    import torch
    frames = torch.tensor([f.shape[1] for f, _ in items])
    features = torch.zeros(len(items), BANDS, int(frames.max()))
    for k, (f, _) in enumerate(items):
        features[k, :, :f.shape[1]] = f
    return (features, frames, *_pad_texts([t for _, t in items]))


def _collate_waves(items: list) -> tuple:
    import torch
    lengths = torch.tensor([len(x) for x, _ in items])
    waves = torch.zeros(len(items), int(lengths.max()))
    for k, (x, _) in enumerate(items):
        waves[k, :len(x)] = x
    return (waves, lengths, *_pad_texts([t for _, t in items]))


def _worker_init(_: int) -> None:
    import torch
    torch.set_num_threads(1)


def _loader(manifest: str, batch: int, workers: int, features: bool) -> Any:
    """Shuffled batches, epoch after epoch without a break (as the DALI-API readers run on)."""
    import torch
    dataset = _Utterances(manifest, features)
    order = torch.utils.data.RandomSampler(dataset, num_samples=1000 * len(dataset))
    return torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=order, num_workers=workers,
                                       collate_fn=_collate_features if features else _collate_waves,
                                       worker_init_fn=_worker_init, prefetch_factor=2)


def cpu_batches(manifest: str, batch: int, workers: int) -> Any:
    """A step that returns the next batch of (features [batch, 64, frames], frames, text bytes,
    text lengths), all on the CPU."""
    return iter(_loader(manifest, batch, workers, features=True)).__next__


class GpuFrontEnd:
    """A step returning batches decoded and resampled by ``workers`` DataLoader workers, their
    features computed on CUDA device 0 (``device="cpu"``: on the host, to check a bench without a
    GPU): (features, frames, text bytes, text lengths), features and frames on the device."""

    def __init__(self, manifest: str, batch: int, workers: int, device: str = "cuda"):
        import torch
        self.device = torch.device(device, 0) if device == "cuda" else torch.device(device)
        self.loader = _loader(manifest, batch, workers, features=False)
        self.mel = mel_spectrogram().to(self.device)
        self._batches = iter(self.loader)

    def __call__(self) -> tuple:
        import torch
        waves, lengths, text, text_lengths = next(self._batches)
        if self.device.type == "cuda":
            waves = waves.pin_memory()
        waves = waves.to(self.device, non_blocking=True)
        frames = (lengths // STEP + 1).to(self.device, non_blocking=True)
        with torch.no_grad():
            features = normalized_log_mel(self.mel, waves, frames)
        return features, frames, text, text_lengths
