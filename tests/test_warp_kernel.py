"""_engine.warp_affine against a numpy warp (pixel centres at +0.5, per-tap border handling)."""
import numpy as np
import pytest
from kernel_batch import DTYPE_CODES, POOL, empty_like_shapes, pack, round_sat, unpack

from penstock import _engine


def reference(img, m, out_hw, linear, fill):
    """img (H, W, C); m maps output (x + .5, y + .5) to input continuous coordinates."""
    m = m.astype(np.float32).astype(np.float64)
    H, W, C = img.shape
    ho, wo = out_hw
    ys, xs = np.meshgrid(np.arange(ho) + 0.5, np.arange(wo) + 0.5, indexing="ij")
    sx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    sy = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]
    src = img.astype(np.float64)

    def taps(yy, xx):
        inside = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
        v = src[np.clip(yy, 0, H - 1), np.clip(xx, 0, W - 1)]
        if fill is not None:
            v[~inside] = fill
        return v

    if not linear:
        return round_sat(taps(np.floor(sy).astype(int), np.floor(sx).astype(int)), img.dtype)
    sx, sy = sx - 0.5, sy - 0.5
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]
    top = taps(y0, x0) * (1 - fx) + taps(y0, x0 + 1) * fx
    bottom = taps(y0 + 1, x0) * (1 - fx) + taps(y0 + 1, x0 + 1) * fx
    return round_sat(top * (1 - fy) + bottom * fy, img.dtype)


def run(samples, mats, out_hws, interp, fill=None):
    """samples (H, W, C) or (F, H, W, C)."""
    seqs = [s if s.ndim == 4 else s[None] for s in samples]
    src, shapes, offs = pack(seqs)
    out_shapes = shapes.copy()
    out_shapes[:, 1:3] = out_hws
    dst, dshapes, doffs = empty_like_shapes(out_shapes, src.dtype)
    _engine.warp_affine(POOL, src, shapes, offs, dst, dshapes, doffs, DTYPE_CODES[src.dtype],
                        np.ascontiguousarray(mats, np.float32), interp, fill)
    return [o if s.ndim == 4 else o[0] for s, o in zip(samples, unpack(dst, dshapes, doffs))]


def test_verified_shift_and_scale():
    row = np.array([0, 10, 20, 30], np.float32).reshape(1, 4, 1)
    shift = np.array([[1, 0, 1], [0, 1, 0]], np.float32)
    out = run([row], shift[None], [(1, 4)], 1)[0]
    assert out.ravel().tolist() == [10, 20, 30, 30]  # out = in(x + 1), last column replicated
    ramp = np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    half = np.array([[0.5, 0, 0], [0, 1, 0]], np.float32)
    out = run([ramp], half[None], [(1, 4)], 1)[0]
    np.testing.assert_allclose(out.ravel(), [0, 0.25, 0.75, 1.25])


@pytest.mark.parametrize("interp", [0, 1])
@pytest.mark.parametrize("fill", [None, 50.0])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_random_affine_matches_numpy(interp, fill, dtype):
    rng = np.random.default_rng(4)
    samples, mats, hws = [], [], []
    for h, w, c in [(17, 23, 3), (8, 5, 1), (30, 30, 2)]:
        samples.append(rng.integers(0, 200, (h, w, c)).astype(dtype))
        a = rng.uniform(-np.pi, np.pi)
        s = rng.uniform(0.6, 1.7)
        mats.append([[s * np.cos(a), -s * np.sin(a), rng.uniform(-5, w)],
                     [s * np.sin(a), s * np.cos(a), rng.uniform(-5, h)]])
        hws.append((int(rng.integers(1, 40)), int(rng.integers(1, 40))))
    outs = run(samples, np.array(mats), hws, interp, fill)
    for img, m, hw, o in zip(samples, np.array(mats, np.float32), hws, outs):
        ref = reference(img, m, hw, interp == 1, fill)
        assert o.shape == ref.shape
        diff = np.abs(o.astype(np.float64) - ref.astype(np.float64))
        if np.dtype(dtype).kind == "f":
            assert diff.max() < 1e-2
        else:  # a float rounding at a tie or a floor() at an exact edge may differ
            assert np.mean(diff == 0) > 0.98 and (interp == 0 or diff.max() <= 1)


def test_sequence_frames_share_the_matrix():
    rng = np.random.default_rng(5)
    seq = rng.integers(0, 256, (3, 6, 7, 3)).astype(np.uint8)
    m = np.array([[0.8, 0.2, 1.0], [-0.2, 0.8, 2.0]], np.float32)
    out = run([seq], m[None], [(5, 9)], 1, 0.0)[0]
    for f in range(3):
        ref = reference(seq[f], m, (5, 9), True, 0.0)
        assert np.abs(out[f].astype(int) - ref.astype(int)).max() <= 1


def test_nan_and_huge_matrices_do_not_crash():
    img = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    for m in ([[np.nan, 0, 0], [0, 1, 0]], [[1e30, 0, -1e30], [0, 1e30, 0]]):
        for interp in (0, 1):
            out = run([img], np.array([m]), [(3, 3)], interp, 9.0)[0]
            assert out.shape == (3, 3, 3)


def test_output_channels_must_match():
    src, shapes, offs = pack([np.zeros((1, 2, 2, 3), np.uint8)])
    bad = shapes.copy()
    bad[0, 3] = 1
    dst, dshapes, doffs = empty_like_shapes(bad, np.uint8)
    with pytest.raises(_engine.SampleError):
        _engine.warp_affine(POOL, src, shapes, offs, dst, dshapes, doffs, 0,
                            np.zeros((1, 2, 3), np.float32), 1, None)
