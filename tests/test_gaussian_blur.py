"""gaussian_blur in pipelines against the numpy separable reference."""
import numpy as np
import pytest
from pipeline_run import run_once
from test_gaussian_blur_kernel import reference

from penstock import fn, types


def images(seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, s).astype(np.uint8) for s in [(16, 21, 3), (9, 30, 3), (5, 5, 3)]]


def test_sigma_only_gives_7_tap_window_for_sigma_1():
    imgs = images(0)
    outs = run_once(lambda x: fn.gaussian_blur(x, sigma=1.0), imgs)[0]
    for img, out in zip(imgs, outs):
        ref = reference(img[None], [1.0, 1.0], [7, 7], np.uint8)[0]
        assert np.abs(out.astype(int) - ref).max() <= 1 and np.mean(out == ref) > 0.99
        # a 5-tap window would differ
        other = reference(img[None], [1.0, 1.0], [5, 5], np.uint8)[0]
        assert np.mean(out == other) < np.mean(out == ref)


def test_window_only_derives_sigma_and_per_axis_values():
    imgs = images(1)
    outs = run_once(lambda x: (fn.gaussian_blur(x, window_size=5, dtype=types.FLOAT),
                               fn.gaussian_blur(x, sigma=[2.0, 0.5], window_size=[9, 3], dtype=types.FLOAT)), imgs)
    sigma5 = (2 - 1) * 0.3 + 0.8
    for img, a, b in zip(imgs, *outs):
        np.testing.assert_allclose(a, reference(img[None], [sigma5] * 2, [5, 5], np.float32)[0], atol=1e-3)
        np.testing.assert_allclose(b, reference(img[None], [2.0, 0.5], [9, 3], np.float32)[0], atol=1e-3)


def test_per_sample_sigma_and_sequence_layout():
    rng = np.random.default_rng(2)
    seqs = [rng.uniform(0, 1, (3, 8, 10, 1)).astype(np.float32) for _ in range(2)]
    sig = [np.float32(0.7), np.float32(1.6)]
    outs = run_once(lambda x, s: fn.gaussian_blur(x, sigma=s), seqs, sig, layout="FHWC")[0]
    for seq, s, out in zip(seqs, sig, outs):
        w = 2 * int(np.ceil(3 * s)) + 1
        np.testing.assert_allclose(out, reference(seq, [s, s], [w, w], np.float32), atol=1e-5)


def test_missing_sigma_and_window_is_an_error():
    with pytest.raises(RuntimeError, match="`sigma` and `window_size` shouldn.t be 0 at the same time for sample: 0"):
        run_once(lambda x: fn.gaussian_blur(x), images(3))


def test_empty_images_pass_through():
    imgs = [np.zeros((0, 4, 3), np.uint8), images(2)[2]]
    outs = run_once(lambda x: fn.gaussian_blur(x, window_size=15), imgs)[0]
    assert outs[0].shape == (0, 4, 3)
    ref = reference(imgs[1][None], [2.6, 2.6], [15, 15], np.uint8)[0]  # OpenCV's sigma for 15 taps
    assert np.abs(outs[1].astype(int) - ref).max() <= 1


def test_the_engines_windows_fill_in_each_pair_and_weigh_as_the_cpu_kernel():
    from penstock import _engine
    sigmas, windows = _engine.blur_windows(2, np.array([[1.0, 0.0]]), np.array([[0, 5]], np.int64))
    assert windows.tolist() == [[7, 5]] * 2  # 2 ceil(3 sigma) + 1; as given
    np.testing.assert_allclose(sigmas, [[1.0, 1.1]] * 2, rtol=1e-6)  # as given; OpenCV's (r - 1) 0.3 + 0.8
    weights, starts = _engine.gaussian_windows(sigmas, windows)
    assert starts.tolist() == [[0, 7], [12, 19]] and weights.shape == (24,)
    first = weights[:7]
    np.testing.assert_allclose(first, first[::-1])
    np.testing.assert_allclose(first.sum(dtype=np.float64), 1.0, rtol=1e-6)
    np.testing.assert_allclose(first / first[3], np.exp(-np.arange(-3, 4) ** 2 / 2.0), rtol=1e-6)
    with pytest.raises(ValueError, match="window size must be odd"):
        _engine.gaussian_windows(sigmas, np.full((2, 2), 4, np.int64))
