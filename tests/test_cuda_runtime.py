"""The CUDA backend's availability checks and errors, on any machine (CuPy's absence is simulated)."""
import numpy as np
import pytest

import penstock.backend
from penstock import _cuda, fn, pipeline_def
from penstock._cuda import _context, _runtime


@pytest.fixture
def no_cupy(monkeypatch):
    def missing():
        raise ImportError("No module named 'cupy'")
    monkeypatch.setattr(_runtime, "_import_cupy", missing)


def test_without_cupy_the_reason_names_the_extra(no_cupy):
    assert not penstock.backend.cuda_available()
    reason = penstock.backend.cuda_unavailable_reason()
    assert "penstock-data[cuda13]" in reason and "penstock-data[cuda12]" in reason


def test_a_gpu_pipeline_without_cupy_fails_at_build_naming_the_extra(no_cupy):
    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros(3, np.float32)] * 2).gpu()

    with pytest.raises(RuntimeError, match=r"penstock-data\[cuda13\]") as error:
        pipe().build()
    # each sentence ends before the next begins: the install hint, DALI's words, the way out
    assert "(CUDA 12). You are trying to create a GPU DALI pipeline" in str(error.value)


def test_a_mixed_decoder_without_cupy_fails_at_build(no_cupy):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return fn.decoders.image(fn.external_source(source=lambda: [np.zeros(10, np.uint8)]), device="mixed")

    with pytest.raises(RuntimeError, match="The pipeline requires a CUDA-capable GPU but CuPy.* is not installed"):
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


def test_pooled_blocks_come_in_eight_size_classes_per_power_of_two():
    small = [1, 511, 1 << 16]
    assert [_context._size_class(n) for n in small] == small  # the pool's own rounding is enough there
    rng = np.random.default_rng(0)
    for n in rng.integers((1 << 16) + 1, 1 << 31, 2000):
        n = int(n)
        rounded = _context._size_class(n)
        assert n <= rounded < n * 1.125 + 1  # at most an eighth more
        assert _context._size_class(rounded) == rounded  # a class is its own class
    # batches a little larger or smaller than the last one mostly share its class
    classes = {_context._size_class(int(n)) for n in rng.normal(92e6, 2e6, 200)}
    assert len(classes) <= 3


def _priority_range(device_id: int) -> tuple[int, int]:
    """Stands for the driver of device 3, whose stream priorities run from 0 (least) to -5 (greatest)."""
    assert device_id == 3
    return 0, -5


def test_the_pipelines_streams_take_the_greatest_priority_unless_asked_for_cudas_default(monkeypatch):
    monkeypatch.delenv(_context.STREAM_PRIORITY_ENV, raising=False)
    assert _context.stream_priority(3, _priority_range) == -5
    monkeypatch.setenv(_context.STREAM_PRIORITY_ENV, "high")
    assert _context.stream_priority(3, _priority_range) == -5
    monkeypatch.setenv(_context.STREAM_PRIORITY_ENV, "normal")
    assert _context.stream_priority(3, _priority_range) == 0


def test_a_stream_priority_it_does_not_know_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(_context.STREAM_PRIORITY_ENV, "low")
    with pytest.raises(ValueError, match=r"PENSTOCK_STREAM_PRIORITY='low': expected one of 'high', 'normal'"):
        _context.stream_priority(3, _priority_range)
