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


def test_empty_axes_is_an_error():
    with pytest.raises(RuntimeError, match="normalize.*axes is empty"):
        _run([np.ones((2, 3), np.float32)], axes=[])


@pytest.mark.parametrize("kwargs, message", [
    ({"axes": [-1]}, r"axes \[-1\] are out of range for 2-D input \(valid: 0..1\)"),  # not counted from the end
    ({"axes": [0, 2]}, r"axes \[0, 2\] are out of range"),
    ({"axes": [1], "axis_names": "H"}, "'axes' and 'axis_names' are mutually exclusive"),
    ({"axes": [], "axis_names": "H"}, "'axes' and 'axis_names' are mutually exclusive"),
])
def test_axes_errors(kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        _run([np.ones((2, 3), np.float32)], layout="HW", **kwargs)


def test_integer_output_rounds_and_saturates():
    out = _run([np.array([0, 10, 20], np.float32)], mean=10, stddev=1, scale=20, dtype=types.INT8)
    np.testing.assert_array_equal(out.at(0), [-128, 0, 127])


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32])
def test_normalize_kernel_reads_statistics_through_strides(dtype):
    """_engine.normalize (GpuKernels.normalize's CPU sibling): per-channel statistics of HWC samples
    (strides 0 on H and W) for one sample, a scalar (all strides 0) for the other."""
    from penstock import _engine
    from kernel_batch import POOL, pack, unpack
    rng = np.random.default_rng(2)
    xs = [(rng.random(s) * 200).astype(dtype) for s in [(5, 7, 3), (2, 3, 3)]]
    src, shapes, offsets = pack(xs)
    dst = np.zeros(src.size, np.float32)
    mean = np.array([10.0, 20.0, 30.0, 50.0])
    std = np.array([2.0, 4.0, 8.0, 3.0])
    stat_offsets = np.array([0, 3], np.int64)
    strides = np.array([[0, 0, 1], [0, 0, 0]], np.int64)
    code = {np.uint8: types.UINT8, np.float16: types.FLOAT16, np.int32: types.INT32}[dtype]
    _engine.normalize(POOL, src, int(code), shapes, offsets, dst, offsets, mean, stat_offsets, strides,
                      std, stat_offsets, strides, 1.5, -2.0)
    got = unpack(dst, shapes, offsets)
    for g, x, m, s in zip(got, xs, (mean[:3], mean[3]), (std[:3], std[3])):
        want = ((x.astype(np.float64) - m) / s * 1.5 - 2.0).astype(np.float32)
        np.testing.assert_array_equal(g, want)


def test_normalize_uint8_images_per_channel():
    rng = np.random.default_rng(4)
    imgs = [rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)]
    out = _run(imgs, layout="HWC", axes=[0, 1], scale=64, shift=128)
    for i, x in enumerate(imgs):
        x = x.astype(np.float64)
        m, sd = x.mean(axis=(0, 1), keepdims=True), x.std(axis=(0, 1), keepdims=True)
        np.testing.assert_allclose(out.at(i), (x - m) / sd * 64 + 128, rtol=1e-6, atol=1e-4)
