"""coord_flip and coord_transform against numpy."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples


def test_coord_flip_default_flips_x_about_half():
    pts = [np.array([[0.1, 0.2], [0.7, 0.9]], np.float32), np.zeros((0, 2), np.float32)]
    out, = run_es(lambda p: fn.coord_flip(p), pts)
    np.testing.assert_allclose(out.at(0), [[0.9, 0.2], [0.3, 0.9]], atol=1e-6)
    assert out.at(1).shape == (0, 2)


def test_coord_flip_layout_centres_and_per_sample_flags():
    rng = np.random.default_rng(0)
    pts = [rng.random((4, 3)).astype(np.float32) for _ in range(2)]
    fy = [np.int32(1), np.int32(0)]
    out, = run_es(lambda p, f: fn.coord_flip(p, layout="zyx", flip_x=0, flip_y=f, flip_z=1, center_z=2.0),
                  pts, fy)
    for g, p, f in zip(samples(out), pts, fy):
        want = p.copy()
        want[:, 0] = 4.0 - p[:, 0]          # z about 2.0
        if f:
            want[:, 1] = 1.0 - p[:, 1]      # y about 0.5
        np.testing.assert_allclose(g, want, atol=1e-6)


def test_coord_transform_matrix_translation_and_mt():
    rng = np.random.default_rng(1)
    pts = [rng.random((5, 2)).astype(np.float32), rng.random((1, 2)).astype(np.float32)]
    m = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    t = np.array([1.0, -2.0, 0.5])
    out, = run_es(lambda p: fn.coord_transform(p, M=m.ravel().tolist(), T=t.tolist()), pts)
    for g, p in zip(samples(out), pts):
        np.testing.assert_allclose(g, p @ m.T + t, rtol=1e-5)
    mt = np.concatenate([m, t[:, None]], 1)
    out, = run_es(lambda p: fn.coord_transform(p, MT=mt.ravel().tolist()), pts)
    np.testing.assert_allclose(out.at(0), pts[0] @ m.T + t, rtol=1e-5)
    out, = run_es(lambda p: fn.coord_transform(p, M=2.0, T=1.0), pts)
    np.testing.assert_allclose(out.at(0), pts[0] * 2 + 1, rtol=1e-6)


def test_coord_transform_with_transforms_and_integer_output():
    pts = [np.array([[1, 2], [3, -1]], np.int16)]

    def g(p):
        mt = fn.transforms.scale(scale=[2.5, 1.5])
        return fn.coord_transform(p, MT=mt, dtype=types.INT16)

    out, = run_es(g, pts)
    assert out.at(0).dtype == np.int16
    np.testing.assert_array_equal(out.at(0), [[3, 3], [8, -2]])  # 2.5, 7.5 and -1.5: half away from zero


@pytest.mark.parametrize("kwargs,match", [({"M": []}, "'M' must not be an empty list"),
                                          ({"MT": []}, "'MT' must not be an empty list"),
                                          ({"dtype": types.INT32}, "must be the input's type")])
def test_coord_transform_rejects_what_dali_rejects(kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        run_es(lambda p: fn.coord_transform(p, **kwargs), [np.zeros((1, 2), np.float32)])


def test_coord_transform_rejects_bad_matrix():
    with pytest.raises(RuntimeError, match="'M' has 3 values"):
        run_es(lambda p: fn.coord_transform(p, M=[1.0, 2.0, 3.0]), [np.zeros((1, 2), np.float32)])


def test_coord_transform_takes_any_rank_last_dim_is_the_coordinate():
    rng = np.random.default_rng(2)
    pts = [rng.random((4, 5, 3)).astype(np.float32), rng.random((2, 3, 3)).astype(np.float32)]
    m = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 1.0]])
    t = np.array([1.0, -2.0])
    out, = run_es(lambda p: fn.coord_transform(p, M=m.ravel().tolist(), T=t.tolist()), pts)
    for g, p in zip(samples(out), pts):
        assert g.shape == p.shape[:-1] + (2,)
        np.testing.assert_allclose(g, p @ m.T + t, rtol=1e-5)
