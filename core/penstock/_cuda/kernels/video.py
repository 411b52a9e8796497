"""NV12/P016 frames from the GPU's video decoders to RGB (csrc/cuda/video.cu)."""
from __future__ import annotations

import numpy as np

from ._launch import KernelFamily, descriptors

NV12_DESC = 10  # kVDesc


class VideoKernels(KernelFamily):
    def nv12_to_rgb(self, src_addr: np.ndarray, pitches: np.ndarray, luma_rows: np.ndarray, sample_bytes: np.ndarray,
                    heights: np.ndarray, widths: np.ndarray, full_range: np.ndarray, dst_addr: np.ndarray,
                    fill: np.ndarray) -> None:
        """GPU only (the CPU converts with libswscale as it decodes): frame i, a 4:2:0 surface at
        device address ``src_addr[i]`` (0: none, it takes the RGB colour ``fill``) with rows
        ``pitches[i]`` bytes apart, ``luma_rows[i]`` luma rows before the interleaved chroma and
        ``sample_bytes[i]`` bytes per sample (1: NV12, 2: P016), to its top-left ``heights[i]`` x
        ``widths[i]`` pixels as interleaved RGB at ``dst_addr[i]``; one launch."""
        n = len(src_addr)
        desc = descriptors(n, NV12_DESC)
        desc[:, 0] = np.asarray(src_addr, np.uint64).view(np.int64)
        desc[:, 1] = np.asarray(dst_addr, np.uint64).view(np.int64)
        desc[:, 2] = widths
        desc[:, 3] = heights
        desc[:, 4] = pitches
        desc[:, 5] = np.asarray(widths, np.int64) * np.asarray(heights, np.int64)
        desc[:, 6] = full_range
        colour = np.asarray(fill, np.int64).reshape(-1)
        desc[:, 7] = colour[0] | (colour[1] << 8) | (colour[2] << 16)
        desc[:, 8] = luma_rows
        desc[:, 9] = sample_bytes
        self._launch_batch("video", "nv12_to_rgb", desc[:, 5], desc, (), ())
