"""noise.*: statistics, value sets and saturation, checked with numpy."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es, samples


def _img(seed=0, shape=(64, 64, 3), dtype=np.uint8):
    return np.random.default_rng(seed).integers(40, 200, shape).astype(dtype)


def test_gaussian_statistics_and_determinism():
    x = [np.zeros((200, 200), np.float32), np.full((100, 50), 10, np.float32)]
    out, = run_es(lambda d: fn.noise.gaussian(d, mean=1.0, stddev=2.0, seed=3), x)
    for g, s in zip(samples(out), x):
        d = g - s
        assert abs(d.mean() - 1.0) < 0.05 and abs(d.std() - 2.0) < 0.05
    again, = run_es(lambda d: fn.noise.gaussian(d, mean=1.0, stddev=2.0, seed=3), x)
    np.testing.assert_array_equal(out.at(0), again.at(0))


def test_gaussian_saturates_integers():
    x = [np.full((100, 100), 250, np.uint8)]
    out, = run_es(lambda d: fn.noise.gaussian(d, stddev=20.0, seed=1), x)
    g = out.at(0)
    assert g.dtype == np.uint8 and g.max() == 255 and (g == 255).mean() > 0.3


@pytest.mark.parametrize("value", [10, 100])   # Poisson means 2.5 and 25 (both samplers)
def test_shot_noise_mean_and_variance(value):
    x = [np.full((300, 300), value, np.uint8)]
    out, = run_es(lambda d: fn.noise.shot(d, factor=4.0, seed=2), x)
    g = out.at(0).astype(np.float64)
    # Poisson(value / 4) * 4: mean value, variance 4 * value, values multiples of 4
    assert abs(g.mean() - value) < 0.01 * value + 0.1 and abs(g.var() - 4 * value) < 0.05 * 4 * value
    assert (g % 4 == 0).all()
    lam = value / 4   # the frequencies of small counts follow the Poisson law
    for k in range(3):
        p = np.exp(-lam) * lam ** k / np.prod(np.arange(1, k + 1))
        assert abs((g == 4 * k).mean() - p) < 0.005


def test_salt_and_pepper_per_pixel_and_per_channel():
    x = [_img()]
    out, = run_es(lambda d: fn.noise.salt_and_pepper(d, prob=0.3, salt_vs_pepper=0.25, seed=4), x,
                  layouts=["HWC"])
    g, s = out.at(0), x[0]
    changed = (g != s).any(-1)
    assert abs(changed.mean() - 0.3) < 0.03
    px = g[changed]
    assert ((px == 255).all(-1) | (px == 0).all(-1)).all()        # whole pixels replaced
    assert abs((px[:, 0] == 255).mean() - 0.25) < 0.05
    np.testing.assert_array_equal(g[~changed], s[~changed])
    out, = run_es(lambda d: fn.noise.salt_and_pepper(d, prob=0.5, per_channel=True, salt_val=7, pepper_val=3,
                                                     seed=4), x, layouts=["HWC"])
    g = out.at(0)
    changed = g != s
    assert set(np.unique(g[changed]).tolist()) <= {3, 7}
    assert (changed.any(-1) & ~changed.all(-1)).any()               # channels drawn separately


def test_types_are_kept():
    for dtype in (np.float16, np.int16, np.float64):
        x = [np.zeros((50, 40), dtype)]
        out, = run_es(lambda d: fn.noise.gaussian(d, stddev=3.0, seed=7), x)
        g = out.at(0)
        assert g.dtype == dtype and abs(float(g.astype(np.float64).std()) - 3.0) < 0.2


def test_gaussian_negative_stddev_flips_the_noise():
    x = [np.zeros((200, 200), np.float32)]
    pos, = run_es(lambda d: fn.noise.gaussian(d, stddev=2.0, seed=3), x)
    neg, = run_es(lambda d: fn.noise.gaussian(d, stddev=-2.0, seed=3), x)
    np.testing.assert_allclose(neg.at(0), -pos.at(0), atol=1e-6)


@pytest.mark.parametrize("factor", [0.0, -1.0])
def test_shot_noise_with_a_factor_not_above_zero_gives_zeros(factor):
    for x in (_img(), _img(1).astype(np.float32)):
        out, = run_es(lambda d: fn.noise.shot(d, factor=factor, seed=2), [x])
        assert out.at(0).dtype == x.dtype and (out.at(0) == 0).all()


@pytest.mark.parametrize("kwargs", [{"prob": -0.5}, {"prob": 1.5}, {"salt_vs_pepper": -1.0}])
def test_salt_and_pepper_probabilities_outside_unit_range_raise(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(RuntimeError, match=f"{name} must be within"):
        run_es(lambda d: fn.noise.salt_and_pepper(d, **kwargs), [_img()])
