"""The speech feature kernels on the GPU (csrc/cuda/audio_features.cu), with the signatures of the
engine's CPU kernels (csrc/kernels/audio_features.cpp), so operators/audio_features.py plans once
for both devices. Every method is one launch per step and batch; the transforms of a batch are one batched
cuFFT plan through CuPy's rfft (one per distinct size), reused by batches of about the same size."""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ._launch import KernelFamily

_PREEMPHASIS_INPUTS = {np.dtype(np.int16): "i16", np.dtype(np.int32): "i32", np.dtype(np.float32): "f32"}


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


class AudioFeatureKernels(KernelFamily):
    def _audio_launch(self, name: str, work: np.ndarray, desc: np.ndarray, before: tuple, after: tuple,
                      extra: tuple = ()) -> None:
        self._launch_batch("audio_features", name, np.asarray(work, np.int64), desc, before, after, extra)

    def _rows(self, count: int, nfft: int) -> tuple[Any, int]:
        """Room for ``count`` rows of ``nfft`` values, and how many rows it holds: rounded up (by at
        most an eighth, rows whose bins nobody reads) so that batches of about the same size share
        one cuFFT plan in CuPy's plan cache, instead of planning each batch's transform anew."""
        bucket = max(64, 1 << max(count.bit_length() - 4, 0))
        padded = -(-count // bucket) * bucket
        return self.ctx.empty(padded * nfft, np.float32), padded

    def _rfft(self, rows: Any, count: int, planned: int, nfft: int) -> Any:
        """The bins of the ``planned`` rows of ``nfft`` values (``count`` filled, the rest zeroed
        here), as interleaved float32 (re, im) pairs."""
        stream = self.ctx.stream
        with self.ctx if stream is not None else contextlib.nullcontext():
            rows[count * nfft:] = 0
            bins = self.cp.fft.rfft(rows.reshape(planned, nfft), axis=1)
            return self.cp.ascontiguousarray(bins.astype(np.complex64, copy=False)).reshape(-1).view(np.float32)

    def spectrogram(self, pool: Any, src: Any, lengths: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_shapes: np.ndarray, dst_offsets: np.ndarray, window: np.ndarray, nfft: int, step: int,
                    centered: bool, reflect: bool, power: int, freq_major: bool) -> None:
        frames = dst_shapes[:, 1] if freq_major else dst_shapes[:, 0]
        first = _offsets(frames)
        total = int(frames.sum())
        if total == 0:
            return
        rows, planned = self._rows(total, nfft)
        desc = np.stack([src_offsets, lengths[:, 0], first, frames], axis=1).astype(np.int64)
        self._audio_launch("audio_frames", frames * nfft, desc, (src, rows),
                     (lambda p: p[0], np.int32(len(window)), np.int32(nfft), np.int32(step), np.int32(centered),
                      np.int32(reflect)), (np.asarray(window, np.float64),))
        bins = self._rfft(rows, total, planned, nfft)
        nbins = nfft // 2 + 1
        desc = np.stack([first, frames, dst_offsets], axis=1).astype(np.int64)
        self._audio_launch("audio_power", frames * nbins, desc, (bins, dst),
                     (np.int32(nbins), np.int32(power), np.int32(freq_major)))

    def power_spectrum(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                       dst_offsets: np.ndarray, nffts: np.ndarray, power: int) -> None:
        for nfft in np.unique(nffts):  # one batched transform per distinct size
            pick = np.nonzero(nffts == nfft)[0]
            lines = shapes[pick, 0] * shapes[pick, 2]
            total = int(lines.sum())
            if total == 0:
                continue
            first = _offsets(lines)
            nfft, nbins = int(nfft), int(nfft) // 2 + 1
            desc = np.stack([src_offsets[pick], shapes[pick, 0], shapes[pick, 1], shapes[pick, 2], first,
                             dst_offsets[pick], np.full(len(pick), nfft)], axis=1).astype(np.int64)
            rows, planned = self._rows(total, nfft)
            self._audio_launch("audio_lines", lines * nfft, desc, (src, rows), (np.int32(nfft),))
            bins = self._rfft(rows, total, planned, nfft)
            self._audio_launch("audio_line_power", lines * nbins, desc, (bins, dst), (np.int32(nbins), np.int32(power)))

    def matrix_along_axis(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                          dst_offsets: np.ndarray, matrices: list, which: np.ndarray) -> None:
        which = np.asarray(which, np.int64)
        sizes = np.array([m.size for m in matrices], np.int64)
        rows = np.array([m.shape[0] for m in matrices], np.int64)[which]
        if (shapes[:, 1] != np.array([m.shape[1] for m in matrices], np.int64)[which]).any():
            raise ValueError("matrix_along_axis: a sample's extent differs from its matrix's columns")
        desc = np.stack([src_offsets, dst_offsets, shapes[:, 0], shapes[:, 1], shapes[:, 2], rows,
                         _offsets(sizes)[which]], axis=1).astype(np.int64)
        flat = np.concatenate([np.asarray(m, np.float64).reshape(-1) for m in matrices])
        self._audio_launch("audio_matrix", shapes[:, 0] * rows * shapes[:, 2], desc, (src, dst), (lambda p: p[0],),
                     (flat,))

    def to_decibels(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_offsets: np.ndarray, multiplier: float, refs: Any, floor_ratio: float) -> None:
        """``refs``: float32 [N] on the device."""
        volumes = shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)
        desc = np.stack([src_offsets, dst_offsets, volumes], axis=1).astype(np.int64)
        self._audio_launch("audio_decibels", volumes, desc, (src, dst, refs),
                     (np.float64(multiplier), np.float64(floor_ratio)))

    def preemphasis(self, pool: Any, src: Any, src_type: int, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_type: int, dst_offsets: np.ndarray, coeffs: np.ndarray, border: int) -> None:
        name = _PREEMPHASIS_INPUTS.get(np.dtype(src.dtype))
        if name is None or dst.dtype != np.float32:
            raise NotImplementedError(f"preemphasis_filter on the GPU takes INT16, INT32 or FLOAT input into FLOAT "
                                      f"output; got {src.dtype} into {dst.dtype}")
        volumes = shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)
        desc = np.stack([src_offsets, dst_offsets, volumes], axis=1).astype(np.int64)
        self._audio_launch(f"audio_preemphasis_{name}", volumes, desc, (src, dst), (lambda p: p[0], np.int32(border)),
                     (np.asarray(coeffs, np.float32),))
