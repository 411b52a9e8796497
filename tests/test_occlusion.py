"""erase and grid_mask in pipelines against numpy references."""
import numpy as np
import pytest
from pipeline_run import run_once
from test_occlusion_kernel import grid_mask_reference

from penstock import fn


def images(seed, shapes=((10, 12, 3), (6, 20, 3))):
    rng = np.random.default_rng(seed)
    return [rng.integers(1, 256, s).astype(np.uint8) for s in shapes]


def test_erase_absolute_regions_and_channel_fill():
    imgs = images(0)
    outs = run_once(lambda x: fn.erase(x, anchor=[2, 3, 5, 0], shape=[3, 4, 10, 2], fill_value=[1, 2, 3]), imgs)[0]
    for img, out in zip(imgs, outs):
        ref = img.copy()
        ref[2:5, 3:7] = [1, 2, 3]
        ref[5:15, 0:2] = [1, 2, 3]
        np.testing.assert_array_equal(out, ref)


def test_erase_normalized_centered_and_axes():
    imgs = images(1)
    outs = run_once(lambda x: (fn.erase(x, anchor=[0.5, 0.5], shape=[0.2, 0.5], normalized=True,
                                        centered_anchor=True),
                               fn.erase(x, anchor=[4], shape=[2], axes=[1], fill_value=9)), imgs)
    for img, centred, cols in zip(imgs, *outs):
        h, w = img.shape[:2]
        ref = img.copy()
        y0, y1 = int(np.floor(0.5 * h - 0.1 * h)), int(np.floor(0.5 * h + 0.1 * h))
        x0, x1 = int(np.floor(0.5 * w - 0.25 * w)), int(np.floor(0.5 * w + 0.25 * w))
        ref[y0:y1, x0:x1] = 0
        np.testing.assert_array_equal(centred, ref)
        ref = img.copy()
        ref[:, 4:6] = 9
        np.testing.assert_array_equal(cols, ref)


def test_erase_per_sample_regions():
    imgs = images(2)
    anchors = [np.array([1, 1], np.float32), np.array([0, 0, 3, 3], np.float32)]
    shapes = [np.array([2, 2], np.float32), np.array([1, 1, 2, 5], np.float32)]
    outs = run_once(lambda x, a, s: fn.erase(x, anchor=a, shape=s), imgs, anchors, shapes)[0]
    refs = [imgs[0].copy(), imgs[1].copy()]
    refs[0][1:3, 1:3] = 0
    refs[1][0:1, 0:1] = 0
    refs[1][3:5, 3:8] = 0
    for out, ref in zip(outs, refs):
        np.testing.assert_array_equal(out, ref)


def test_erase_names_the_sample_whose_regions_do_not_fit_the_axes():
    imgs = images(2)
    anchors = [np.array([1, 1], np.float32), np.array([0, 0, 3], np.float32)]
    shapes = [np.array([2, 2], np.float32), np.array([1, 1, 2], np.float32)]
    with pytest.raises(RuntimeError, match=r"sample 1: anchor \(3 values\) and shape \(3 values\) must hold 2 values"):
        run_once(lambda x, a, s: fn.erase(x, anchor=a, shape=s), imgs, anchors, shapes)
    only_shapes = run_once(lambda x, s: fn.erase(x, shape=s, fill_value=7), imgs,
                           [np.array([2, 3], np.float32), np.array([1, 1, 4, 2], np.float32)])[0]
    refs = [imgs[0].copy(), imgs[1].copy()]
    refs[0][0:2, 0:3] = 7  # no anchors: the regions start at 0
    refs[1][0:1, 0:1] = 7
    refs[1][0:4, 0:2] = 7
    for out, ref in zip(only_shapes, refs):
        np.testing.assert_array_equal(out, ref)


def test_erase_rounds_region_ends_down():
    imgs = images(4)
    outs = run_once(lambda x: (fn.erase(x, anchor=[0.7, 1.2], shape=[4.6, 5.6]),
                               fn.erase(x, anchor=[2, 3], shape=[3, 5], centered_anchor=True),
                               fn.erase(x, anchor=[2, 3], shape=[0.5, 0.9])), imgs)
    for img, fractional, centred, thin in zip(imgs, *outs):
        ref = img.copy()
        ref[0:5, 1:6] = 0  # rows [0.7, 5.3), cols [1.2, 6.8)
        np.testing.assert_array_equal(fractional, ref)
        ref = img.copy()
        ref[0:3, 0:5] = 0  # centred: rows [0.5, 3.5), cols [0.5, 5.5)
        np.testing.assert_array_equal(centred, ref)
        np.testing.assert_array_equal(thin, img)  # [2, 2.5) x [3, 3.9): no whole pixel


def test_erase_axis_names_win_over_axes():
    imgs = images(5)
    outs = run_once(lambda x: (fn.erase(x, anchor=[2], shape=[3], axes=[0], axis_names="W"),
                               fn.erase(x, anchor=[2, 3], shape=[3, 4], axes=[], axis_names="HW"),
                               fn.erase(x, anchor=[1], shape=[2], axes=[2])), imgs)
    for img, by_name, default_names, channels in zip(imgs, *outs):
        ref = img.copy()
        ref[:, 2:5] = 0
        np.testing.assert_array_equal(by_name, ref)
        ref = img.copy()
        ref[2:5, 3:7] = 0
        np.testing.assert_array_equal(default_names, ref)
        ref = img.copy()
        ref[:, :, 1:3] = 0
        np.testing.assert_array_equal(channels, ref)


def test_erase_empty_fill_value_fills_zero():
    imgs = images(6)
    outs = run_once(lambda x: fn.erase(x, anchor=[1, 2], shape=[2, 2], fill_value=[]), imgs)[0]
    for img, out in zip(imgs, outs):
        ref = img.copy()
        ref[1:3, 2:4] = 0
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("kwargs", [dict(axes=[]), dict(axis_names="")])
def test_erase_without_axes_is_an_error(kwargs):
    with pytest.raises(RuntimeError, match="erase.*span no axis"):
        run_once(lambda x: fn.erase(x, anchor=[1], shape=[2], **kwargs), images(7))


@pytest.mark.parametrize("kwargs", [dict(), dict(tile=8, ratio=0.3), dict(tile=12, angle=0.5, shift_x=3.0, shift_y=-2.0)])
def test_grid_mask(kwargs):
    imgs = images(3, ((40, 50, 3), (25, 33, 3)))
    outs = run_once(lambda x: fn.grid_mask(x, **kwargs), imgs)[0]
    p = {**dict(tile=100, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0), **kwargs}
    for img, out in zip(imgs, outs):
        ref, u, v = grid_mask_reference(img, p["tile"], p["ratio"], p["angle"], p["shift_x"], p["shift_y"])
        near_edge = np.minimum.reduce([np.abs(t - np.round(t)) for t in
                                       (u, v, u - p["ratio"], v - p["ratio"])]) < 1e-4
        assert ((out == ref).all(axis=2) | near_edge).all()


def test_erase_fill_value_per_sample():
    imgs = images(4)
    fills = [np.array([7, 8, 9], np.float32), np.array([200, 100, 0], np.float32)]
    outs = run_once(lambda x, f: fn.erase(x, anchor=[1, 2], shape=[3, 4], axis_names="HW", fill_value=f),
                    imgs, fills)[0]
    for img, fill, out in zip(imgs, fills, outs):
        want = img.copy()
        want[1:4, 2:6] = fill
        np.testing.assert_array_equal(out, want)
    with pytest.raises(RuntimeError, match="Expected uniform shape for argument"):
        run_once(lambda x, f: fn.erase(x, anchor=[1, 2], shape=[3, 4], axis_names="HW", fill_value=f),
                 imgs, [np.array([1, 2, 3], np.float32), np.array([4], np.float32)])
