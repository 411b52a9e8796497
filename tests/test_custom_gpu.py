"""The CUDA kernel of an operator declared in Python (examples/custom_operator/scale_shift.py),
compiled through NVRTC and launched once per batch on the pipeline's stream: equal to its C++ CPU
kernel, in a pipeline and in the dynamic mode. Needs CuPy and a CUDA device."""
import os
import shutil
import sys

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cp.is_available(), reason="needs a CUDA device"),
              pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")]

import penstock.experimental.dynamic as ndd  # noqa: E402
from penstock import fn, pipeline_def, types  # noqa: E402
from penstock._registry import withdraw  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "custom_operator"))
import scale_shift  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def declared():
    scale_shift.declare()
    yield
    withdraw("example.ScaleShift")


rng = np.random.default_rng(5)
DATA = [rng.standard_normal(shape).astype(np.float32) for shape in ((480, 640, 3), (7, 5, 3), (0, 2, 3))]
SCALES = [np.float32(s) for s in (0.5, -3.0, 2.0)]


@pipeline_def(batch_size=3, num_threads=2, device_id=0)
def both():
    x = fn.external_source(lambda: DATA, batch=True, layout="HWC")
    s = fn.external_source(lambda: SCALES, batch=True)
    return fn.example.scale_shift(x, scale=s, shift=-1.0), fn.example.scale_shift(x.gpu(), scale=s, shift=-1.0)


def test_gpu_kernel_equals_the_cpu_kernel():
    pipe = both()
    for _ in range(2):
        cpu, gpu = pipe.run()
        gpu = gpu.as_cpu()
        assert gpu.layout() == "HWC" and gpu.dtype == types.FLOAT and gpu.shape() == cpu.shape()
        for i, d in enumerate(DATA):
            np.testing.assert_array_equal(gpu.at(i), cpu.at(i))
            np.testing.assert_array_equal(gpu.at(i), d * SCALES[i] + np.float32(-1.0))


def test_dynamic_mode_runs_it_on_the_gpu():
    out = ndd.example.scale_shift(ndd.as_batch(DATA[:2], device="gpu"), scale=2.0)
    assert out.device.device_type == "gpu"
    np.testing.assert_array_equal(np.asarray(out.tensors[1].cpu()), DATA[1] * np.float32(2))
