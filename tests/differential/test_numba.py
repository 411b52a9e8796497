"""penstock.plugin.numba against DALI 2.4's Numba plugin on the CPU: per-sample and batch run
functions, setup functions that reshape outputs, several inputs and outputs, type changes."""
import importlib

import numpy as np
import pytest

pytest.importorskip("numba")
from _harness import HAVE_DALI  # noqa: E402


def double(out, inp):
    for i in range(inp.shape[0]):
        for j in range(inp.shape[1]):
            out[i, j] = inp[i, j] * 2


def swap_setup(outs, ins):
    for s in range(len(outs[0])):
        outs[0][s][0] = ins[0][s][1]
        outs[0][s][1] = ins[0][s][0]


def transpose(out, inp):
    for i in range(inp.shape[0]):
        for j in range(inp.shape[1]):
            out[j, i] = inp[i, j]


def scalar_setup(outs, ins):
    for s in range(len(outs[0])):
        outs[0][s][0] = 1
        outs[1][s][0] = ins[1][s][0]


def sums(out_sum, out_scaled, a, b):
    for s in range(len(a)):
        out_sum[s][0] = a[s].sum()
        for k in range(b[s].shape[0]):
            out_scaled[s][k] = b[s][k] * 0.5


def copy_setup(outs, ins):
    for s in range(len(outs[0])):
        outs[0][s][:] = ins[0][s]


def to_float(out, inp):
    for i in range(inp.shape[0]):
        for j in range(inp.shape[1]):
            out[i, j] = inp[i, j] / 4


A = [np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(12, dtype=np.int32).reshape(3, 4) - 5]
B = [np.linspace(0, 1, 5).astype(np.float32), np.linspace(-3, 3, 2).astype(np.float32)]


def _graph(lib):
    fn, types = lib.fn, lib.types
    numba_function = importlib.import_module(f"{lib.__name__}.plugin.numba.fn.experimental").numba_function
    a = fn.external_source(lambda: A, batch=True)
    b = fn.external_source(lambda: B, batch=True)
    i32, f32 = types.INT32, types.FLOAT
    doubled = numba_function(a, run_fn=double, out_types=[i32], in_types=[i32], outs_ndim=[2], ins_ndim=[2])
    swapped = numba_function(a, run_fn=transpose, setup_fn=swap_setup, out_types=[i32], in_types=[i32],
                             outs_ndim=[2], ins_ndim=[2])
    total, scaled = numba_function(a, b, run_fn=sums, setup_fn=scalar_setup, batch_processing=True,
                                   out_types=[types.INT64, f32], in_types=[i32, f32], outs_ndim=[1, 1],
                                   ins_ndim=[2, 1])
    floats = numba_function(a, run_fn=to_float, setup_fn=copy_setup, out_types=[f32], in_types=[i32], outs_ndim=[2],
                            ins_ndim=[2])
    return doubled, swapped, total, scaled, floats


def _run(lib):
    pipe = lib.pipeline_def(batch_size=2, num_threads=2, device_id=None)(lambda: _graph(lib))()
    return [[(np.array(o.at(i)), str(o.dtype)) for i in range(2)] for o in pipe.run()]


@pytest.mark.skipif(not HAVE_DALI, reason="needs DALI")
def test_numba_function_matches_dali():
    import nvidia.dali
    import penstock
    ours, theirs = _run(penstock), _run(nvidia.dali)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        for (a, ta), (b, tb) in zip(o, t):
            assert ta == tb and a.shape == b.shape, f"output {k}"
            np.testing.assert_array_equal(a, b)
