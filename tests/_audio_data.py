"""Speech-like test audio the audio tests make for themselves: tones, noise, silence and chirps,
mono or stereo, 8 to 48 kHz, encoded in each container libsndfile writes (via soundfile)."""
from __future__ import annotations

import io

import numpy as np

# container -> (soundfile format, subtype); lossless ones decode to exactly what was written
CONTAINERS = {
    "wav16": ("WAV", "PCM_16"), "wav24": ("WAV", "PCM_24"), "wav32": ("WAV", "PCM_32"),
    "wavu8": ("WAV", "PCM_U8"), "wavfloat": ("WAV", "FLOAT"),
    "flac16": ("FLAC", "PCM_16"), "flac24": ("FLAC", "PCM_24"),
    "vorbis": ("OGG", "VORBIS"), "opus": ("OGG", "OPUS"),
}
LOSSY = ("vorbis", "opus")
RATES = (8000, 16000, 22050, 44100, 48000)
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)


def signal(kind: str, frames: int, rate: int, channels: int, seed: int = 0) -> np.ndarray:
    """[frames, channels] float32 in [-1, 1]: 'tone', 'noise', 'silence', 'chirp' or 'speechlike'
    (bursts of harmonics with pauses)."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / rate
    if kind == "tone":
        base = 0.6 * np.sin(2 * np.pi * 440 * t)
    elif kind == "noise":
        base = 0.3 * rng.standard_normal(frames)
    elif kind == "silence":
        base = np.zeros(frames)
    elif kind == "chirp":  # 100 Hz rising to a third of the rate
        f1 = rate / 3
        base = 0.5 * np.sin(2 * np.pi * (100 * t + (f1 - 100) * t ** 2 / (2 * max(t[-1], 1e-9))))
    elif kind == "speechlike":
        pitch = 120 + 40 * np.sin(2 * np.pi * 3 * t)
        phase = 2 * np.pi * np.cumsum(pitch) / rate
        voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
        envelope = (np.sin(2 * np.pi * 2.5 * t) > -0.2).astype(np.float64)
        base = 0.3 * voiced * envelope + 0.01 * rng.standard_normal(frames)
    else:
        raise ValueError(kind)
    out = np.stack([base * (1 - 0.3 * c) + 0.02 * c * rng.standard_normal(frames) * (kind != "silence")
                    for c in range(channels)], axis=1)
    return np.clip(out, -1, 1).astype(np.float32)


def encode(samples: np.ndarray, rate: int, container: str) -> np.ndarray:
    """The encoded file as uint8 bytes."""
    import soundfile
    fmt, subtype = CONTAINERS[container]
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format=fmt, subtype=subtype)
    return np.frombuffer(buf.getvalue(), np.uint8).copy()


def files(container: str, count: int = 4, seed: int = 0) -> list[np.ndarray]:
    """``count`` encoded files of one container: varied signals, channel counts, rates and lengths."""
    kinds = ("speechlike", "tone", "chirp", "noise", "silence")
    rates = OPUS_RATES if container == "opus" else RATES
    out = []
    for k in range(count):
        rate = rates[(k + seed) % len(rates)]
        frames = int(rate * (0.05 + 0.03 * k))
        out.append(encode(signal(kinds[(k + seed) % len(kinds)], frames, rate, 1 + (k + seed) % 2, seed + k),
                          rate, container))
    return out
