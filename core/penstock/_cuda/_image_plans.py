"""Host planning for the GPU kernel of jpeg_compression_distortion (csrc/cuda/jpeg_compression_distortion.cu):
pure numpy, shared by GpuKernels and the tests of the kernel's arithmetic."""
from __future__ import annotations

import numpy as np

IMAGE_TYPES = (0, 5, 1, 6, 9)  # uint8, int16, uint16, int32, float: the CPU image kernels' types

# libjpeg's standard quantization tables (natural order): luminance, chrominance
_JPEG_BASE = np.array([
    [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
     14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99],
    [17, 18, 24, 47] + [99] * 4 + [18, 21, 26, 66] + [99] * 4 + [24, 26, 56] + [99] * 5 + [47, 66] + [99] * 38],
    np.int64)


def jpeg_tables(qualities: np.ndarray) -> np.ndarray:
    """[N, 2, 64] int32: the tables jpeg_set_quality(q, force_baseline=TRUE) makes per sample."""
    q = np.clip(np.asarray(qualities, np.int64), 1, 100)
    scale = np.where(q < 50, 5000 // q, 200 - 2 * q)
    return np.clip((_JPEG_BASE[None] * scale[:, None, None] + 50) // 100, 1, 255).astype(np.int32)


def jpeg_plan(shapes: np.ndarray, src_offsets: np.ndarray, dst_offsets: np.ndarray) -> tuple[np.ndarray, int]:
    """Per-frame descriptors (csrc/cuda/jpeg_compression_distortion.cu's JpegDesc) for (frames, H, W, C)
    samples, and the bytes of decoded planes they need."""
    shapes = np.asarray(shapes, np.int64).reshape(-1, 4)
    frames = shapes[:, 0]
    sample = np.repeat(np.arange(len(shapes)), frames)
    frame = np.arange(len(sample)) - np.repeat(np.cumsum(frames) - frames, frames)
    h, w, c = shapes[sample, 1], shapes[sample, 2], shapes[sample, 3]
    by, bx, cby, cbx = (h + 7) // 8, (w + 7) // 8, (h + 15) // 16, (w + 15) // 16
    chroma = np.where(c == 3, 2 * cby * cbx, 0)
    plane = (by * bx + chroma) * 64
    desc = np.zeros((len(sample), 9), np.int64)
    desc[:, 0] = np.asarray(src_offsets, np.int64)[sample] + frame * h * w * c
    desc[:, 1] = np.asarray(dst_offsets, np.int64)[sample] + frame * h * w * c
    desc[1:, 2] = np.cumsum(plane)[:-1]
    desc[:, 3], desc[:, 4], desc[:, 5], desc[:, 6] = h, w, c, sample
    desc[:, 7] = np.where(h * w > 0, by * bx + chroma, 0)
    desc[:, 8] = h * w
    return desc, int(plane.sum())
