"""Writes a small ImageFolder-style dataset of JPEGs (class sub-directories) with photo-like content."""
from __future__ import annotations

import argparse
import os

import numpy as np


def photo_like(rng: np.random.Generator, height: int, width: int, noise_sigma: float = 6.0) -> np.ndarray:
    """Smooth gradients, a few shapes and sensor-like noise: compresses like a photograph."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    img = np.empty((height, width, 3), np.float32)
    for c in range(3):
        fx, fy, phase = rng.uniform(0.5, 3, 2).tolist() + [rng.uniform(0, 6.28)]
        img[..., c] = 128 + 90 * np.sin(fx * x / width * 6.28 + phase) * np.cos(fy * y / height * 6.28)
    for _ in range(6):
        cy, cx, r = rng.integers(0, height), rng.integers(0, width), rng.integers(10, max(11, height // 4))
        mask = (y - cy) ** 2 + (x - cx) ** 2 < r * r
        img[mask] = rng.uniform(0, 255, 3)
    img += rng.normal(0, noise_sigma, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def make_dataset(root: str, classes: int = 4, per_class: int = 16, size: tuple[int, int] = (375, 500),
                 quality: int = 90, seed: int = 0, noise_sigma: float = 6.0) -> str:
    from PIL import Image
    rng = np.random.default_rng(seed)
    for c in range(classes):
        d = os.path.join(root, f"class_{c:03d}")
        os.makedirs(d, exist_ok=True)
        for i in range(per_class):
            path = os.path.join(d, f"img_{i:05d}.jpg")
            if not os.path.exists(path):
                Image.fromarray(photo_like(rng, *size, noise_sigma)).save(path, quality=quality)
    return root


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root")
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--per-class", type=int, default=16)
    args = ap.parse_args()
    print(make_dataset(args.root, args.classes, args.per_class))
