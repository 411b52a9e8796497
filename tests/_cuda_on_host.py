"""CUDA kernel files compiled as C++ for the host, so tests can run the GPU code paths (the
operators' planning, GpuKernels' descriptors and the kernels' arithmetic) on a machine without a
GPU. A harness defines the CUDA names a file uses and ``run_<kernel>`` entry points that loop over
blocks and threads; HostContext stands in for a DeviceContext, with numpy in place of CuPy."""
import collections
import ctypes
import os
import shutil
import subprocess
import time

import numpy as np

from penstock import _engine
from penstock._cuda._stream_queue import RELEASE_GIL_FROM
from penstock._cuda.kernels import GpuKernels
from penstock._batch import empty_batch
from penstock.tensors import TensorListGPU

CUDA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc", "cuda")

# what every harness needs: the kernels' scalar types, the CUDA qualifiers, and common.cuh's sample lookup
PRELUDE = r"""
#include <cmath>
#include <cstdint>
typedef unsigned char u8; typedef signed char i8; typedef unsigned short u16; typedef short i16;
typedef unsigned int u32; typedef int i32; typedef unsigned long long u64; typedef long long i64;
typedef float f32; typedef double f64;
#define __device__
#define __global__
#define __forceinline__ inline
struct Dim { unsigned x; };
static inline int find_sample(const i64* block_start, int n, i64 block) {
  int lo = 0, hi = n - 1;
  while (lo < hi) { int mid = (lo + hi + 1) >> 1; if (block_start[mid] <= block) lo = mid; else hi = mid - 1; }
  return lo;
}
"""


# instead of PRELUDE, for kernel files that use more of csrc/cuda/common.cuh: the file itself, behind
# the CUDA qualifiers and thread indices
WITH_COMMON = r"""
#include <cmath>
#include <cstdint>
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define asm(...) ((void)0)  /* PTX: float16 conversions are not emulated */
struct Dim { unsigned x; };
static Dim blockIdx, threadIdx, blockDim;
static int __float2int_rn(float v) { return int(std::nearbyint(v)); }  /* the default mode: half to even */
static long long __double2ll_rn(double v) { return (long long)std::nearbyint(v); }
#include "COMMON"
#undef asm
"""


# for kernels that meet at __syncthreads (after PRELUDE): a block's threads are host threads meeting at a
# barrier, shared memory is static, and launch(grid, block, threads, kernel) runs the blocks in turn
# (threads=false: a plain loop over blocks and threads, for kernels without __syncthreads)
BLOCK_THREADS = r"""
#include <barrier>
#include <thread>
#include <vector>
#define __shared__ static
static thread_local Dim blockIdx, threadIdx;
static Dim blockDim;
static std::barrier<>* block_barrier;
static void __syncthreads() { block_barrier->arrive_and_wait(); }
static u32 atomicAdd(u32* p, u32 v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <typename F> static void launch(int grid, int block, bool threads, F kernel) {
  blockDim.x = block;
  if (!threads) {
    for (int b = 0; b < grid; ++b)
      for (int t = 0; t < block; ++t) { blockIdx.x = b; threadIdx.x = t; kernel(); }
    return;
  }
  std::barrier<> barrier(block);
  block_barrier = &barrier;
  std::vector<std::thread> pool;
  for (int t = 0; t < block; ++t)
    pool.emplace_back([&, t] {
      for (int b = 0; b < grid; ++b) {
        blockIdx.x = b;
        threadIdx.x = t;
        kernel();
        barrier.arrive_and_wait();
      }
    });
  for (auto& th : pool) th.join();
}
"""


def compile_for_host(folder, kernel_file: str, harness: str, with_common: bool = False) -> ctypes.CDLL:
    """``harness`` with ``SOURCE`` standing for csrc/cuda/<kernel_file>, built as a shared library;
    ``with_common``: after csrc/cuda/common.cuh (the harness then declares no thread indices)."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    assert cxx, "a C++ compiler is needed (the engine is built with one)"
    prelude = WITH_COMMON.replace("COMMON", os.path.join(CUDA_DIR, "common.cuh")) if with_common else PRELUDE
    (folder / "harness.cpp").write_text(prelude + harness.replace("SOURCE", os.path.join(CUDA_DIR, kernel_file)))
    # PENSTOCK_EMULATED_SANITIZE=1 builds the kernels with AddressSanitizer and UBSan (run pytest with
    # their runtimes preloaded, see tests/fuzz/README.md): an access outside a buffer, which on the
    # GPU may pass unnoticed or end in CUDA_ERROR_ILLEGAL_ADDRESS later, stops at the access
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"] \
        if os.environ.get("PENSTOCK_EMULATED_SANITIZE") else []
    subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", *sanitize, "-o", str(folder / "h.so"),
                    str(folder / "harness.cpp")], check=True)
    return ctypes.CDLL(str(folder / "h.so"))


def _c_value(a):
    if isinstance(a, np.ndarray):
        return a.ctypes.data_as(ctypes.c_void_p)
    if isinstance(a, (np.int32, np.uint32)):
        return ctypes.c_int(int(a))
    if isinstance(a, (np.int64, np.uint64)):
        return ctypes.c_longlong(int(a))
    if isinstance(a, np.float32):
        return ctypes.c_float(float(a))
    if isinstance(a, (np.float64, float)):
        return ctypes.c_double(float(a))
    return a


class HostContext:
    """What GpuKernels and the operators use of a DeviceContext; a launch calls ``run_<name>``
    of the host-compiled harness with the grid and block sizes first."""
    cp = np
    device_id = 0
    stream = None

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.kernels = GpuKernels(self)
        self.kernels._fn = self._launcher
        self.arenas: list = []  # the batch arenas made on it

    def _launcher(self, module: str, name: str):
        def call(grid, block, args, stream=None):
            getattr(self.lib, f"run_{name}")(ctypes.c_int(grid[0]), ctypes.c_int(block[0]),
                                             *[_c_value(a) for a in args])
        return call

    @property
    def device(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    @staticmethod
    def address(array):
        return array.ctypes.data

    def launch_kernels(self, kernels, grids, block, slots, signature):
        kinds = {"p": ctypes.c_void_p, "i": np.int32, "q": np.int64}
        signatures = [signature] * len(kernels) if isinstance(signature, str) else signature
        for kernel, grid, row, kernel_signature in zip(kernels, grids, slots.tolist(), signatures):
            if grid:
                kernel((int(grid),), (block,), [kinds[k](v) for k, v in zip(kernel_signature, row)])

    def upload_params(self, *arrays):
        return [np.ascontiguousarray(a).copy() for a in arrays]

    def upload(self, host, out=None):
        if out is None:
            return np.ascontiguousarray(host).copy()
        out[...] = host
        return out

    def empty(self, count, dtype):
        return np.empty(count, dtype)

    def new_batch(self, shapes, dtype, layout="", source_info=None):
        return empty_batch(shapes, dtype, layout, source_info)

    def batch_arena(self):
        self.arenas.append(_HostArena(self))
        return self.arenas[-1]


class _HostArena:
    """A batch arena on the host: a context's new batches, each with the event after which it may be
    written (a marker here, listed in ``written_after``)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.written_after: list = []

    def new_batch(self, shapes, dtype, layout="", source_info=None):
        self.written_after.append(object())
        return self.ctx.new_batch(shapes, dtype, layout, source_info), self.written_after[-1]


class _DeviceId:
    id = 0


class _Pointer:
    def __init__(self, array: np.ndarray):
        self.ptr = array.ctypes.data


class HostArray(np.ndarray):
    """Host memory posing as a CuPy array where the GPU path reads a device array's attributes."""

    @property
    def device(self):
        return _DeviceId()

    @property
    def data(self):
        return _Pointer(self)


def _copy_bytes(dst: np.ndarray, src: np.ndarray) -> None:
    """Copies ``src`` into the uint8 ``dst`` giving the GIL away as the device's upload does on the
    consumer's thread (copy_to_device: from RELEASE_GIL_FROM bytes on), not as numpy does (from ~500
    elements): a count of hand-backs then depends on the pipeline's work, not on how the batch was
    split. (A pipeline thread's driver calls give it away at every call on a device: hand-backs of
    the driver's, which the emulation has none of.)"""
    src = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
    if src.nbytes >= RELEASE_GIL_FROM:
        np.copyto(dst[:src.nbytes], src)
    else:
        memoryview(dst)[:src.nbytes] = memoryview(src)  # a memcpy that keeps the GIL


def host_array(a: np.ndarray) -> HostArray:
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, a.dtype)
    _copy_bytes(out.reshape(-1).view(np.uint8), a)
    return out.view(HostArray)


class _Synchronizing:
    """A stream or event whose host synchronizations are counted in ``calls``."""
    ptr = 0

    def __init__(self, calls: collections.Counter, what: str):
        self.calls, self.what = calls, what

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def synchronize(self) -> None:
        self.calls[f"{self.what}.synchronize"] += 1

    def query(self) -> bool:
        return True


class HostStaged:
    """A DeviceContext's pinned staging (``Staged``) in host memory: ``view`` to make data in, then
    ``upload`` (counted in ``calls`` as the device's uploads) or ``give_back``."""

    def __init__(self, calls: collections.Counter, nbytes: int, block_bytes: int = 0):
        self.calls = calls
        self.memory = np.empty(max(int(nbytes), int(block_bytes)), np.uint8)
        self.view = self.memory[:int(nbytes)]
        self.uploaded = self.given_back = False

    def holds(self, host) -> bool:
        return (not (self.uploaded or self.given_back) and host.ctypes.data == self.memory.ctypes.data
                and host.nbytes <= self.memory.nbytes)

    def upload(self, host):
        if not self.holds(host):
            raise ValueError("Staged.upload: the data is not at the start of its staging block")
        self.uploaded = True
        self.calls["upload"] += 1
        return host_array(host)

    def copy_into(self, dsts, offsets, sizes, after=None) -> None:
        """As the device's: the ranges copied to their (host) addresses at once, counted as one upload,
        the GIL given away once (the engine's call), not once a range (ctypes' memmove would)."""
        if self.uploaded or self.given_back:
            raise ValueError("Staged.copy_into: the staging was uploaded or given back already")
        ranges = list(zip(np.asarray(dsts, np.uint64).tolist(), np.asarray(offsets).tolist(),
                          np.asarray(sizes).tolist()))
        if any(offset < 0 or offset + size > self.memory.nbytes for _, offset, size in ranges):
            raise ValueError("copy_ranges_to_device: a range lies outside the staging")
        source = memoryview(self.memory)
        for dst, offset, size in ranges:
            memoryview((ctypes.c_uint8 * size).from_address(dst)).cast("B")[:] = source[offset:offset + size]
        time.sleep(0)  # the engine's call gives the GIL away once
        self.uploaded = True
        self.calls["upload"] += 1

    def give_back(self) -> None:
        self.given_back = True


class HostDevice(HostContext):
    """A DeviceContext for whole pipelines on a machine without a GPU: device memory is host memory
    (``HostArray``), work runs at once on the calling thread, kernels run from the host-compiled
    libraries ``libs`` ({kernel module: library}), and ``calls`` counts what the pipeline asked of the
    device (launches, uploads, host synchronizations). Put in place of a pipeline's DeviceContext
    by ``use_host_device``."""

    def __init__(self, libs: dict):
        self.libs = libs
        self.calls: collections.Counter = collections.Counter()
        super().__init__(None)
        self.stream = _Synchronizing(self.calls, "stream")
        self._closers: list = []

    def _launcher(self, module: str, name: str):
        run = getattr(self.libs[module], f"run_{name}")

        def call(grid, block, args, stream=None):
            self.calls["launch"] += 1
            run(ctypes.c_int(grid[0]), ctypes.c_int(block[0]), *[_c_value(a) for a in args])
        return call

    def new_batch(self, shapes, dtype, layout="", source_info=None):
        shapes = np.ascontiguousarray(shapes, np.int64)
        total = int(_engine.shape_volumes(shapes).sum())  # numpy's prod would give the GIL away
        tl = TensorListGPU._from_packed(self.empty(total, dtype), shapes, None, layout, source_info)
        tl.stream = self.stream
        return tl

    def empty(self, count, dtype):
        return np.empty(int(count), dtype).view(HostArray)

    def upload(self, host, out=None):
        self.calls["upload"] += 1
        if out is None:
            return host_array(host)
        _copy_bytes(out.reshape(-1).view(np.uint8), host)
        return out

    def staging(self, nbytes, block_bytes=0):
        return HostStaged(self.calls, nbytes, block_bytes)

    def pinned_blocks(self) -> int:
        """As the device's: the pins of its staging pool so far (``calls["pinned"]``, none unless a test
        counts some)."""
        return self.calls["pinned"]

    def upload_params(self, *arrays):
        """As the device's: the arrays packed by the engine, one copy, views of it."""
        self.calls["upload"] += 1
        parts = [np.ascontiguousarray(a) for a in arrays]
        packed, offsets = _engine.pack_parts(parts, 16)
        dev = host_array(packed)
        return [dev[off:off + a.nbytes].view(a.dtype).reshape(a.shape) for a, off in zip(parts, offsets.tolist())]

    @staticmethod
    def reserve_staging(nbytes):
        pass

    def record(self):
        return _Synchronizing(self.calls, "event")

    def on_close(self, release):
        self._closers.append(release)

    def close(self):
        closers, self._closers = self._closers, []
        for release in closers:
            release()


def use_host_device(monkeypatch, device: HostDevice) -> None:
    """Pipelines built from now on run their GPU and mixed operators on ``device``; mixed decoders
    decode on the host (as without nvImageCodec)."""
    from penstock.operators import _image_decode_mixed
    from penstock.pipeline import _build

    def require_gpu(pipeline):
        pipeline._gpu = device
    monkeypatch.setattr(_build.PipelineBuild, "_require_gpu", require_gpu)
    monkeypatch.setattr(_image_decode_mixed, "_has_nvimgcodec", lambda: False)
    monkeypatch.setenv("PENSTOCK_PIPELINE_PROCESS", "off")  # another process would have no host device
