"""reductions.* against numpy: axes, keep_dims, default output types, ragged batches."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples

RNG = np.random.default_rng(0)
RAGGED = [RNG.integers(0, 200, s).astype(np.uint8) for s in [(4, 5, 3), (2, 7, 3), (4, 5, 3)]]


@pytest.mark.parametrize("name,ref,dtype", [
    ("sum", lambda x, a, k: x.sum(axis=a, keepdims=k, dtype=np.uint64), np.uint64),
    ("mean", lambda x, a, k: x.mean(axis=a, keepdims=k), np.float32),
    ("mean_square", lambda x, a, k: (x.astype(np.float64) ** 2).mean(axis=a, keepdims=k), np.float32),
    ("rms", lambda x, a, k: np.sqrt((x.astype(np.float64) ** 2).mean(axis=a, keepdims=k)), np.float32),
    ("min", lambda x, a, k: x.min(axis=a, keepdims=k), np.uint8),
    ("max", lambda x, a, k: x.max(axis=a, keepdims=k), np.uint8)])
@pytest.mark.parametrize("axes,keep", [(None, False), ((0, 1), False), ((2,), True), ((-1, 0), False)])
def test_reductions_match_numpy(name, ref, dtype, axes, keep):
    op = getattr(fn.reductions, name)
    out, = run_es(lambda x: op(x, axes=axes, keep_dims=keep), RAGGED, layouts=["HWC"])
    for g, x in zip(samples(out), RAGGED):
        want = ref(x, None if axes is None else tuple(a % 3 for a in axes), keep)
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, rtol=1e-5)


def test_axis_names_layout_and_dtype():
    out, = run_es(lambda x: fn.reductions.sum(x, axis_names="HW", dtype=types.FLOAT), RAGGED, layouts=["HWC"])
    assert out.layout() == "C" and out.at(0).dtype == np.float32
    np.testing.assert_allclose(out.at(1), RAGGED[1].sum(axis=(0, 1)), rtol=1e-6)
    x = [np.array([1.5, -2.0], np.float64)]
    out, = run_es(lambda d: fn.reductions.mean(d), x)
    assert out.at(0).dtype == np.float64 and out.at(0).shape == ()


@pytest.mark.parametrize("ddof", [0, 1])
def test_variance_and_std_dev_take_the_mean(ddof):
    def g(x):
        m = fn.reductions.mean(x, axes=(0, 1), keep_dims=True)
        return (fn.reductions.variance(x, m, axes=(0, 1), ddof=ddof),
                fn.reductions.std_dev(x, fn.reductions.mean(x, axes=(0, 1)), axes=(0, 1), ddof=ddof))

    var, std = run_es(g, RAGGED, layouts=["HWC"])
    for v, s, x in zip(samples(var), samples(std), RAGGED):
        np.testing.assert_allclose(v, x.astype(np.float64).var(axis=(0, 1), ddof=ddof), rtol=1e-5)
        np.testing.assert_allclose(s, x.astype(np.float64).std(axis=(0, 1), ddof=ddof), rtol=1e-5)
