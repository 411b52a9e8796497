"""Separable resampling: filter taps, then a vertical and a horizontal pass (csrc/cuda/resize.cu)."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ... import _engine
from ..._batch import zero_rows
from ._launch import BLOCK, ITEMS, TYPE_NAMES, KernelFamily

# Floats (16 MB) of a resize's intermediate at a time. On an H200 (ResNet-50 train pipeline, three
# runs each, interleaved) 16 MB ran 24.4k, 20.0k and 22.6k img/s at 767 MB peak, 32 MB 21.7k, 19.7k
# and 20.9k at 785 MB: more, smaller launches cost nothing measurable.
_RESIZE_TMP_ELEMENTS = 4 << 20


class ResizeKernels(KernelFamily):
    _planning_threads: Any = None

    @property
    def _planning_pool(self) -> Any:
        """Threads of its own for host-side planning (resize taps of extreme downscaling), made on
        first use: the pipeline's pool may be busy decoding for the mixed stage, and GPU-stage work
        must not queue behind it."""
        if self._planning_threads is None:
            self._planning_threads = _engine.ThreadPool(min(4, os.cpu_count() or 1), "penstock-plan")
        return self._planning_threads

    def resize(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
               dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray, dst_type: int, spatial: int,
               roi: np.ndarray, min_filter: np.ndarray, mag_filter: np.ndarray, antialias: bool) -> None:
        if spatial != 2:
            raise NotImplementedError("resize: volumes (3 spatial dimensions) are not supported on the GPU; "
                                      "resize them with device='cpu'")
        self._resample(src, src_shapes, src_offsets, src_type, dst, dst_shapes, dst_offsets, roi, min_filter,
                       mag_filter, antialias, self._fn("resize", f"resize_h_{TYPE_NAMES[dst_type]}"), ())

    def resize_normalize(self, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
                         mid_shapes: np.ndarray, mid_type: int, roi: np.ndarray, min_filter: np.ndarray,
                         mag_filter: np.ndarray, antialias: bool, dst: Any, dst_type: int, windows: np.ndarray,
                         norm: np.ndarray) -> None:
        """Images (HWC) resized to ``mid_shapes`` as ``resize`` would store them (type ``mid_type``)
        and, in the same pass, cropped, mirrored, normalized and laid out into ``dst`` as
        crop_mirror_normalize would from them: ``windows`` [N, 8] and ``norm`` are the
        resize_h_*_cmn_* kernels' (csrc/cuda/resize.cu); the resized batch is never stored."""
        # (the pass writes through the windows' offsets; shared zeros: filling new ones gives the GIL away)
        mid_offsets = zero_rows(len(mid_shapes), 1)[:, 0]
        self._resample(src, src_shapes, src_offsets, src_type, dst, mid_shapes, mid_offsets, roi, min_filter,
                       mag_filter, antialias,
                       self._fn("resize", f"resize_h_{TYPE_NAMES[mid_type]}_cmn_{TYPE_NAMES[dst_type]}"),
                       (np.ascontiguousarray(windows, np.int64), np.ascontiguousarray(norm, np.float32)))

    def _resample(self, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int, dst: Any,
                  dst_shapes: np.ndarray, dst_offsets: np.ndarray, roi: np.ndarray, min_filter: np.ndarray,
                  mag_filter: np.ndarray, antialias: bool, horizontal: Any, extra_params: tuple) -> None:
        """The taps, then per run of frames the vertical pass and the ``horizontal`` one, whose
        parameters after resize_h's are ``extra_params``: host tables of a row per frame, uploaded
        with the plan's."""
        if len(src_shapes) == 0:
            return
        # Per axis (y then x of each sample): the taps kernel's row (sizes, filters, tap count, where its
        # starts and weights begin), the source range it reads, its region. The taps themselves (one
        # start, count and weights per output pixel) the resize_taps kernel computes; filters wider than
        # it takes (extreme downscaling) are planned on the host by the CPU kernel's code.
        axes, lo, hi, rois, taps_blocks, totals = _engine.resize_axis_spans(
            src_shapes, dst_shapes, np.ascontiguousarray(roi, np.float64), np.asarray(min_filter, np.int32),
            np.asarray(mag_filter, np.int32), bool(antialias), BLOCK)
        total_out, total_w, most_taps, taps_grid = (int(t) for t in totals)
        total_out, total_w = max(total_out, 1), max(total_w, 1)
        if most_taps > 128:
            out_sizes = np.ascontiguousarray(axes[:, 1])
            taps, start_at, weight_at, lo, hi, starts, weights = _engine.resize_taps(
                self._planning_pool, np.ascontiguousarray(axes[:, 0]), out_sizes, np.ascontiguousarray(rois[:, 0]),
                np.ascontiguousarray(rois[:, 1]), axes[:, 2].astype(np.int32), axes[:, 3].astype(np.int32),
                bool(antialias))
            axes = axes.copy()
            axes[:, 4], axes[:, 5], axes[:, 6] = taps, start_at, weight_at
            taps_params = (starts[:total_out], np.repeat(taps, out_sizes).astype(np.int32), weights)
        else:
            taps_params = (axes, taps_blocks, rois)
        # one descriptor per frame (frames of a sample share its taps). The vertical pass's float
        # intermediate holds a run of frames at a time, reused run after run in stream order: for a
        # whole batch it would be out_h x in_w x C floats per image, 400 MB for 256 ImageNet-sized
        # images resized to 256 px, all of it on the pool's peak.
        desc, v_blocks, h_blocks, runs, tmp_elements = _engine.resize_pass_plan(
            src_shapes, dst_shapes, src_offsets, dst_offsets, axes, lo, hi, _RESIZE_TMP_ELEMENTS, BLOCK * ITEMS)
        if not len(desc):  # samples without frames
            return
        d_desc, d_v_blocks, d_h_blocks, *params = self.ctx.upload_params(desc, v_blocks, h_blocks, *extra_params,
                                                                         *taps_params)
        d_extra, d_taps = params[:len(extra_params)], params[len(extra_params):]
        address = self.ctx.address
        # One block of device memory for the taps kernel's output (starts and counts, int32, then
        # weights, float32) and the float intermediate behind it, and one engine call for every launch:
        # each array and launch of its own held a pipeline thread's GIL for its Python (~35 us an
        # allocation in py-spy's samples on an H100's host)
        taps_elements = 0 if most_taps > 128 else -(-(2 * total_out + total_w) // 64) * 64
        scratch = self.ctx.empty(taps_elements + max(int(tmp_elements[0]), 1), np.float32)
        base = address(scratch)
        tmp = base + 4 * taps_elements
        if most_taps > 128:
            taps_at = tuple(address(d) for d in d_taps)  # starts, counts, weights
        else:
            taps_at = (base, base + 4 * total_out, base + 8 * total_out)
        # per run, the vertical pass into tmp, then the horizontal pass out of it (tmp is reused by the
        # next run in stream order)
        run_start, run_end, grids, blocks_at = runs[:, 0], runs[:, 1], runs[:, 2:4], runs[:, 4]
        slots = 8 + len(extra_params)
        launches = np.zeros((len(runs), 2, slots), np.int64)
        launches[:, :, 2] = address(d_desc) + run_start[:, None] * desc.strides[0]
        launches[:, 0, 3] = address(d_v_blocks) + blocks_at * 8
        launches[:, 1, 3] = address(d_h_blocks) + blocks_at * 8
        launches[:, :, 4] = (run_end - run_start)[:, None]
        launches[:, :, 5:8] = taps_at
        launches[:, 0, :2] = (address(src), tmp)
        launches[:, 1, :2] = (tmp, address(dst))
        for k, (host, device) in enumerate(zip(extra_params, d_extra)):  # per-frame tables, from the run's frame
            launches[:, 1, 8 + k] = address(device) + run_start * host.strides[0]
        kernels = [self._fn("resize", f"resize_v_{TYPE_NAMES[src_type]}"), horizontal] * len(runs)
        signatures = ["ppppippp", "ppppippp" + "p" * len(extra_params)] * len(runs)
        launches, grids = launches.reshape(-1, slots), grids.reshape(-1)
        if most_taps <= 128 and taps_grid:  # the taps first, in stream order before the passes read them
            d_axes, d_taps_blocks, d_rois = d_taps
            taps = np.zeros((1, slots), np.int64)
            taps[0, :8] = (address(d_axes), address(d_taps_blocks), len(axes), address(d_rois), int(antialias),
                           *taps_at)
            kernels.insert(0, self._fn("resize", "resize_taps"))
            signatures.insert(0, "ppipippp")
            launches, grids = np.concatenate([taps, launches]), np.concatenate([[taps_grid], grids])
        self.ctx.launch_kernels(kernels, grids, BLOCK, launches, signatures)
