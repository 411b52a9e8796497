"""Launch plumbing of the GPU batch kernels: per-sample descriptors and block prefix sums, the
compiled kernels of ``csrc/cuda``, and what every kernel family's Python side shares."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ... import _engine
from .._compile import kernel
from .._image_plans import IMAGE_TYPES

BLOCK = 256
# Elements per thread of the kernels that loop over several (kItems in csrc/cuda/common.cuh): the
# gather of decoded windows, crop_mirror_normalize and resize's two passes.
ITEMS = 8
MAX_DIMS = 8

# DALIDataType code -> type name used in kernel names (csrc/cuda/common.cuh)
TYPE_NAMES = {0: "u8", 1: "u16", 2: "u32", 3: "u64", 4: "i8", 5: "i16", 6: "i32", 7: "i64",
              8: "f16", 9: "f32", 10: "f64", 11: "bool"}
UNIT_NAMES = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}  # element-size-generic kernels
# numpy dtype -> type name used in kernel names
TYPE_OF = {np.dtype(t): name for t, name in ((np.uint8, "u8"), (np.uint16, "u16"), (np.uint32, "u32"),
                                             (np.uint64, "u64"), (np.int8, "i8"), (np.int16, "i16"),
                                             (np.int32, "i32"), (np.int64, "i64"), (np.float32, "f32"),
                                             (np.float64, "f64"), (np.bool_, "bool"))}


def block_starts(work: np.ndarray, items: int = 1) -> tuple[np.ndarray, int]:
    """Block prefix sums (N + 1) for per-sample element counts, and the grid size, for kernels
    whose threads take ``items`` elements each."""
    per_block = BLOCK * items
    per = (np.asarray(work, np.int64) + per_block - 1) // per_block
    start = np.empty(len(per) + 1, np.int64)  # not zeros: numpy's zeroing of a batch's worth gives the GIL away
    start[0] = 0
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


def check_dims(shapes: np.ndarray, what: str) -> int:
    nd = shapes.shape[1]
    if nd > MAX_DIMS:
        raise ValueError(f"{what}: GPU kernels take at most {MAX_DIMS} dimensions, got {nd}")
    return nd


def descriptors(n: int, width: int) -> np.ndarray:
    """A writable [n, width] int64 table of zeros for a batch's kernel descriptors, made by the engine:
    numpy's zeros give the GIL away to calloc past 1 KB, and a pipeline thread waits to take it back."""
    return _engine.zero_table(n, width)


def put_padded(desc: np.ndarray, first: int, a: np.ndarray, fill: int = 1, width: int = MAX_DIMS) -> None:
    """Writes the columns of ``a`` [N, k] into ``desc``'s columns [first, first + width), padded with
    ``fill``, a column at a time (a block assignment gives numpy the GIL away past 500 elements)."""
    for d in range(width):
        desc[:, first + d] = a[:, d] if d < a.shape[1] else fill


def row_major_strides(shapes: np.ndarray) -> np.ndarray:
    """Row-major element strides of each sample ([N, nd])."""
    n, nd = shapes.shape
    strides = np.ones((n, nd), np.int64)
    if nd > 1:
        strides[:, :-1] = np.cumprod(shapes[:, :0:-1], axis=1)[:, ::-1]
    return strides


def volumes(shapes: np.ndarray) -> np.ndarray:
    return _engine.shape_volumes(shapes)


def unit_name(itemsize: int, what: str) -> str:
    """The kernel type name of an element-size-generic kernel (copies) for ``itemsize``-byte elements."""
    unit = UNIT_NAMES.get(itemsize)
    if unit is None:
        raise TypeError(f"{what}: no GPU kernel for {itemsize}-byte elements")
    return unit


def image_type(code: int, what: str) -> str:
    """The kernel type name of an image operator's element type (those the CPU image kernels take)."""
    if code not in IMAGE_TYPES:
        raise TypeError(f"{what}: no GPU kernel for element type {code}")
    return TYPE_NAMES[code]


class KernelFamily:
    """The Python side of one ``csrc/cuda/<family>.cu``: plans a batch, uploads its descriptors and
    queues the launch on the pipeline's stream. GpuKernels combines every family."""

    def __init__(self, ctx: Any):
        self.ctx = ctx  # the pipeline's DeviceContext
        self.cp = ctx.cp

    def _fn(self, module: str, name: str) -> Any:
        return kernel(module, name, self.ctx.device_id)

    def _prepare_batch(self, module: str, name: str, work: np.ndarray, desc: np.ndarray, args_before: Sequence,
                       args_after: Sequence, extra_params: Sequence[np.ndarray] = (),
                       items: int = 1) -> tuple[Launch, list]:
        """The launch of ``name(*args_before, desc, block_start, n, *args_after)`` over per-sample
        ``work`` elements, ``items`` per thread, its parameters uploaded; extra host arrays are
        uploaded with the descriptors and returned too."""
        block_start, grid = block_starts(work, items)
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
