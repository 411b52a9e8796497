"""crop, flip, pad and transpose through the GPU slice and transpose kernels run on the host:
csrc/cuda/slice.cu compiled as C++ (tests/_cuda_on_host.py) behind GpuKernels.slice / .transpose,
their descriptors made by _engine.slice_descriptors / transpose_descriptors; the results must equal
the CPU operators'."""
import numpy as np
import pytest

from penstock.operators import crop, transpose
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostContext, compile_for_host
from test_filter_emulated import same_on_both

HARNESS = r"""
#include "SOURCE"
#define RUN(U)                                                                                            \
  extern "C" void run_slice_##U(int grid, int block, const U* src, U* dst, const i64* desc, const i64* bs,  \
                                int n, int nd, const U* fill, int num_fill, int channel_dim) {             \
    blockDim.x = block;                                                                                   \
    for (int blk = 0; blk < grid; ++blk)                                                                  \
      for (int t = 0; t < block; ++t) {                                                                   \
        blockIdx.x = blk; threadIdx.x = t;                                                                \
        slice_##U(src, dst, desc, bs, n, nd, fill, num_fill, channel_dim);                                \
      }                                                                                                   \
  }                                                                                                       \
  extern "C" void run_transpose_##U(int grid, int block, const U* src, U* dst, const i64* desc,           \
                                    const i64* bs, int n, int nd) {                                       \
    blockDim.x = block;                                                                                   \
    for (int blk = 0; blk < grid; ++blk)                                                                  \
      for (int t = 0; t < block; ++t) {                                                                   \
        blockIdx.x = blk; threadIdx.x = t;                                                                \
        transpose_##U(src, dst, desc, bs, n, nd);                                                         \
      }                                                                                                   \
  }
RUN(u8) RUN(u16) RUN(u32) RUN(u64)
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("slice_emulated"), "slice.cu", HARNESS,
                                        with_common=True))


rng = np.random.default_rng(5)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((13, 17), (9, 6), (20, 11))]
VOLUMES = [rng.uniform(-1, 1, (d, h, w, 2)).astype(np.float32) for d, h, w in ((3, 5, 4), (2, 6, 7), (4, 3, 3))]


def _arg(values, dtype):
    return TensorListCPU([np.array(v, dtype) for v in values])


# (a crop to another type converts on the GPU with elementwise.cu's cast, not emulated here)
@pytest.mark.parametrize("kw", [{"crop": (5, 4)}, {"crop": (5, 4), "crop_pos_x": 0.9, "crop_pos_y": 0.2},
                                {"crop": (15, 30), "out_of_bounds_policy": "pad", "fill_values": [1, 2, 3]},
                                {"crop": (15, 30), "out_of_bounds_policy": "trim_to_shape"}])
def test_crop_matches_the_cpu(gpu, kw):
    same_on_both(crop.CROP, [IMAGES], "HWC", kw, gpu)


def test_crop_with_per_sample_positions(gpu):
    positions = {"crop_pos_x": _arg([0.0, 0.5, 1.0], np.float32), "crop_pos_y": _arg([1.0, 0.3, 0.0], np.float32)}
    same_on_both(crop.CROP, [IMAGES], "HWC", {"crop": (4, 5)}, gpu, positions)


@pytest.mark.parametrize("flags", [{"horizontal": 1}, {"vertical": 1, "horizontal": 1}, {"horizontal": 0}])
def test_flip_matches_the_cpu(gpu, flags):
    same_on_both(crop.FLIP, [IMAGES], "HWC", flags, gpu)


def test_per_sample_flips_of_volumes(gpu):
    flags = {"horizontal": _arg([1, 0, 3], np.int32), "depthwise": _arg([0, 1, 1], np.int32)}
    same_on_both(crop.FLIP, [VOLUMES], "DHWC", {}, gpu, flags)


def test_pad_matches_the_cpu(gpu):
    same_on_both(crop.PAD, [IMAGES], "HWC", {"fill_value": 7, "axis_names": "HW"}, gpu)


@pytest.mark.parametrize("perm, layout", [([2, 0, 1], "HWC"), ([1, 0, 2], "HWC"), ([3, 1, 0, 2], "DHWC")])
def test_transpose_matches_the_cpu(gpu, perm, layout):
    same_on_both(transpose.TRANSPOSE, [IMAGES if layout == "HWC" else VOLUMES], layout, {"perm": perm}, gpu)
