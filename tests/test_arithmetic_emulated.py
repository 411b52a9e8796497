"""The GPU arithmetic kernels (csrc/cuda/elementwise.cu) run on the host: the .cu file compiled as
C++ with common.cuh (tests/_cuda_on_host.py) behind GpuKernels.binary/unary, against the CPU
engine's kernels element for element, for every integer type (and booleans) and operation, the corners of
integer arithmetic included (negative exponents, division by zero and -1, shifts past the width).
The GPU tests (tests/test_gpu_operators.py) run the real kernels."""
import numpy as np
import pytest

from penstock import _engine
from penstock.operators.arithmetic import BINARY_CODES, UNARY_CODES
from penstock._cuda.kernels._launch import TYPE_NAMES
from penstock.types import DALIDataType as T, to_numpy_type

from _cuda_on_host import HostContext, compile_for_host

INTEGERS = [T.UINT8, T.UINT16, T.UINT32, T.UINT64, T.INT8, T.INT16, T.INT32, T.INT64]

HARNESS = '#include "SOURCE"\n' + "".join(f"""
extern "C" void run_{kind}_{t}(int grid, int block, int op, const {t}* a, const {t}* b, {out}* out, const i64* desc,
                               const i64* bs, int n, int nd) {{
  blockDim.x = block;
  for (int g = 0; g < grid; ++g)
    for (int k = 0; k < block; ++k) {{ blockIdx.x = g; threadIdx.x = k; {kind}_{t}(op, a, b, out, desc, bs, n, nd); }}
}}
""" for t in (TYPE_NAMES[int(d)] for d in INTEGERS + [T.BOOL]) for kind, out in (("binary", t), ("compare", "bool"))
) + "".join(f"""
extern "C" void run_unary_{t}(int grid, int block, int op, const {t}* src, {t}* dst, i64 n) {{
  blockDim.x = block;
  gridDim.x = grid;
  for (int g = 0; g < grid; ++g)
    for (int k = 0; k < block; ++k) {{ blockIdx.x = g; threadIdx.x = k; unary_{t}(op, src, dst, n); }}
}}
""" for t in (TYPE_NAMES[int(d)] for d in INTEGERS))


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("elementwise"), "elementwise.cu",
                                        "static Dim gridDim;\n" + HARNESS, with_common=True))


def _operands(dtype):
    """Every pairing of the values that make integer arithmetic's corners: 0, +-1, +-2, small
    positive and negative exponents, the type's extremes."""
    if dtype == np.bool_:
        a, b = np.meshgrid([False, True], [False, True], indexing="ij")
        return a.reshape(-1), b.reshape(-1)
    info = np.iinfo(dtype)
    values = np.array(sorted({0, 1, 2, 3, 7, info.max, info.max - 1} | (
        {-1, -2, -3, -8, info.min, info.min + 1} if info.min < 0 else set())), dtype)
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.reshape(-1), b.reshape(-1)


def _binary(kernels, op, code, a, b):
    shapes = np.array([[a.size]], np.int64)
    offsets = np.zeros(1, np.int64)
    out = np.zeros(a.size, np.bool_ if op in range(BINARY_CODES["eq"], BINARY_CODES["ge"] + 1) else a.dtype)
    kernels.binary(_engine.ThreadPool(1), op, code, a, shapes, offsets, b, shapes, offsets, out, shapes, offsets)
    return out


@pytest.mark.parametrize("dtype", INTEGERS + [T.BOOL], ids=lambda t: t.name)
@pytest.mark.parametrize("op", [name for name in BINARY_CODES if name not in ("atan2", "fpow")])
def test_integer_binary_kernel_equals_the_cpu_kernel(gpu, dtype, op):
    a, b = _operands(to_numpy_type(dtype))
    cpu = _binary(_engine, BINARY_CODES[op], int(dtype), a, b)
    emulated = _binary(gpu.kernels, BINARY_CODES[op], int(dtype), a, b)
    bad = np.nonzero(cpu != emulated)[0]
    assert not bad.size, [(a[i], b[i], cpu[i], emulated[i]) for i in bad[:8]]


@pytest.mark.parametrize("dtype", [T.INT8, T.INT16, T.INT32, T.INT64], ids=lambda t: t.name)
def test_integer_power_with_a_negative_exponent_is_zero_whatever_the_base(gpu, dtype):
    # DALI 2.4, CPU and GPU alike: 1 ** -1 and (-1) ** -3 are 0 too (not +-1)
    base = np.array([-3, -2, -1, 0, 1, 2, 3] * 3, to_numpy_type(dtype))
    exponent = np.repeat(np.array([-1, -2, -3], to_numpy_type(dtype)), 7)
    assert (_binary(gpu.kernels, BINARY_CODES["pow"], int(dtype), base, exponent) == 0).all()


@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda t: t.name)
@pytest.mark.parametrize("op", ["neg", "abs", "bitnot", "logicalnot"])
def test_integer_unary_kernel_equals_the_cpu_kernel(gpu, dtype, op):
    a, _ = _operands(to_numpy_type(dtype))
    outs = []
    for kernels in (_engine, gpu.kernels):
        out = np.zeros_like(a)
        kernels.unary(_engine.ThreadPool(1), UNARY_CODES[op], int(dtype), a, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[1], outs[0])
