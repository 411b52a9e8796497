"""_engine.gaussian_blur against a numpy separable convolution with reflect-101 borders."""
import numpy as np
import pytest
from kernel_batch import DTYPE_CODES, POOL, pack, round_sat, unpack

from penstock import _engine


def window(size, sigma):
    x = np.arange(size) - size // 2
    w = np.exp(-x * x / (2.0 * sigma * sigma))
    return w / w.sum()


def reference(sample, sigmas, windows, out_dtype):
    """sample: (F, spatial..., C); numpy's 'reflect' pad is reflect-101."""
    acc = sample.astype(np.float64)
    for ax, (s, ws) in enumerate(zip(sigmas, windows)):
        if ws <= 1:
            continue
        r = ws // 2
        axis = ax + 1
        pad = [(0, 0)] * acc.ndim
        pad[axis] = (r, r)
        padded = np.pad(acc, pad, mode="reflect" if acc.shape[axis] > 1 else "edge")
        w = window(ws, s)
        n = acc.shape[axis]
        acc = sum(w[t] * np.take(padded, np.arange(t, t + n), axis=axis) for t in range(ws))
    return round_sat(acc, out_dtype)


def run(samples, sigmas, windows, out_dtype):
    src, shapes, offs = pack(samples)
    dst = np.zeros(src.size, out_dtype)
    _engine.gaussian_blur(POOL, src, shapes, offs, DTYPE_CODES[src.dtype], dst, offs,
                          DTYPE_CODES[np.dtype(out_dtype)],
                          np.array(sigmas, np.float32), np.array(windows, np.int64))
    return unpack(dst, shapes, offs)


def check(out, ref):
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(out, ref, atol=1e-3, rtol=1e-4)
    else:  # float32 vs float64 sums may land on different sides of a .5 tie
        assert np.abs(out.astype(np.int64) - ref.astype(np.int64)).max() <= 1
        assert np.mean(out == ref) > 0.99


@pytest.mark.parametrize("in_dtype, out_dtype", [(np.uint8, np.uint8), (np.uint8, np.float32),
                                                 (np.float32, np.float32), (np.int16, np.int16)])
def test_2d_images_with_per_sample_sigma(in_dtype, out_dtype):
    rng = np.random.default_rng(0)
    samples = [rng.integers(0, 256, (1, h, w, c)).astype(in_dtype)
               for h, w, c in [(20, 31, 3), (9, 5, 1), (40, 17, 4)]]
    sigmas = [[1.0, 1.0], [0.5, 2.0], [3.0, 0.7]]
    windows = [[7, 7], [3, 13], [19, 5]]
    for s, sg, ws, o in zip(samples, sigmas, windows, run(samples, sigmas, windows, out_dtype)):
        check(o, reference(s, sg, ws, out_dtype))


def test_window_larger_than_image_reflects_repeatedly():
    rng = np.random.default_rng(1)
    img = rng.uniform(0, 1, (1, 3, 4, 2)).astype(np.float32)
    out = run([img], [[4.0, 4.0]], [[25, 25]], np.float32)[0]
    check(out, reference(img, [4.0, 4.0], [25, 25], np.float32))


def test_single_pixel_axis_and_untouched_axis():
    rng = np.random.default_rng(2)
    img = rng.uniform(0, 1, (1, 1, 9, 3)).astype(np.float32)
    out = run([img], [[1.0, 0.0]], [[7, 1]], np.float32)[0]
    np.testing.assert_allclose(out, img, rtol=1e-6)  # H=1 blur is identity, W untouched


def test_frames_blurred_independently_and_volumes():
    rng = np.random.default_rng(3)
    seq = rng.uniform(0, 100, (3, 8, 6, 1)).astype(np.float32)
    vol = rng.uniform(0, 100, (1, 5, 6, 7, 2)).astype(np.float32)
    check(run([seq], [[1.5, 1.0]], [[9, 7]], np.float32)[0],
          reference(seq, [1.5, 1.0], [9, 7], np.float32))
    check(run([vol], [[1.0, 0.8, 2.0]], [[7, 5, 13]], np.float32)[0],
          reference(vol, [1.0, 0.8, 2.0], [7, 5, 13], np.float32))


def test_constant_image_stays_constant():
    img = np.full((1, 10, 10, 3), 77, np.uint8)
    assert (run([img], [[2.0, 2.0]], [[13, 13]], np.uint8)[0] == 77).all()


def test_even_window_is_a_sample_error():
    img = np.zeros((1, 4, 4, 1), np.uint8)
    with pytest.raises(_engine.SampleError) as e:
        run([img, img], [[1, 1], [1, 1]], [[3, 3], [4, 3]], np.uint8)
    assert e.value.args[1] == 1
