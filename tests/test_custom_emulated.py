"""The GPU path of an operator declared in Python, run on the host: the example's CUDA kernel
(examples/custom_operator/scale_shift.py) compiled as C++ behind penstock_plugin.cuh, launched block
by block over the descriptors the operator uploads (penstock::Call); equal to its C++ CPU kernel.
tests/test_custom_gpu.py runs the real kernel."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from penstock._batch import empty_batch
from penstock._registry import schemas, withdraw
from penstock.tensors import TensorListCPU

from test_filter_emulated import run_op

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "custom_operator"))
import scale_shift  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")

# CUDA's names for a kernel run on the host: every block and thread in turn
HARNESS = r"""
#define __global__
#define __device__
struct Dim3 { unsigned x, y, z; };
static Dim3 blockIdx, threadIdx, blockDim, gridDim;
static inline float __fmul_rn(float a, float b) { return a * b; }
SOURCE
extern "C" void launch(unsigned gx, unsigned gy, unsigned threads, const void* call) {
  gridDim = {gx, gy, 1};
  blockDim = {threads, 1, 1};
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned x = 0; x < gx; ++x)
      for (unsigned t = 0; t < threads; ++t) {
        blockIdx = {x, y, 0};
        threadIdx = {t, 0, 0};
        run(static_cast<const penstock::Call*>(call));
      }
}
"""


class HostDevice:
    """What the custom operator's GPU path uses of a DeviceContext, on the host."""
    device_id = 0
    stream = None

    def __init__(self, folder):
        self.folder = folder
        self.launches: list[tuple] = []

    def empty(self, count, dtype):
        return np.empty(count, dtype)

    def upload(self, host, out):
        out[...] = host
        return out

    def new_batch(self, shapes, dtype, layout="", source_info=None):
        return empty_batch(shapes, dtype, layout, source_info)

    def source_kernel(self, code, name):
        assert name == "run"
        src = os.path.join(self.folder, "kernel.cpp")
        with open(src, "w") as f:
            f.write(HARNESS.replace("SOURCE", code))
        lib_path = os.path.join(self.folder, "kernel.so")
        subprocess.run(["c++", "-O1", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", src, "-o", lib_path],
                       check=True)
        lib = ctypes.CDLL(lib_path)

        def launch(grid, block, args, stream=None):
            self.launches.append((grid, block))
            lib.launch(ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]), ctypes.c_uint(block[0]),
                       ctypes.c_void_p(args[0].ctypes.data))
        return launch


@pytest.fixture
def schema():
    scale_shift.declare()
    yield schemas()["example.ScaleShift"]
    withdraw("example.ScaleShift")


def test_gpu_kernel_equals_the_cpu_kernel(schema, tmp_path):
    rng = np.random.default_rng(3)
    data = [rng.standard_normal(shape).astype(np.float32) for shape in ((3, 700), (2, 5), (0, 4))]
    scales = {"scale": TensorListCPU([np.float32(s) for s in (1.5, -2.0, 4.0)])}
    device = HostDevice(str(tmp_path))
    cpu = run_op(schema, [data], "HW", {"shift": 0.75}, None, scales)
    emulated = run_op(schema, [data], "HW", {"shift": 0.75}, device, scales)
    for c, g, d, s in zip(cpu, emulated, data, (1.5, -2.0, 4.0)):
        assert g.shape == d.shape and g.dtype == np.float32
        np.testing.assert_array_equal(g, c)
        np.testing.assert_array_equal(g, d * np.float32(s) + np.float32(0.75))
    # one launch: a row of blocks per sample, enough 256-thread blocks for the largest (2100 elements)
    assert device.launches == [((9, 3), (256,))]
