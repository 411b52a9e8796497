"""water, sphere and jitter on the CPU against numpy references of their maps."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples

H, W = 30, 41
YY, XX = np.mgrid[0:H, 0:W].astype(np.float32)
RAMPS = [np.stack([XX, YY, np.full_like(XX, 7)], -1)] * 2  # channel 0: x, channel 1: y


def _bilinear_of_ramps(px, py, fill):
    """What bilinear sampling of RAMPS at (px, py) gives (pixel i spanning [i, i + 1))."""
    fx, fy = px - 0.5, py - 0.5
    x0, y0 = np.floor(fx), np.floor(fy)
    wx, wy = fx - x0, fy - y0
    out = np.zeros(px.shape + (2,), np.float64)
    for dy in (0, 1):
        for dx in (0, 1):
            xs, ys = x0 + dx, y0 + dy
            inside = (xs >= 0) & (ys >= 0) & (xs < W) & (ys < H)
            w = (wx if dx else 1 - wx) * (wy if dy else 1 - wy)
            out[..., 0] += w * np.where(inside, xs, fill)
            out[..., 1] += w * np.where(inside, ys, fill)
    return out


def test_water_reads_along_sine_waves():
    kw = dict(ampl_x=3.0, ampl_y=2.0, freq_x=0.3, freq_y=0.2, phase_x=1.0, phase_y=0.5)
    out, = run_es(lambda x: fn.water(x, interp_type=types.INTERP_LINEAR, fill_value=-5.0, **kw), RAMPS,
                  layouts=["HWC"])
    px = XX + 3.0 * np.sin(0.3 * YY + 1.0)
    py = YY + 2.0 * np.cos(0.2 * XX + 0.5)
    np.testing.assert_allclose(out.at(0)[..., :2], _bilinear_of_ramps(px, py, -5.0), atol=2e-3)
    nearest, = run_es(lambda x: fn.water(x, **kw), RAMPS, layouts=["HWC"])
    inside = (px >= 0) & (py >= 0) & (px < W) & (py < H)
    far_from_edges = np.abs(px - np.round(px)) > 1e-3
    np.testing.assert_array_equal(nearest.at(0)[..., 0][inside & far_from_edges],
                                  np.floor(px)[inside & far_from_edges])


def test_sphere_moves_points_radially():
    out, = run_es(lambda x: fn.sphere(x, interp_type=types.INTERP_LINEAR), RAMPS, layouts=["HWC"])
    cx, cy, r = W / 2, H / 2, max(W // 2, H // 2)
    u, v = XX + 0.5 - cx, YY + 0.5 - cy
    s = np.hypot(u, v) / r
    np.testing.assert_allclose(out.at(0)[..., :2], _bilinear_of_ramps(cx + s * u, cy + s * v, 0.0), atol=2e-3)


def test_mask_copies_the_sample_and_uint8_rounds():
    images = [np.random.default_rng(1).integers(0, 256, (H, W, 3), dtype=np.uint8)] * 2
    masks = [np.array(0, np.int32), np.array(1, np.int32)]
    out, = run_es(lambda x, m: fn.sphere(x, mask=m), images, masks, layouts=["HWC", None])
    np.testing.assert_array_equal(out.at(0), images[0])
    assert not np.array_equal(out.at(1), images[1])


def test_jitter_moves_pixels_by_at_most_half_the_degree():
    out, = run_es(lambda x: fn.jitter(x, nDegree=4, seed=3), RAMPS, layouts=["HWC"])
    o = out.at(0)
    moved = o[..., 2] == 7  # points that stayed inside the image
    dx, dy = o[..., 0] - XX, o[..., 1] - YY
    assert np.abs(dx[moved]).max() == 2 and np.abs(dy[moved]).max() == 2
    assert (dx[moved] == np.round(dx[moved])).all()
    assert len(np.unique(dx[moved])) == 5  # every offset of [-2, 2] is drawn
    again, = run_es(lambda x: fn.jitter(x, nDegree=4, seed=3), RAMPS, layouts=["HWC"])
    np.testing.assert_array_equal(again.at(0), o)  # the same seed draws the same offsets


@pytest.mark.parametrize("graph, message", [
    (lambda x: fn.water(x, interp_type=types.INTERP_CUBIC), "INTERP_NN and INTERP_LINEAR"),
    (lambda x: fn.sphere(fn.cast(x, dtype=types.INT16)), "UINT8 and FLOAT"),
])
def test_errors(graph, message):
    with pytest.raises(RuntimeError, match=message):
        run_es(graph, RAMPS, layouts=["HWC"])
