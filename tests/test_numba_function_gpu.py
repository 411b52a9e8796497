"""penstock.plugin.numba's GPU operator: a numba.cuda kernel launched per sample on the pipeline's
stream, equal to the CPU function. Needs CuPy, numba-cuda and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
numba_cuda = pytest.importorskip("numba.cuda")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cp.is_available() or not numba_cuda.is_available(),
                                                  reason="needs a CUDA device and numba's CUDA target")]

from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.plugin.numba.fn import numba_function  # noqa: E402
from penstock.tensors import TensorListGPU  # noqa: E402


def scale_kernel(out, inp):
    i, j = numba_cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = inp[i, j] * 3 + 1


def scale_cpu(out, inp):
    for i in range(inp.shape[0]):
        for j in range(inp.shape[1]):
            out[i, j] = inp[i, j] * 3 + 1


DATA = [np.arange(h * w, dtype=np.float32).reshape(h, w) for h, w in ((16, 20), (7, 3), (32, 32))]


@pipeline_def(batch_size=3, num_threads=2, device_id=0)
def both():
    x = fn.external_source(lambda: DATA, batch=True)
    kw = dict(out_types=[types.FLOAT], in_types=[types.FLOAT], outs_ndim=[2], ins_ndim=[2])
    gpu = numba_function(x.gpu() * 1, run_fn=scale_kernel, device="gpu", blocks=[2, 2, 1],
                         threads_per_block=[16, 16, 1], **kw)
    return numba_function(x, run_fn=scale_cpu, **kw), gpu


def test_gpu_kernel_equals_the_cpu_function():
    pipe = both()
    for _ in range(2):
        cpu, gpu = pipe.run()
        assert isinstance(gpu, TensorListGPU)
        for i, d in enumerate(DATA):
            np.testing.assert_array_equal(gpu.as_cpu().at(i), cpu.at(i))
            np.testing.assert_array_equal(cpu.at(i), d * 3 + 1)
