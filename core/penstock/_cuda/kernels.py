"""GPU batch kernels with the signatures of their CPU siblings in ``penstock._engine``.

An operator's Python code plans a batch (output shapes, windows, per-sample parameters) once for
both devices and calls ``ws.kernels.<name>(ws.pool, ...)``: on the CPU that is the native engine,
on the GPU an instance of :class:`GpuKernels`, which takes the same arguments with CuPy buffers
in place of numpy ones. Each call uploads its per-sample descriptors in one copy and launches
one grid per batch (resize: one per pass) on the pipeline's stream; nothing waits on the host.
"""
from __future__ import annotations

import os
from typing import Any, NamedTuple, Sequence

import numpy as np

from .. import _engine
from ._compile import kernel
from ._image_plans import IMAGE_TYPES, blur_weights, jpeg_plan, jpeg_tables
from ._runtime import DeviceContext

BLOCK = 256
# Elements per thread of the kernels that loop over several (kItems in csrc/cuda/common.cuh): the
# gather of decoded windows, crop_mirror_normalize and resize's two passes.
ITEMS = 8
MAX_DIMS = 8
# Floats (16 MB) of a resize's intermediate at a time. On an H200 (ResNet-50 train pipeline, three
# runs each, interleaved) 16 MB ran 24.4k, 20.0k and 22.6k img/s at 767 MB peak, 32 MB 21.7k, 19.7k
# and 20.9k at 785 MB: more, smaller launches cost nothing measurable.
_RESIZE_TMP_ELEMENTS = 4 << 20

# DALIDataType code -> type name used in kernel names (csrc/cuda/common.cuh)
TYPE_NAMES = {0: "u8", 1: "u16", 2: "u32", 3: "u64", 4: "i8", 5: "i16", 6: "i32", 7: "i64",
              8: "f16", 9: "f32", 10: "f64", 11: "bool"}
FLOAT_CODES, INT_CODES = (8, 9, 10), range(0, 8)  # FLOAT16..FLOAT64; UINT8..INT64
UNIT_NAMES = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}  # element-size-generic kernels
COMPARISONS = range(9, 15)  # kEq .. kGe in the binary op codes


def _blocks(work: np.ndarray, items: int = 1) -> tuple[np.ndarray, int]:
    """Block prefix sums (N + 1) for per-sample element counts, and the grid size, for kernels
    whose threads take ``items`` elements each."""
    per_block = BLOCK * items
    per = (np.asarray(work, np.int64) + per_block - 1) // per_block
    start = np.zeros(len(per) + 1, np.int64)
    np.cumsum(per, out=start[1:])
    return start, int(start[-1])


class Launch(NamedTuple):
    """A batch kernel's launch with its parameters in device memory (which it keeps alive): queued
    here (``queue``), or by native code (``native``: the mixed decoder queues its gather right
    after nvImageCodec's decoding, without the GIL). ``grid`` 0: nothing to launch."""
    function: Any
    grid: int
    args: tuple

    def queue(self, stream: Any) -> None:
        if self.grid:
            self.function((self.grid,), (BLOCK,), self.args, stream=stream)

    def native(self) -> tuple | None:
        """(CUfunction, grid, block, the parameters as integers: device arrays by address)."""
        if not self.grid:
            return None
        function = self.function.kernel  # CuPy's RawKernel -> its Function on the current device
        return function.ptr, self.grid, BLOCK, [_as_parameter(a) for a in self.args]


def _as_parameter(value: Any) -> int:
    if hasattr(value, "data") and hasattr(value.data, "ptr"):  # a device array
        return int(value.data.ptr)
    if isinstance(value, (int, np.integer)):
        return int(value) & 0xFFFFFFFFFFFFFFFF  # as the kernel's parameter bytes (two's complement)
    raise TypeError(f"a natively queued kernel takes device arrays and integers, not {type(value).__name__}")


def budget_runs(sizes: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive runs [start, end) of items, a new one wherever the sizes before an item pass
    another multiple of ``budget``: each run's total is under ``budget`` plus its last item."""
    sizes = np.asarray(sizes, np.int64)
    if not len(sizes):
        return []
    before = np.cumsum(sizes) - sizes
    cuts = np.flatnonzero(np.diff(before // max(int(budget), 1))) + 1
    bounds = [0] + cuts.tolist() + [len(sizes)]
    return list(zip(bounds[:-1], bounds[1:]))


def _dims(shapes: np.ndarray, what: str) -> int:
    nd = shapes.shape[1]
    if nd > MAX_DIMS:
        raise ValueError(f"{what}: GPU kernels take at most {MAX_DIMS} dimensions, got {nd}")
    return nd


def _padded(a: np.ndarray, width: int = MAX_DIMS, fill: int = 1) -> np.ndarray:
    out = np.full((a.shape[0], width), fill, np.int64)
    out[:, :a.shape[1]] = a
    return out


def _strides(shapes: np.ndarray) -> np.ndarray:
    """Row-major element strides of each sample ([N, nd])."""
    n, nd = shapes.shape
    strides = np.ones((n, nd), np.int64)
    if nd > 1:
        strides[:, :-1] = np.cumprod(shapes[:, :0:-1], axis=1)[:, ::-1]
    return strides


def _volumes(shapes: np.ndarray) -> np.ndarray:
    return shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)


class GpuKernels:
    """The GPU kernels of one pipeline (its device and stream)."""

    def __init__(self, ctx: DeviceContext):
        self.ctx = ctx
        self.cp = ctx.cp
        self._planning_threads: Any = None

    @property
    def _planning_pool(self) -> Any:
        """Threads of its own for host-side planning (resize taps of extreme downscaling), made on
        first use: the pipeline's pool may be busy decoding for the mixed stage, and GPU-stage work
        must not queue behind it."""
        if self._planning_threads is None:
            self._planning_threads = _engine.ThreadPool(min(4, os.cpu_count() or 1))
        return self._planning_threads

    # -- plumbing --------------------------------------------------------------------------
    def _fn(self, module: str, name: str) -> Any:
        return kernel(module, name, self.ctx.device_id)

    def _prepare_batch(self, module: str, name: str, work: np.ndarray, desc: np.ndarray, args_before: Sequence,
                       args_after: Sequence, extra_params: Sequence[np.ndarray] = (),
                       items: int = 1) -> tuple[Launch, list]:
        """The launch of ``name(*args_before, desc, block_start, n, *args_after)`` over per-sample
        ``work`` elements, ``items`` per thread, its parameters uploaded; extra host arrays are
        uploaded with the descriptors and returned too."""
        block_start, grid = _blocks(work, items)
        if grid == 0:
            return Launch(None, 0, ()), []
        dev = self.ctx.upload_params(np.ascontiguousarray(desc, np.int64), block_start, *extra_params)
        args = list(args_before) + [dev[0], dev[1], np.int32(len(work))]
        args += [a(dev[2:]) if callable(a) else a for a in args_after]
        return Launch(self._fn(module, name), grid, tuple(args)), dev[2:]

    def _launch_batch(self, module: str, name: str, work: np.ndarray, desc: np.ndarray, args_before: Sequence,
                      args_after: Sequence, extra_params: Sequence[np.ndarray] = (), items: int = 1) -> list:
        """``_prepare_batch``'s launch, queued on the stream; returns the extra arrays."""
        launch, extra = self._prepare_batch(module, name, work, desc, args_before, args_after, extra_params, items)
        launch.queue(self.ctx.stream)
        return extra

    def _grid_stride(self, module: str, name: str, n: int, *args: Any) -> None:
        if n == 0:
            return
        grid = int(min((n + BLOCK - 1) // BLOCK, 65535 * 8))
        self._fn(module, name)((grid,), (BLOCK,), tuple(args) + (np.int64(n),), stream=self.ctx.stream)

    # -- copies ----------------------------------------------------------------------------
    def copy(self, pool: Any, src: Any, dst: Any) -> None:
        nbytes = int(src.nbytes)
        if nbytes != int(dst.nbytes):
            raise ValueError("copy: buffer sizes differ")
        if nbytes:
            rt = self.cp.cuda.runtime
            rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, self.ctx.stream.ptr)

    def slice(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
              dst_shapes: np.ndarray, dst_offsets: np.ndarray, anchors: np.ndarray, flips: np.ndarray,
              fill: np.ndarray, channel_dim: int) -> None:
        n, nd = src_shapes.shape
        _dims(src_shapes, "slice")
        es = src.dtype.itemsize
        unit = UNIT_NAMES.get(es)
        if unit is None:
            raise TypeError(f"slice: no GPU kernel for {es}-byte elements")
        fill = np.ascontiguousarray(fill)
        if fill.dtype.itemsize != es or fill.ndim != 2 or fill.shape[0] != n:
            raise ValueError("slice: fill values must be [N, F] of the data type")
        desc = np.zeros((n, 28), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(dst_shapes)
        desc[:, 3] = (np.asarray(flips, np.int64) << np.arange(nd)).sum(axis=1) if nd else 0
        desc[:, 4:12] = _padded(src_shapes)
        desc[:, 12:20] = _padded(dst_shapes)
        desc[:, 20:28] = _padded(np.asarray(anchors, np.int64), fill=0)
        udt = np.dtype(f"u{es}")
        self._launch_batch("slice", f"slice_{unit}", desc[:, 2], desc, (src.view(udt), dst.view(udt)),
                           (np.int32(nd), lambda p: p[0], np.int32(fill.shape[1]), np.int32(channel_dim)),
                           (fill.view(udt),))

    def transpose(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, perm: Sequence[int],
                  dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray) -> None:
        n, nd = src_shapes.shape
        _dims(src_shapes, "transpose")
        es = src.dtype.itemsize
        unit = UNIT_NAMES.get(es)
        if unit is None:
            raise TypeError(f"transpose: no GPU kernel for {es}-byte elements")
        perm = list(perm)
        desc = np.zeros((n, 19), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(dst_shapes)
        desc[:, 3:11] = _padded(src_shapes[:, perm])
        desc[:, 11:19] = _padded(_strides(src_shapes)[:, perm], fill=0)
        udt = np.dtype(f"u{es}")
        self._launch_batch("slice", f"transpose_{unit}", desc[:, 2], desc, (src.view(udt), dst.view(udt)),
                           (np.int32(nd),))

    def concat(self, pool: Any, srcs: Sequence[Any], shapes: Sequence[np.ndarray], offsets: Sequence[np.ndarray],
               axis: int, dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray) -> None:
        k, n = len(srcs), len(dst_shapes)
        es = dst.dtype.itemsize
        unit = UNIT_NAMES.get(es)
        if unit is None:
            raise TypeError(f"concat: no GPU kernel for {es}-byte elements")
        desc = np.zeros((n, 4 + 2 * k), np.int64)
        desc[:, 0] = dst_offsets
        desc[:, 1] = _volumes(dst_shapes)
        desc[:, 2] = dst_shapes[:, axis]
        desc[:, 3] = _volumes(dst_shapes[:, axis + 1:]) if dst_shapes.shape[1] > axis + 1 else 1
        for j, (buf, sh, off) in enumerate(zip(srcs, shapes, offsets)):
            desc[:, 4 + 2 * j] = (np.uint64(buf.data.ptr) + np.asarray(off, np.uint64) * np.uint64(es)).view(np.int64)
            desc[:, 5 + 2 * j] = sh[:, axis]
        self._launch_batch("slice", f"concat_{unit}", desc[:, 1], desc, (dst.view(f"u{es}"),), (np.int32(k),))

    # -- element-wise ----------------------------------------------------------------------
    def cast(self, pool: Any, src: Any, src_code: int, dst: Any, dst_code: int, crop_conversion: bool = False) -> None:
        if src.size != dst.size:
            raise ValueError("cast: buffer sizes differ")
        # crop and slice's conversion differs only float -> integer (truncating) and to float16
        # (saturating): the pairs cast_trunc_* exist for
        differs = (src_code in FLOAT_CODES and dst_code in INT_CODES) or (
            dst_code == FLOAT_CODES[0] and src_code in (*INT_CODES, *FLOAT_CODES[1:]))
        kind = "cast_trunc" if crop_conversion and differs else "cast"
        self._grid_stride("elementwise", f"{kind}_{TYPE_NAMES[src_code]}_{TYPE_NAMES[dst_code]}", int(src.size),
                          src, dst)

    def unary(self, pool: Any, op: int, code: int, src: Any, dst: Any) -> None:
        if code == 8:
            raise TypeError("arithmetic on FLOAT16 is not supported")
        self._grid_stride("elementwise", f"unary_{TYPE_NAMES[code]}", int(src.size), np.int32(op), src, dst)

    def binary(self, pool: Any, op: int, code: int, a: Any, a_shapes: np.ndarray, a_offsets: np.ndarray,
               b: Any, b_shapes: np.ndarray, b_offsets: np.ndarray, out: Any, out_shapes: np.ndarray,
               out_offsets: np.ndarray) -> None:
        if code == 8:
            raise TypeError("arithmetic on FLOAT16 is not supported")
        n, nd = out_shapes.shape
        _dims(out_shapes, "arithmetic")
        desc = np.zeros((n, 28), np.int64)
        desc[:, 0] = out_offsets
        desc[:, 1] = _volumes(out_shapes)
        desc[:, 4:12] = _padded(out_shapes)
        for k, (shapes, offsets) in enumerate(((a_shapes, a_offsets), (b_shapes, b_offsets))):
            # right-align the operand's dims with the output's; broadcast dims get stride 0
            full = np.ones((n, nd), np.int64)
            if shapes.shape[1]:
                full[:, nd - shapes.shape[1]:] = np.broadcast_to(shapes, (n, shapes.shape[1]))
            strides = np.where((full == 1) & (out_shapes != 1), 0, _strides(full))
            desc[:, 2 + k] = np.broadcast_to(offsets, (n,))
            desc[:, 12 + 8 * k:12 + 8 * k + nd] = strides
        kind = "compare" if op in COMPARISONS else "binary"
        self._launch_batch("elementwise", f"{kind}_{TYPE_NAMES[code]}", desc[:, 1], desc,
                           (np.int32(op), a, b, out), (np.int32(nd),))

    # -- images ----------------------------------------------------------------------------
    def gather_images(self, pointers: np.ndarray, pitches: np.ndarray, windows: np.ndarray,
                      channels: np.ndarray, reverse: np.ndarray, dst: Any, dst_offsets: np.ndarray) -> None:
        """Copies window (y, x, h, w) of uint8 HWC images at device addresses ``pointers`` (row
        pitch in bytes, ``channels`` each, channel order reversed where ``reverse``) into the packed
        batch ``dst`` (uint8, or float32 = v / 255)."""
        launch = self.gather_images_launch(pointers, pitches, windows, channels, reverse, dst, dst_offsets)
        launch.queue(self.ctx.stream)

    def gather_images_launch(self, pointers: np.ndarray, pitches: np.ndarray, windows: np.ndarray,
                             channels: np.ndarray, reverse: np.ndarray, dst: Any, dst_offsets: np.ndarray) -> Launch:
        """``gather_images``' launch, prepared but not queued."""
        n = len(pointers)
        desc = np.zeros((n, 10), np.int64)
        desc[:, 0] = np.asarray(pointers, np.uint64).view(np.int64)
        desc[:, 1] = pitches
        desc[:, 2:4] = windows[:, :2]
        desc[:, 4] = dst_offsets
        desc[:, 5] = windows[:, 3]
        desc[:, 6] = windows[:, 2] * windows[:, 3] * channels
        desc[:, 7] = channels
        desc[:, 8] = reverse
        name = "gather_f32" if dst.dtype == np.float32 else "gather_u8"
        return self._prepare_batch("decode", name, desc[:, 6], desc, (dst,), (), items=ITEMS)[0]

    def crop_mirror_normalize(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray,
                              src_type: int, dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray,
                              dst_type: int, anchors: np.ndarray, mirror: np.ndarray, mean: np.ndarray,
                              std: np.ndarray, scale: float, shift: float, fill: np.ndarray, cdim: int,
                              pad: bool) -> None:
        n, nd = src_shapes.shape
        _dims(src_shapes, "crop_mirror_normalize")
        if n == 0:
            return
        c = int(src_shapes[0, -1])
        std = np.asarray(std, np.float64)
        if (std == 0).any():
            raise ValueError("crop_mirror_normalize: std must not be 0")
        inv_std = (float(scale) / std).astype(np.float32)
        win = np.delete(dst_shapes, cdim, axis=1)
        desc = np.zeros((n, 28), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = np.asarray(mirror) != 0
        desc[:, 3] = _volumes(dst_shapes)
        desc[:, 4:12] = _padded(src_shapes[:, :-1])
        desc[:, 12:20] = _padded(np.asarray(anchors, np.int64), fill=0)
        desc[:, 20:28] = _padded(win)
        self._launch_batch(
            "crop_mirror_normalize", f"cmn_{TYPE_NAMES[src_type]}_{TYPE_NAMES[dst_type]}", desc[:, 3], desc,
            (src, dst), (np.int32(nd), np.int32(c), np.int32(c + int(bool(pad))), np.int32(cdim),
                         lambda p: p[0], lambda p: p[1], np.float32(shift), lambda p: p[2]),
            (np.asarray(mean, np.float32), inv_std, np.asarray(fill, np.float32)), items=ITEMS)

    def color_matrix(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
                     dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray, dst_type: int,
                     matrices: np.ndarray) -> None:
        n = len(src_shapes)
        matrices = np.ascontiguousarray(matrices, np.float32)
        co, ci = matrices.shape[1], matrices.shape[2] - 1
        if n and ((src_shapes[:, -1] != ci).any() or (dst_shapes[:, -1] != co).any()):
            raise ValueError(f"color_matrix: samples must have {ci} channels in and {co} out")
        desc = np.zeros((n, 4), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(src_shapes) // max(ci, 1)
        self._launch_batch("color", f"color_matrix_{TYPE_NAMES[src_type]}_{TYPE_NAMES[dst_type]}", desc[:, 2],
                           desc, (src, dst), (np.int32(ci), np.int32(co), lambda p: p[0]), (matrices,))

    def warp_affine(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                    dst_shapes: np.ndarray, dst_offsets: np.ndarray, dtype: int, matrices: np.ndarray,
                    interp: int, fill: float | None) -> None:
        n = len(src_shapes)
        if src_shapes.shape[1] != 4:
            raise ValueError("warp_affine: samples must be (frames, H, W, C)")
        if interp not in (0, 1):
            raise ValueError("warp_affine: only nearest-neighbour and linear interpolation are supported")
        channels = set(src_shapes[:, 3].tolist())
        if len(channels) > 1:
            raise ValueError("warp_affine: all samples need the same number of channels on the GPU")
        desc = np.zeros((n, 8), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2:4] = src_shapes[:, 1:3]
        desc[:, 4:6] = dst_shapes[:, 1:3]
        desc[:, 6] = dst_shapes[:, 0] * dst_shapes[:, 1] * dst_shapes[:, 2]
        c = channels.pop() if channels else 1
        self._launch_batch("warp", f"warp_affine_{TYPE_NAMES[dtype]}", desc[:, 6], desc, (src, dst),
                           (np.int32(c), lambda p: p[0], np.int32(interp), np.int32(fill is not None),
                            np.float32(fill or 0.0)), (np.ascontiguousarray(matrices, np.float32),))

    def _resize_taps(self, pool: Any, in_sizes: np.ndarray, out_sizes: np.ndarray, roi_start: np.ndarray,
                     roi_end: np.ndarray, min_filter: np.ndarray, mag_filter: np.ndarray, antialias: bool) -> tuple:
        """Per axis: (weight stride, first start index, first weight index, lowest and highest+1
        source index read) and the device arrays (starts, counts, weights), one entry per output
        pixel. Computed by the resize_taps kernel; filters wider than it takes (extreme
        downscaling) are planned on the host by the CPU kernel's code."""
        cp = self.cp
        step = (roi_end - roi_start) / np.maximum(out_sizes, 1)
        scale = np.abs(step)
        kind = np.where(scale > 1, min_filter, mag_filter).astype(np.int64)
        stretch = np.where((scale > 1) & (antialias | (kind == 4) | (kind == 5)), scale, 1.0)
        radius = np.array([0.0, 1.0, 2.0, 3.0, 1.0, 1.5])[kind] * stretch
        taps = np.where(kind == 0, 1, np.minimum(in_sizes, np.floor(2 * radius).astype(np.int64) + 2))
        taps = np.maximum(taps, 1)
        start_at = np.concatenate([[0], np.cumsum(out_sizes)[:-1]]).astype(np.int64)
        weight_at = np.concatenate([[0], np.cumsum(out_sizes * taps)[:-1]]).astype(np.int64)
        # the source range every output may read (before trimming), for the vertical pass's span
        c = roi_start[:, None] + (np.stack([np.zeros_like(out_sizes), out_sizes - 1], 1) + 0.5) * step[:, None]
        nn = kind == 0
        first = np.where(nn, np.floor(c.min(1) + 1e-7), np.ceil(c.min(1) - 0.5 - radius))
        last = np.where(nn, np.floor(c.max(1) + 1e-7), np.floor(c.max(1) - 0.5 + radius))
        top = np.maximum(in_sizes - 1, 0)
        lo = np.clip(first, 0, top).astype(np.int64)
        hi = np.where(out_sizes > 0, np.clip(last, 0, top).astype(np.int64) + 1, lo)
        total_out, total_w = int(out_sizes.sum()), int((out_sizes * taps).sum())
        if taps.max(initial=1) > 128:
            t, s_at, w_at, lo, hi, starts, weights = _engine.resize_taps(
                self._planning_pool, in_sizes, out_sizes, roi_start, roi_end, min_filter, mag_filter, antialias)
            counts = np.repeat(t, out_sizes).astype(np.int32)
            d_starts, d_counts, d_weights = self.ctx.upload_params(starts[:max(total_out, 1)], counts, weights)
            return t, s_at, w_at, lo, hi, d_starts, d_counts, d_weights
        with self.ctx:
            d_starts = cp.empty(max(total_out, 1), np.int32)
            d_counts = cp.empty(max(total_out, 1), np.int32)
            d_weights = cp.empty(max(total_w, 1), np.float32)
        axes = np.column_stack([in_sizes, out_sizes, min_filter, mag_filter, taps, start_at, weight_at,
                                np.zeros_like(in_sizes)]).astype(np.int64)
        rois = np.column_stack([roi_start, roi_end]).astype(np.float64)
        self._launch_batch("resize", "resize_taps", out_sizes, axes, (),
                           (lambda p: p[0], np.int32(bool(antialias)), d_starts, d_counts, d_weights), (rois,))
        return taps, start_at, weight_at, lo, hi, d_starts, d_counts, d_weights

    def resize(self, pool: Any, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
               dst: Any, dst_shapes: np.ndarray, dst_offsets: np.ndarray, dst_type: int, spatial: int,
               roi: np.ndarray, min_filter: np.ndarray, mag_filter: np.ndarray, antialias: bool) -> None:
        if spatial != 2:
            raise NotImplementedError("resize: volumes (3 spatial dimensions) are not supported on the GPU; "
                                      "resize them with device='cpu'")
        n, nd = src_shapes.shape
        if n == 0:
            return
        # taps per sample and axis (y then x)
        in_hw, out_hw = src_shapes[:, -3:-1], dst_shapes[:, -3:-1]
        taps, start_at, weight_at, lo, hi, d_starts, d_counts, d_weights = self._resize_taps(
            pool, np.ascontiguousarray(in_hw.reshape(-1)), np.ascontiguousarray(out_hw.reshape(-1)),
            np.ascontiguousarray(roi[:, :2].reshape(-1), np.float64),
            np.ascontiguousarray(roi[:, 2:].reshape(-1), np.float64),
            np.ascontiguousarray(np.asarray(min_filter, np.int32)[:, :2].reshape(-1)),
            np.ascontiguousarray(np.asarray(mag_filter, np.int32)[:, :2].reshape(-1)), bool(antialias))
        taps, start_at, weight_at = (a.reshape(n, 2) for a in (taps, start_at, weight_at))
        lo, hi = lo.reshape(n, 2)[:, 1], hi.reshape(n, 2)[:, 1]
        frames = _volumes(src_shapes[:, :-3]) if nd > 3 else np.ones(n, np.int64)
        channels = src_shapes[:, -1]
        span = np.maximum(hi - lo, 0)
        # one descriptor per frame; frames of a sample share its taps
        sample = np.repeat(np.arange(n), frames)
        frame = np.arange(len(sample)) - np.repeat(np.cumsum(frames) - frames, frames)
        in_vol = in_hw[:, 0] * in_hw[:, 1] * channels
        out_vol = out_hw[:, 0] * out_hw[:, 1] * channels
        tmp_vol = out_hw[:, 0] * span * channels
        desc = np.zeros((len(sample), 16), np.int64)
        desc[:, 0] = src_offsets[sample] + frame * in_vol[sample]
        desc[:, 1] = dst_offsets[sample] + frame * out_vol[sample]
        tmp_sizes = tmp_vol[sample]
        desc[:, 3] = in_hw[sample, 1]
        desc[:, 4] = channels[sample]
        desc[:, 5] = out_hw[sample, 0]
        desc[:, 6] = out_hw[sample, 1]
        desc[:, 7] = lo[sample]
        desc[:, 8] = span[sample]
        desc[:, 9], desc[:, 10], desc[:, 11] = taps[sample, 0], start_at[sample, 0], weight_at[sample, 0]
        desc[:, 12], desc[:, 13], desc[:, 14] = taps[sample, 1], start_at[sample, 1], weight_at[sample, 1]
        out_sizes = desc[:, 5] * desc[:, 6] * desc[:, 4]
        # The vertical pass's float intermediate holds a run of frames at a time, reused run after
        # run in stream order: for a whole batch it would be out_h x in_w x C floats per image,
        # 400 MB for 256 ImageNet-sized images resized to 256 px, all of it on the pool's peak.
        runs = budget_runs(tmp_sizes, _RESIZE_TMP_ELEMENTS)
        blocks = []
        for start, end in runs:
            desc[start, 2] = 0
            np.cumsum(tmp_sizes[start:end - 1], out=desc[start + 1:end, 2])
            blocks += [_blocks(tmp_sizes[start:end], ITEMS), _blocks(out_sizes[start:end], ITEMS)]
        tmp = self.ctx.empty(max(max(int(tmp_sizes[a:b].sum()) for a, b in runs), 1), np.float32)
        d_desc, *d_blocks = self.ctx.upload_params(desc, *(b for b, _ in blocks))
        stream = self.ctx.stream
        for k, (start, end) in enumerate(runs):
            (_, grid_v), (_, grid_h) = blocks[2 * k], blocks[2 * k + 1]
            frames_n, run_desc = np.int32(end - start), d_desc[start:]
            if grid_v:
                self._fn("resize", f"resize_v_{TYPE_NAMES[src_type]}")(
                    (grid_v,), (BLOCK,), (src, tmp, run_desc, d_blocks[2 * k], frames_n, d_starts, d_counts, d_weights),
                    stream=stream)
            if grid_h:
                self._fn("resize", f"resize_h_{TYPE_NAMES[dst_type]}")(
                    (grid_h,), (BLOCK,), (tmp, dst, run_desc, d_blocks[2 * k + 1], frames_n, d_starts, d_counts,
                                          d_weights), stream=stream)

    def normalize(self, pool: Any, src: Any, src_type: int, shapes: np.ndarray, src_offsets: np.ndarray, dst: Any,
                  dst_offsets: np.ndarray, mean: Any, mean_offsets: np.ndarray, mean_strides: np.ndarray,
                  stddev: Any, std_offsets: np.ndarray, std_strides: np.ndarray, scale: float,
                  shift: float) -> None:
        """(x - mean) / stddev * scale + shift into float ``dst``; ``mean``/``stddev`` are float64
        device buffers read at ``offsets[i]`` + the element's index times ``strides[i]`` ([N, nd])."""
        n, nd = shapes.shape
        _dims(shapes, "normalize")
        desc = np.zeros((n, 29), np.int64)
        desc[:, 0], desc[:, 1] = src_offsets, dst_offsets
        desc[:, 2] = _volumes(shapes)
        desc[:, 3], desc[:, 4] = mean_offsets, std_offsets
        desc[:, 5:5 + nd] = shapes
        desc[:, 13:13 + nd] = mean_strides
        desc[:, 21:21 + nd] = std_strides
        self._launch_batch("normalize", f"normalize_{TYPE_NAMES[src_type]}", desc[:, 2], desc, (src, dst),
                           (np.int32(nd), mean, stddev, np.float64(scale), np.float64(shift)))

    # ===== image operators: one_hot, erase, grid_mask, gaussian_blur, jpeg_compression_distortion =====
    # (csrc/cuda/one_hot.cu, occlusion.cu, blur.cu, jpeg_distortion.cu; paste runs on the slice kernel)

    def one_hot(self, pool: Any, src: Any, src_type: int, shapes: np.ndarray, src_offsets: np.ndarray,
                dst: Any, dst_offsets: np.ndarray, classes: int, axis: int, on: np.ndarray, off: np.ndarray) -> None:
        """GPU only (the CPU one-hot is numpy): labels of ``shapes`` (the class axis goes in at
        ``axis``); ``on``/``off`` are scalars of the output type."""
        n = len(shapes)
        base = np.asarray(shapes, np.int64).reshape(n, -1)
        vols = _volumes(base)
        desc = np.zeros((n, 4), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = vols * classes
        desc[:, 3] = _volumes(base[:, axis:]) if base.shape[1] > axis else 1
        es = dst.dtype.itemsize
        label = "u8" if src_type == 11 else TYPE_NAMES[src_type]
        udt = np.dtype(f"u{es}")
        on, off = (np.asarray(v, dst.dtype).reshape(1).view(udt)[0] for v in (on, off))
        src = src.view(np.uint8) if src_type == 11 else src
        self._launch_batch("one_hot", f"one_hot_{label}_{UNIT_NAMES[es]}", desc[:, 2], desc, (src, dst.view(udt)),
                           (np.int64(classes), on, off))

    def erase(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
              dst_offsets: np.ndarray, boxes: np.ndarray, box_offsets: np.ndarray, fill: np.ndarray) -> None:
        n, nd = shapes.shape
        _dims(shapes, "erase")
        fill = np.ascontiguousarray(fill, np.float32).reshape(-1)
        if fill.size < 1:
            raise ValueError("erase: fill value is empty")
        if fill.size > 1 and n and (shapes[:, -1] != fill.size).any():
            raise ValueError(f"erase: {fill.size} fill values given for {shapes[:, -1].tolist()} channels")
        desc = np.zeros((n, 13), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(shapes)
        desc[:, 3] = box_offsets[:-1]
        desc[:, 4] = box_offsets[1:]
        desc[:, 5:13] = _padded(shapes)
        boxes = np.ascontiguousarray(boxes, np.int64).reshape(-1, 2 * nd)
        self._launch_batch("occlusion", f"erase_{self._image_type(dtype, 'erase')}", desc[:, 2], desc, (src, dst),
                           (np.int32(nd), lambda p: p[0], lambda p: p[1], np.int32(fill.size)),
                           (boxes if len(boxes) else np.zeros((1, 2 * nd), np.int64), fill))

    def grid_mask(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, dtype: int, dst: Any,
                  dst_offsets: np.ndarray, params: np.ndarray) -> None:
        n = len(shapes)
        if shapes.shape[1] != 3:
            raise ValueError("grid_mask: samples must be (H, W, C)")
        p = np.asarray(params, np.float32).reshape(n, 5)
        if n and not (p[:, 0] > 0).all():
            raise ValueError("grid_mask: tile must be positive")
        tile = p[:, 0]
        # what the CPU kernel computes in float: cos(angle) / tile, sin(angle) / tile, shift / tile
        angle = p[:, 2].astype(np.float64)
        q = np.column_stack([np.cos(angle).astype(np.float32) / tile, np.sin(angle).astype(np.float32) / tile,
                             p[:, 3] / tile, p[:, 4] / tile, p[:, 1]]).astype(np.float32)
        desc = np.zeros((n, 5), np.int64)
        desc[:, 0] = src_offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = shapes[:, 0] * shapes[:, 1]
        desc[:, 3] = shapes[:, 1]
        desc[:, 4] = shapes[:, 2]
        self._launch_batch("occlusion", f"grid_mask_{self._image_type(dtype, 'grid_mask')}", desc[:, 2], desc,
                           (src, dst), (lambda d: d[0],), (q,))

    def gaussian_blur(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray, src_type: int,
                      dst: Any, dst_offsets: np.ndarray, dst_type: int, sigmas: np.ndarray,
                      windows: np.ndarray) -> None:
        """One launch per spatial axis (float in between); shapes are (outer, spatial..., channels)."""
        n, nd = shapes.shape
        k = nd - 2
        if not 1 <= k <= 3:
            raise ValueError("gaussian_blur: samples must be (frames, 1-3 spatial dims, channels)")
        in_t, out_t = self._image_type(src_type, "gaussian_blur"), self._image_type(dst_type, "gaussian_blur")
        sigmas = np.asarray(sigmas, np.float32).reshape(n, k)
        windows = np.asarray(windows, np.int64).reshape(n, k)
        if n and ((windows < 1) | (windows % 2 == 0)).any():
            raise ValueError("gaussian_blur: window size must be odd and positive")
        if n and ((windows > 1) & ~(sigmas > 0)).any():
            raise ValueError("gaussian_blur: sigma must be positive")
        vols = _volumes(shapes)
        weights, starts = blur_weights(sigmas, windows)
        total = int(vols.sum())
        tmp = [self.ctx.empty(max(total, 1), np.float32) for _ in range(min(k - 1, 2))]
        tmp_offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
        desc = np.zeros((k, n, 7), np.int64)
        for ax in range(k):
            desc[ax, :, 0] = src_offsets if ax == 0 else tmp_offsets
            desc[ax, :, 1] = dst_offsets if ax == k - 1 else tmp_offsets
            desc[ax, :, 2] = vols
            desc[ax, :, 3] = shapes[:, 1 + ax]
            desc[ax, :, 4] = _volumes(shapes[:, 2 + ax:])
            desc[ax, :, 5] = windows[:, ax] // 2
            desc[ax, :, 6] = starts[:, ax]
        block_start, grid = _blocks(vols)
        if grid == 0:
            return
        dev = self.ctx.upload_params(desc, block_start, weights)
        for ax in range(k):
            a = src if ax == 0 else tmp[(ax - 1) % 2]
            b = dst if ax == k - 1 else tmp[ax % 2]
            name = f"blur_{in_t if ax == 0 else 'f32'}_{out_t if ax == k - 1 else 'f32'}"
            self._fn("blur", name)((grid,), (BLOCK,), (a, b, dev[0][ax], dev[1], np.int32(n), dev[2]),
                                   stream=self.ctx.stream)

    def jpeg_compression_distortion(self, pool: Any, src: Any, shapes: np.ndarray, src_offsets: np.ndarray,
                                    dst: Any, dst_offsets: np.ndarray, qualities: np.ndarray) -> None:
        """Samples (frames, H, W, C) uint8, C = 1 or 3: libjpeg-turbo's lossy steps, in CUDA."""
        n = len(shapes)
        if shapes.shape[1] != 4:
            raise ValueError("jpeg_compression_distortion: samples must be (frames, H, W, C)")
        if n and ((shapes[:, 3] != 1) & (shapes[:, 3] != 3)).any():
            raise ValueError("jpeg_compression_distortion: expected 1 or 3 channels")
        q = np.asarray(qualities, np.int64).reshape(n)
        if n and ((q < 1) | (q > 100)).any():
            raise ValueError("jpeg_compression_distortion: quality must be in [1, 100]")
        desc, plane_bytes = jpeg_plan(shapes, src_offsets, dst_offsets)
        block_start, grid_b = _blocks(desc[:, 7])
        pixel_start, grid_p = _blocks(desc[:, 8])
        if grid_p == 0:
            return
        with self.ctx:
            planes = self.cp.empty(max(plane_bytes, 1), np.uint8)
        d_desc, d_blocks, d_pixels, d_tables = self.ctx.upload_params(desc, block_start, pixel_start, jpeg_tables(q))
        frames = np.int32(len(desc))
        self._fn("jpeg_distortion", "jpeg_blocks")((grid_b,), (BLOCK,),
                                                  (src, planes, d_desc, d_blocks, frames, d_tables),
                                                  stream=self.ctx.stream)
        self._fn("jpeg_distortion", "jpeg_pixels")((grid_p,), (BLOCK,), (planes, dst, d_desc, d_pixels, frames),
                                                  stream=self.ctx.stream)

    @staticmethod
    def _image_type(code: int, what: str) -> str:
        if code not in IMAGE_TYPES:
            raise TypeError(f"{what}: no GPU kernel for element type {code}")
        return TYPE_NAMES[code]
    # ===== end of the image operators' kernels =====

    # -- breadth operators: points and boxes, lookup, noise, gathers, reductions ---------------
    # (csrc/cuda/boxes.cu, pointwise.cu, reduce.cu)
    def affine_points(self, src: Any, offsets: np.ndarray, counts: np.ndarray, mats: np.ndarray, dst: Any,
                      dst_offsets: np.ndarray) -> None:
        """out = M p + T for the ``counts[i]`` points of sample i at ``offsets[i]`` (elements);
        ``mats`` [N, D_out, D + 1] (float64, [M T]); integer outputs are rounded and saturated."""
        n, dout, d1 = mats.shape
        if src.dtype == np.float16 or src.dtype == np.bool_:
            with self.ctx:
                src = src.astype(np.float32)
        if dst.dtype.kind not in "iuf" or dst.dtype == np.float16:
            raise NotImplementedError(f"coordinates of type {dst.dtype} are not supported on the GPU")
        desc = np.zeros((n, 4), np.int64)
        desc[:, 0], desc[:, 1], desc[:, 2], desc[:, 3] = offsets, dst_offsets, counts, np.arange(n)
        self._launch_batch("boxes", f"affine_points_{_TYPE_OF[src.dtype]}_{_TYPE_OF[dst.dtype]}",
                           np.asarray(counts, np.int64) * dout, desc, (src, dst),
                           (np.int32(d1 - 1), np.int32(dout), lambda p: p[0]),
                           (np.ascontiguousarray(mats, np.float64),))

    def box_encoder(self, pool: Any, boxes: Any, box_counts: np.ndarray, box_offsets: np.ndarray, labels: Any,
                    anchors: np.ndarray, criteria: float, offset: bool, scale: float, means: np.ndarray,
                    stds: np.ndarray, out_boxes: Any, out_labels: Any) -> None:
        n = len(box_counts)
        if n == 0:
            return
        desc = np.stack([box_offsets, box_counts], 1).astype(np.int64)
        with self.ctx:
            claimed = self.cp.empty(max(int(np.sum(box_counts)), 1), np.int64)
        d_desc, d_anchors, d_means, d_stds = self.ctx.upload_params(
            desc, np.ascontiguousarray(anchors, np.float32), np.asarray(means, np.float32),
            np.asarray(stds, np.float32))
        self._fn("boxes", "box_encoder")(
            (n,), (BLOCK,), (boxes, labels, d_desc, d_anchors, np.int64(len(anchors)), np.float32(criteria),
                             np.int32(bool(offset)), np.float32(scale), d_means, d_stds, claimed, out_boxes,
                             out_labels), stream=self.ctx.stream)

    def lookup_table(self, src: Any, table: np.ndarray, default: Any, dst: Any) -> None:
        """dst[i] = table[src[i]] (``default`` outside the table); the table is in dst's type."""
        es = dst.dtype.itemsize
        full = np.concatenate([np.asarray(table, dst.dtype), np.asarray([default], dst.dtype)])
        (d_table,) = self.ctx.upload_params(full.view(f"u{es}"))
        self._grid_stride("pointwise", f"lut_{_TYPE_OF[src.dtype]}_{UNIT_NAMES[es]}", int(src.size), src,
                          dst.view(f"u{es}"), d_table, np.int64(len(table)))

    def noise(self, pool: Any, kind: int, data: Any, shapes: np.ndarray, offsets: np.ndarray, out: Any,
              out_offsets: np.ndarray, seeds: np.ndarray, params: np.ndarray, channels: int, dtype: int) -> None:
        n = len(shapes)
        vols = _volumes(shapes)
        if not np.array_equal(offsets, out_offsets):
            raise ValueError("noise: input and output must be packed alike")
        work = (vols + 1) // 2 if kind == 0 else (vols + channels - 1) // channels if kind == 2 else vols
        desc = np.zeros((n, 4), np.int64)
        desc[:, 0], desc[:, 1], desc[:, 2], desc[:, 3] = offsets, vols, work, channels
        self._launch_batch("pointwise", f"noise_{TYPE_NAMES[dtype]}", work, desc, (np.int32(kind), data, out),
                           (lambda p: p[0], lambda p: p[1]),
                           (np.asarray(seeds, np.uint64), np.ascontiguousarray(params, np.float64)))

    def gather_ranges(self, src_addr: np.ndarray, dst_addr: np.ndarray, counts: np.ndarray, itemsize: int) -> None:
        """Copies ``counts[i]`` elements of ``itemsize`` bytes from device address ``src_addr[i]``
        to ``dst_addr[i]``, every range in one launch."""
        unit = UNIT_NAMES.get(itemsize)
        if unit is None:
            raise TypeError(f"gather: no GPU kernel for {itemsize}-byte elements")
        desc = np.stack([np.asarray(src_addr, np.uint64).view(np.int64), np.asarray(dst_addr, np.uint64).view(np.int64),
                         np.asarray(counts, np.int64)], 1)
        self._launch_batch("pointwise", f"copy_ranges_{unit}", desc[:, 2], desc, (), ())

    def reduce(self, pool: Any, kind: int, src: Any, src_shapes: np.ndarray, src_offsets: np.ndarray,
               axes: Sequence[int], dst: Any, dst_offsets: np.ndarray, ddof: int = 0, mean: Any = None,
               mean_offsets: np.ndarray | None = None) -> None:
        """Reduction ``kind`` (sum, mean, mean_square, rms, min, max, variance, std_dev) of every
        sample over ``axes``; one warp per output element, the batch in one launch."""
        n, nd = src_shapes.shape
        _dims(src_shapes, "reductions")
        if src.dtype == np.float16 or dst.dtype == np.float16:
            raise NotImplementedError("reductions of or to FLOAT16 are not supported on the GPU")
        wide = np.dtype(np.uint64 if src.dtype.kind in "ub" else np.int64 if src.dtype.kind == "i" else np.float64)
        if dst.dtype not in (src.dtype, np.float32, np.float64, wide):  # the pairs reduce.cu instantiates
            raise NotImplementedError(f"reductions of {src.dtype.name} into {dst.dtype.name} are not supported "
                                      "on the GPU")
        kept = [a for a in range(nd) if a not in axes]
        red = sorted(axes)
        strides = _strides(src_shapes)
        desc = np.zeros((n, 37), np.int64)
        desc[:, 0], desc[:, 1] = src_offsets, dst_offsets
        desc[:, 2] = _volumes(src_shapes[:, kept])
        desc[:, 3] = _volumes(src_shapes[:, red])
        if mean_offsets is not None:
            desc[:, 4] = mean_offsets
        desc[:, 5:5 + len(kept)] = src_shapes[:, kept]
        desc[:, 13:13 + len(kept)] = strides[:, kept]
        desc[:, 21:21 + len(red)] = src_shapes[:, red]
        desc[:, 29:29 + len(red)] = strides[:, red]
        with self.ctx:
            mean = self.cp.zeros(1, np.float64) if mean is None else mean.astype(np.float64, copy=False)
        self._launch_batch("reduce", f"reduce_{_TYPE_OF[src.dtype]}_{_TYPE_OF[dst.dtype]}", desc[:, 2] * 32, desc,
                           (np.int32(kind), src, dst), (np.int32(len(kept)), np.int32(len(red)), np.int32(ddof),
                                                        mean))

    # ===== point operators of the automatic augmentations: experimental.equalize, _auto_aug.* =====
    # (csrc/cuda/point_ops.cu)
    HISTOGRAM_LUTS = {"equalize": 0, "auto_contrast": 1, "contrast": 2}
    HIST_ITEMS = 16  # elements per thread of channel_histograms (kHistItems in point_ops.cu)

    def histogram_luts(self, kind: str, src: Any, shapes: np.ndarray, offsets: np.ndarray, channels: int,
                       params: np.ndarray, weights: np.ndarray) -> Any:
        """GPU only (the CPU computes these tables in numpy from host histograms): per-channel
        histograms of uint8 images (channels last, at most ``channels``), then the ``kind`` table
        of each sample and channel from them; returns the tables [N, channels, 256] on the device.
        ``params`` [N] and ``weights`` [channels] (float64) are contrast's factor and grey weights."""
        n = len(shapes)
        with self.ctx:
            hist = self.cp.zeros(n * channels * 256, np.uint64)
            luts = self.cp.empty((n, channels, 256), np.uint8)
        if n == 0:
            return luts
        desc = np.zeros((n, 3), np.int64)
        desc[:, 0] = offsets
        desc[:, 1] = _volumes(shapes)
        desc[:, 2] = shapes[:, -1] if shapes.shape[1] >= 3 else 1
        threads = (desc[:, 1] + self.HIST_ITEMS - 1) // self.HIST_ITEMS
        dev = self._launch_batch("point_ops", "channel_histograms", threads, desc, (src, hist), (np.int32(channels),),
                                 (np.asarray(params, np.float64), np.asarray(weights, np.float64)))
        if not dev:  # every image is empty: no table is ever read
            return luts
        d_params, d_weights = dev
        self._fn("point_ops", "histogram_luts")((n,), (256,), (hist, luts, d_params, d_weights, np.int32(channels),
                                                             np.int32(self.HISTOGRAM_LUTS[kind])),
                                                stream=self.ctx.stream)
        return luts

    def apply_lut(self, pool: Any, src: Any, shapes: np.ndarray, offsets: np.ndarray, luts: Any, dst: Any,
                  dst_offsets: np.ndarray) -> None:
        """out[.., c] = luts[i, c, in[.., c]] for uint8 images (channels last); ``luts``
        [N, max_channels, 256] uint8, on the host (uploaded with the descriptors) or the device."""
        n = len(shapes)
        desc = np.zeros((n, 4), np.int64)
        desc[:, 0] = offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(shapes)
        desc[:, 3] = shapes[:, -1] if shapes.shape[1] >= 3 else 1
        on_host = isinstance(luts, np.ndarray)
        self._launch_batch("point_ops", "apply_lut", desc[:, 2], desc, (src, dst),
                           ((lambda p: p[0]) if on_host else luts, np.int32(luts.shape[1])),
                           (np.ascontiguousarray(luts, np.uint8),) if on_host else ())

    def sharpness(self, pool: Any, src: Any, shapes: np.ndarray, offsets: np.ndarray, factors: np.ndarray,
                  dst: Any, dst_offsets: np.ndarray) -> None:
        """PIL's sharpness on uint8 HWC images, one factor per sample (the CPU kernel's float math)."""
        if shapes.shape[1] != 3:
            raise ValueError("sharpness: images must be HWC")
        desc = np.zeros((len(shapes), 6), np.int64)
        desc[:, 0] = offsets
        desc[:, 1] = dst_offsets
        desc[:, 2] = _volumes(shapes)
        desc[:, 3:6] = shapes
        self._launch_batch("point_ops", "sharpness", desc[:, 2], desc, (src, dst), (lambda p: p[0],),
                           (np.asarray(factors, np.float32).reshape(len(shapes)),))
    # ===== end of the point operators' kernels =====


_TYPE_OF = {np.dtype(t): name for t, name in ((np.uint8, "u8"), (np.uint16, "u16"), (np.uint32, "u32"),
                                              (np.uint64, "u64"), (np.int8, "i8"), (np.int16, "i16"),
                                              (np.int32, "i32"), (np.int64, "i64"), (np.float32, "f32"),
                                              (np.float64, "f64"), (np.bool_, "bool"))}
