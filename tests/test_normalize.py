"""normalize against numpy, including the spec's verified numbers."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types


def _run(samples, layout="", **kwargs):
    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=None)
    def pipe():
        return fn.normalize(fn.external_source(source=lambda: samples, layout=layout or None), **kwargs)

    return pipe().run()[0]


def test_verified_example_all_axes():
    out = _run([np.array([[1, 2], [3, 6]], np.float32)])
    np.testing.assert_allclose(out.at(0), [[-1.069, -0.535], [0.0, 1.604]], atol=1e-3)


def test_given_mean_and_stddev_with_scale_and_shift():
    out = _run([np.array([[1, 2], [3, 6]], np.float32)], mean=1, stddev=2, scale=10, shift=1)
    np.testing.assert_allclose(out.at(0), [[1, 6], [11, 26]], rtol=1e-6)


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_per_sample_statistics_along_axes(axes):
    rng = np.random.default_rng(0)
    samples = [rng.random((4, 5), np.float32) * 10, rng.random((3, 5), np.float32)]
    out = _run(samples, axes=list(axes), ddof=1, epsilon=0.01)
    for i, s in enumerate(samples):
        x = s.astype(np.float64)
        expected = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, ddof=1, keepdims=True) + 0.01)
        np.testing.assert_allclose(out.at(i), expected, rtol=1e-5, atol=1e-5)


def test_batch_statistics_by_axis_name():
    rng = np.random.default_rng(1)
    samples = [rng.random((3, 2), np.float32), rng.random((5, 2), np.float32)]
    out = _run(samples, layout="HC", axis_names="H", batch=True)
    joined = np.concatenate(samples).astype(np.float64)
    mean, std = joined.mean(axis=0), joined.std(axis=0)
    for i, s in enumerate(samples):
        np.testing.assert_allclose(out.at(i), (s - mean) / std, rtol=1e-5)


def test_integer_output_rounds_and_saturates():
    out = _run([np.array([0, 10, 20], np.float32)], mean=10, stddev=1, scale=20, dtype=types.INT8)
    np.testing.assert_array_equal(out.at(0), [-128, 0, 127])
