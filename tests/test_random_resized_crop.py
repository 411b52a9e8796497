"""fn.random_resized_crop: invariants of its window algorithm (shared with decoders.image_random_crop)
and the resize of the window."""
import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, types
from penstock.operators.image_decode import random_crop_windows

from _util import run_es
from test_resize_kernel import ref_resize


@pytest.mark.parametrize("h, w", [(100, 100), (375, 500), (50, 400), (400, 30), (1, 1), (7, 3)])
def test_window_invariants(h, w):
    rng = np.random.default_rng(h * 1000 + w)
    y, x, ch, cw = random_crop_windows(rng, np.tile([h, w], (300, 1)), (0.08, 1.0), (0.75, 4 / 3), 10).T
    assert ((1 <= ch) & (ch <= h) & (1 <= cw) & (cw <= w)).all()
    assert ((0 <= y) & (y <= h - ch) & (0 <= x) & (x <= w - cw)).all()


def test_window_statistics_follow_the_ranges():
    rng = np.random.default_rng(0)
    _, _, ch, cw = random_crop_windows(rng, np.tile([400, 400], (2000, 1)), (0.2, 0.6), (0.5, 2.0), 10).T
    areas, ratios = ch * cw / 160000, cw / ch
    assert 0.19 <= min(areas) and max(areas) <= 0.61
    assert 0.49 <= min(ratios) and max(ratios) <= 2.02
    assert abs(np.mean(np.log(ratios))) < 0.05  # log-uniform ratio: symmetric about 1


def test_fallback_clamps_aspect_and_area():
    rng = np.random.default_rng(1)
    # a 10x1000 strip cannot hold a window with w/h <= 4/3 and area >= 0.9: fallback
    y, x, ch, cw = random_crop_windows(rng, [[10, 1000]], (0.9, 1.0), (0.75, 4 / 3), 3)[0]
    assert ch == 10 and cw == round(10 * 4 / 3)


def run(images, **kw):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        return fn.random_resized_crop(x, **kw)

    p = pipe()
    p.build()
    return p


def windows_matching(indices, extent, n_out):
    """All (start, size) whose NN sampling floor(start + (i + 0.5) * size / n_out) gives `indices`."""
    i = np.arange(n_out)
    return [(s0, size) for size in range(1, extent + 1) for s0 in range(0, extent - size + 1)
            if np.array_equal(np.floor(s0 + (i + 0.5) * size / n_out).astype(int), indices)]


def test_output_is_the_nn_resize_of_a_valid_window():
    h, w = 60, 80
    coords = np.stack(list(np.meshgrid(np.arange(h), np.arange(w), indexing="ij")) + [np.zeros((h, w), int)], -1)
    img = coords.astype(np.uint8)  # each pixel holds its own (y, x)
    out = run([img] * 8, size=(16, 24), interp_type=types.INTERP_NN).run()[0]
    for k in range(8):
        o = np.array(out.at(k)).astype(int)
        assert o.shape == (16, 24, 3)
        ys, xs = o[:, 0, 0], o[0, :, 1]
        assert (o[:, :, 0] == ys[:, None]).all() and (o[:, :, 1] == xs[None, :]).all()
        ok = [(hh, ww) for _, hh in windows_matching(ys, h, 16) for _, ww in windows_matching(xs, w, 24)
              if 0.75 - 1e-6 <= ww / hh <= 4 / 3 + 1e-6 and 0.08 * h * w <= hh * ww <= h * w]
        assert ok, f"sample {k}: no window with area in [0.08, 1] and ratio in [3/4, 4/3] explains the output"


def test_deterministic_per_seed_and_legacy_ops():
    img = np.random.default_rng(5).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    a = np.array(run([img], size=(8, 8)).run()[0].at(0))
    b = np.array(run([img], size=(8, 8)).run()[0].at(0))
    np.testing.assert_array_equal(a, b)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return ops.RandomResizedCrop(size=(8, 8), interp_type=types.INTERP_NN)(x)

    p = pipe()
    p.build()
    assert np.array(p.run()[0].at(0)).shape == (8, 8, 3)


def test_size_is_mandatory():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(Exception, match="size"):
        run([img])


@pytest.mark.parametrize("kw", [dict(num_attempts=0), dict(num_attempts=-1), dict(random_area=[2.0]),
                                dict(random_area=[1.2, 1.5], num_attempts=3)])
def test_no_attempt_or_no_fitting_area_takes_the_whole_image(kw):
    # no attempts at all, or areas above the image's: the fallback window, here the whole square image
    h = w = 40
    coords = np.stack(list(np.meshgrid(np.arange(h), np.arange(w), indexing="ij")) + [np.zeros((h, w), int)], -1)
    out = np.array(run([coords.astype(np.uint8)], size=(8, 10), interp_type=types.INTERP_NN, **kw).run()[0].at(0))
    ys, xs = np.floor((np.arange(8) + 0.5) * h / 8), np.floor((np.arange(10) + 0.5) * w / 10)
    np.testing.assert_array_equal(out[:, :, 0], np.broadcast_to(ys[:, None], (8, 10)))
    np.testing.assert_array_equal(out[:, :, 1], np.broadcast_to(xs[None, :], (8, 10)))


def test_dtype_is_the_input_type_or_float():
    img = np.full((20, 20, 3), 9, np.uint8)
    out = run([img], size=(5, 5), dtype=types.FLOAT).run()[0]
    assert out.dtype == types.FLOAT and np.allclose(np.array(out.at(0)), 9)
    with pytest.raises(RuntimeError, match="INT16"):
        run([img], size=(5, 5), dtype=types.INT16).run()


def test_random_crop_generator_windows_fit_their_shapes():
    shapes = [np.array([100, 80, 3], np.int64), np.array([50, 60], np.int64)][:1] * 3
    anchor, shape = run_es(lambda s: tuple(fn.random_crop_generator(s, random_area=[0.1, 0.5], seed=4)), shapes)
    for i in range(3):
        a, s = anchor.at(i), shape.at(i)
        assert a.dtype == np.int32 and s.dtype == np.int32 and a.shape == s.shape == (2,)
        assert (a >= 0).all() and (a + s <= [100, 80]).all()
        assert 0.09 * 8000 <= s.prod() <= 0.51 * 8000 + 100


def test_roi_random_crop_keeps_the_roi_in_the_window():
    @pipeline_def(batch_size=64, num_threads=1, device_id=None, seed=3)
    def pipe():
        small = fn.roi_random_crop(crop_shape=[10, 20], roi_start=[5, 5], roi_shape=[3, 3], in_shape=[50, 60])
        large = fn.roi_random_crop(crop_shape=[10, 20], roi_start=[5, 5], roi_end=[30, 40])
        return small, large
    small, large = pipe().run()
    s = np.stack([small.at(i) for i in range(64)])
    g = np.stack([large.at(i) for i in range(64)])
    assert s.dtype == np.int64
    assert ((s >= 0) & (s <= [5, 5]) & (s + [10, 20] >= [8, 8])).all()  # window holds the ROI, inside the input
    assert ((g >= [5, 5]) & (g + [10, 20] <= [30, 40])).all()  # window inside the larger ROI
    assert len(np.unique(g[:, 0])) > 5  # spread over the allowed anchors
