"""The CUDA backend's availability checks and errors, on any machine (CuPy's absence is simulated)."""
import numpy as np
import pytest

import penstock.backend
from penstock import _cuda, fn, pipeline_def
from penstock._cuda import _runtime


@pytest.fixture
def no_cupy(monkeypatch):
    def missing():
        raise ImportError("No module named 'cupy'")
    monkeypatch.setattr(_runtime, "_import_cupy", missing)


def test_without_cupy_the_reason_names_the_extra(no_cupy):
    assert not penstock.backend.cuda_available()
    reason = penstock.backend.cuda_unavailable_reason()
    assert "penstock[cuda13]" in reason and "penstock[cuda12]" in reason


def test_a_gpu_pipeline_without_cupy_fails_at_build_naming_the_extra(no_cupy):
    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros(3, np.float32)] * 2).gpu()

    with pytest.raises(RuntimeError, match=r"penstock\[cuda13\]"):
        pipe().build()


def test_a_mixed_decoder_without_cupy_fails_at_build(no_cupy):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return fn.decoders.image(fn.external_source(source=lambda: [np.zeros(10, np.uint8)]), device="mixed")

    with pytest.raises(RuntimeError, match="needs CUDA|CuPy is not installed"):
        pipe().build()


def test_cpu_pipelines_never_touch_cuda(no_cupy):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.external_source(source=lambda: [np.arange(3, dtype=np.float32)] * 2) * 2

    (out,) = pipe().run()
    np.testing.assert_array_equal(out.at(1), [0, 2, 4])


def test_kernel_sources_are_found():
    src = _cuda._compile.source("resize")
    assert src.index("find_sample") < src.index("resize_vertical")  # common.cuh comes first
