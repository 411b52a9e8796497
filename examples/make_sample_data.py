"""Writes a small ImageFolder-style dataset of JPEGs (class sub-directories) with photo-like content;
also encodes tf.train.Example records (``tf_example``, ``tfrecord_record``) for the tests and
benchmarks of readers.tfrecord, without TensorFlow."""
from __future__ import annotations

import argparse
import os
import struct

import numpy as np


def photo_like(rng: np.random.Generator, height: int, width: int, noise_sigma: float = 6.0) -> np.ndarray:
    """Smooth gradients, a few shapes and sensor-like noise: compresses like a photograph."""
    # a column and a row, broadcast: the same values as full grids, computed once per row and column
    y = np.arange(height, dtype=np.float32)[:, None]
    x = np.arange(width, dtype=np.float32)[None, :]
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


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _feature(value) -> bytes:
    if isinstance(value, bytes):
        return _field(1, _field(1, value))
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return _field(1, b"".join(_field(1, v) for v in value))
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return _field(2, _field(1, arr.astype("<f4").tobytes()))
    return _field(3, _field(1, b"".join(_varint(int(v)) for v in arr.reshape(-1))))


def tf_example(features: dict) -> bytes:
    """A serialized tf.train.Example: bytes (or a list of bytes) as a BytesList, floats as a packed
    FloatList, integers as a packed Int64List."""
    entries = b"".join(_field(1, _field(1, k.encode()) + _field(2, _feature(v))) for k, v in features.items())
    return _field(1, entries)


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: CRC-32C (Castagnoli), rotated right by 15 bits plus 0xa282ead8. Plain
    Python, a byte at a time: independent of the engine's, and slow (~1 MB/s)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_record(data: bytes) -> bytes:
    """One TFRecord record holding ``data``: its length, the length's masked CRC32C, the data and
    the data's masked CRC32C, little-endian."""
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked_crc32c(head)) + data + struct.pack("<I", masked_crc32c(data))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root")
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--per-class", type=int, default=16)
    args = ap.parse_args()
    print(make_dataset(args.root, args.classes, args.per_class))
