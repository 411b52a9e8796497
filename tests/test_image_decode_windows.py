"""The engine's random crop windows (csrc/kernels/image_decode_windows.cpp) against the algorithm written out
with numpy (operators.md §2): the same generator gives the same windows, bit for bit, edge cases included, and
leaves the generator where numpy's draws would."""
import numpy as np
import pytest

from penstock import _engine
from penstock.operators.image_decode import random_crop_windows


def reference_windows(rng, hw, area, ratio, attempts):
    hw = np.asarray(hw, np.int64).reshape(-1, 2)
    h, w = hw[:, 0], hw[:, 1]
    n = len(hw)
    min_ratio, max_ratio = ratio
    min_area = area[0] * h * w
    max_w = np.maximum(1, (h * max_ratio).astype(np.int64))
    max_h = np.maximum(1, (w / min_ratio).astype(np.int64))
    s = rng.uniform(area[0], area[1], (n, attempts))
    r = np.exp(rng.uniform(np.log(min_ratio), np.log(max_ratio), (n, attempts)))
    full = s * (h * w)[:, None]
    cw = np.maximum(1, np.floor(np.sqrt(full * r) + 0.5)).astype(np.int64)
    ch = np.maximum(1, np.floor(np.sqrt(full / r) + 0.5)).astype(np.int64)
    fits = (cw <= w[:, None]) & (ch <= h[:, None]) & (min_ratio <= cw / ch) & (cw / ch <= max_ratio)
    fits = np.column_stack([fits, np.zeros(n, bool)])
    first = fits.argmax(axis=1)
    found = fits[np.arange(n), first]
    first = np.minimum(first, attempts - 1)
    out_h = ch[np.arange(n), first] if attempts else np.ones(n, np.int64)
    out_w = cw[np.arange(n), first] if attempts else np.ones(n, np.int64)
    whole = w / h
    wh = np.where(whole > max_ratio, h, np.where(whole < min_ratio, max_h, h))
    ww = np.where(whole > max_ratio, max_w, w)
    scale = np.minimum(1.0, np.sqrt(area[1] * h * w / (wh * ww)))
    out_h = np.where(found, out_h, np.maximum(1, (wh * scale).astype(np.int64)))
    out_w = np.where(found, out_w, np.maximum(1, (ww * scale).astype(np.int64)))
    too_wide = h * max_w < min_area
    too_tall = ~too_wide & (w * max_h < min_area)
    out_h = np.where(too_wide, h, np.where(too_tall, max_h, out_h))
    out_w = np.where(too_wide, max_w, np.where(too_tall, w, out_w))
    out_h, out_w = np.minimum(out_h, h), np.minimum(out_w, w)
    y = rng.integers(0, h - out_h + 1) if n else np.zeros(0, np.int64)
    x = rng.integers(0, w - out_w + 1) if n else np.zeros(0, np.int64)
    return np.column_stack([y, x, out_h, out_w]).astype(np.int64).reshape(n, 4)


@pytest.mark.parametrize("area,ratio", [((0.08, 1.0), (0.75, 4 / 3)), ((0.0, 0.5), (0.1, 10.0)),
                                        ((1.0, 2.0), (1.0, 1.0)), ((0.5, 0.5), (3.0, 4.0))])
@pytest.mark.parametrize("attempts", [0, 1, 10, 100])
def test_windows_match_the_reference_algorithm(area, ratio, attempts):
    sizes = np.random.default_rng(attempts)
    for seed in range(20):
        n = int(sizes.integers(0, 64))
        hw = np.column_stack([sizes.integers(1, 4000, n), sizes.integers(1, 4000, n)])
        hw[: n // 8] = sizes.integers(1, 4, (n // 8, 2))  # tiny images: no window fits
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        with np.errstate(all="ignore"):
            expected = reference_windows(theirs, hw, area, ratio, attempts)
        np.testing.assert_array_equal(random_crop_windows(ours, hw, area, ratio, attempts), expected)
        assert ours.random() == theirs.random()  # the same number of draws


def test_empty_images_get_empty_windows():
    hw = np.array([[0, 0], [0, 5], [5, 0]])
    with np.errstate(all="ignore"):
        expected = reference_windows(np.random.default_rng(1), hw, (0.08, 1.0), (0.75, 4 / 3), 10)
    np.testing.assert_array_equal(random_crop_windows(np.random.default_rng(1), hw, (0.08, 1.0), (0.75, 4 / 3), 10),
                                  expected)


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox, np.random.MT19937, np.random.SFC64])
def test_every_numpy_bit_generator_gives_numpys_draws(bit_generator):
    hw = np.array([[375, 500], [3000, 4000], [1, 1], [7, 90000]])
    ours, theirs = np.random.Generator(bit_generator(5)), np.random.Generator(bit_generator(5))
    for _ in range(30):
        np.testing.assert_array_equal(random_crop_windows(ours, hw, (0.08, 1.0), (0.75, 4 / 3), 10),
                                      reference_windows(theirs, hw, (0.08, 1.0), (0.75, 4 / 3), 10))
    assert ours.integers(1 << 40) == theirs.integers(1 << 40)


def test_hwc_shapes_give_the_windows_of_their_heights_and_widths():
    shapes = np.array([[375, 500, 3], [3000, 4000, 1], [1, 1, 3], [7, 90000, 4]])
    np.testing.assert_array_equal(random_crop_windows(np.random.default_rng(3), shapes, (0.08, 1.0), (0.75, 4 / 3), 10),
                                  random_crop_windows(np.random.default_rng(3), shapes[:, :2], (0.08, 1.0), (0.75, 4 / 3), 10))


def test_what_is_not_a_bit_generator_is_refused():
    import ctypes
    not_bits = ctypes.pythonapi.PyCapsule_New
    not_bits.restype, not_bits.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    with pytest.raises(TypeError, match="BitGenerator"):
        _engine.random_crop_windows(not_bits(1, b"other", None), np.ones((3, 2), np.int64), 10, 0.1, 1.0, 0.5, 2.0,
                                    np.log(0.5), np.log(2.0))
    with pytest.raises(ValueError, match="hw must be"):
        _engine.random_crop_windows(np.random.PCG64(1).capsule, np.ones((3, 1), np.int64), 10, 0.1, 1.0, 0.5, 2.0,
                                    np.log(0.5), np.log(2.0))
