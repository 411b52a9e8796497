"""transforms.* in pipelines against matrices written out by hand in numpy."""
import numpy as np
import pytest
from pipeline_run import run_once

from penstock import fn


def run_transforms(graph, n=2):
    """Runs a pipeline whose only input is a dummy batch (the transforms take none)."""
    dummy = [np.zeros((1, 1, 1), np.uint8)] * n
    outs = run_once(lambda _: graph(), dummy)
    return [np.stack(o) for o in outs]


def h(m):
    """2x3 / 3x4 -> homogeneous."""
    d = m.shape[0]
    return np.vstack([m, np.eye(d + 1)[-1]])


def test_translation_scale_rotation_shear_crop_2d():
    t, s, r, sh, sa, cr = run_transforms(lambda: (
        fn.transforms.translation(offset=[3, -2]),
        fn.transforms.scale(scale=[2, 0.5], center=[10, 20]),
        fn.transforms.rotation(angle=30, center=[5, 7]),
        fn.transforms.shear(shear=[0.5, -0.25]),
        fn.transforms.shear(angles=[45, 0], center=[0, 4]),
        fn.transforms.crop(from_start=[0, 0], from_end=[200, 100], to_start=[-1, -1], to_end=[1, 1])))
    np.testing.assert_allclose(t[0], [[1, 0, 3], [0, 1, -2]])
    np.testing.assert_allclose(s[0], [[2, 0, 10 - 2 * 10], [0, 0.5, 20 - 0.5 * 20]])
    a = np.deg2rad(30)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    np.testing.assert_allclose(r[0], np.hstack([rot, ([5, 7] - rot @ [5, 7])[:, None]]), atol=1e-6)
    np.testing.assert_allclose(sh[0], [[1, 0.5, 0], [-0.25, 1, 0]])
    np.testing.assert_allclose(sa[0], [[1, 1, -4], [0, 1, 0]], atol=1e-6)
    np.testing.assert_allclose(cr[0], [[2 / 200, 0, -1], [0, 2 / 100, -1]], atol=1e-7)
    assert t.dtype == np.float32 and t.shape == (2, 2, 3)


def test_chaining_applies_new_transform_after_input_and_reverse_order():
    chained, reversed_, combined, combined_rev = run_transforms(lambda: (
        fn.transforms.scale(fn.transforms.translation(offset=[1, 2]), scale=[3, 3]),
        fn.transforms.scale(fn.transforms.translation(offset=[1, 2]), scale=[3, 3], reverse_order=True),
        fn.transforms.combine(fn.transforms.translation(offset=[1, 2]), fn.transforms.scale(scale=[3, 3])),
        fn.transforms.combine(fn.transforms.translation(offset=[1, 2]), fn.transforms.scale(scale=[3, 3]),
                              reverse_order=True)))
    T = h(np.array([[1, 0, 1], [0, 1, 2]], float))
    S = h(np.array([[3, 0, 0], [0, 3, 0]], float))
    np.testing.assert_allclose(chained[0], (S @ T)[:2])
    np.testing.assert_allclose(reversed_[0], (T @ S)[:2])
    np.testing.assert_allclose(combined[0], (S @ T)[:2])
    np.testing.assert_allclose(combined_rev[0], (T @ S)[:2])


def test_3d_rotation_about_z_and_per_sample_angle():
    angles = [np.float32(90), np.float32(-30)]
    r3, r2 = run_once(lambda a: (fn.transforms.rotation(angle=90, axis=[0, 0, 2]),
                                 fn.transforms.rotation(angle=a)), angles)
    np.testing.assert_allclose(r3[0], [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]], atol=1e-6)
    for a, m in zip(angles, r2):
        t = np.deg2rad(float(a))
        np.testing.assert_allclose(m, [[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0]], atol=1e-6)


def test_rotation_feeds_warp_affine():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, (8, 8, 3)).astype(np.uint8)]
    # rotation by 90 degrees about the centre (4, 4) maps output pixels onto input pixels exactly;
    # used as an output -> input map, the content turns the other way (counter-clockwise on screen)
    out = run_once(lambda x: fn.warp_affine(x, fn.transforms.rotation(angle=90, center=[4, 4])), imgs)[0][0]
    np.testing.assert_array_equal(out, np.rot90(imgs[0]))


def test_bad_arguments_raise():
    with pytest.raises(Exception, match="exactly one"):
        run_transforms(lambda: fn.transforms.shear(shear=[1, 0], angles=[1, 0]))
    with pytest.raises(RuntimeError, match="'center'"):  # a single factor is 1-D unless ndim says otherwise
        run_transforms(lambda: fn.transforms.scale(scale=[2.0], center=[1.0, 2.0]))


def test_scale_dimensions_come_from_scale_and_ndim_widens_a_single_factor():
    one, three, ignored, below_one, centred = run_transforms(lambda: (
        fn.transforms.scale(scale=[2.0]),
        fn.transforms.scale(scale=[2.0], ndim=3, center=[1.0]),
        fn.transforms.scale(scale=[2.0, 3.0], ndim=3),
        fn.transforms.scale(scale=[2.0], ndim=0),
        fn.transforms.scale(scale=[2.0, 3.0], center=[1.0])))
    np.testing.assert_allclose(one[0], [[2, 0]])
    np.testing.assert_allclose(three[0], np.hstack([2 * np.eye(3), np.full((3, 1), 1 - 2 * 1.0)]))
    np.testing.assert_allclose(ignored[0], [[2, 0, 0], [0, 3, 0]])
    np.testing.assert_allclose(below_one[0], [[2, 0]])
    np.testing.assert_allclose(centred[0], [[2, 0, 1 - 2], [0, 3, 1 - 3]])  # x -> s (x - c) + c


@pytest.mark.parametrize("graph", [lambda: fn.transforms.translation(offset=[]),
                                   lambda: fn.transforms.scale(scale=[]),
                                   lambda: fn.transforms.translation(offset=[1.0] * 7),
                                   lambda: fn.transforms.scale(scale=[2.0], ndim=7)])
def test_transforms_have_1_to_6_dimensions(graph):
    with pytest.raises(RuntimeError, match="number of dimensions"):
        run_transforms(graph)


def test_translation_in_6_dimensions():
    (t,) = run_transforms(lambda: (fn.transforms.translation(offset=[1, 2, 3, 4, 5, 6]),))
    np.testing.assert_allclose(t[0], np.hstack([np.eye(6), np.arange(1, 7)[:, None]]))
