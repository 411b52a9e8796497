"""segmentation.random_mask_pixel: drawn pixels satisfy the foreground condition; coverage."""
import numpy as np

from penstock import fn

from _util import run_es, samples


def _masks():
    a = np.zeros((20, 30), np.uint8)
    a[5:8, 10:12] = 3
    a[15, 25] = 7
    b = np.zeros((9, 4), np.uint8)            # no foreground at all
    c = np.zeros((6, 6, 2), np.uint8)
    c[2, 3, 1] = 5
    return [a, b, c[..., 1]]


def test_foreground_pixels_by_value_and_threshold():
    masks = _masks()
    for kw, ok in (({"value": 3}, lambda m, p: m[p] == 3), ({"threshold": 4}, lambda m, p: m[p] > 4)):
        for seed in range(5):
            out, = run_es(lambda m: fn.segmentation.random_mask_pixel(m, foreground=1, seed=seed, **kw), masks)
            for g, m in zip(samples(out), masks):
                assert g.dtype == np.int64 and g.shape == (2,)
                p = tuple(g.tolist())
                assert all(0 <= v < s for v, s in zip(p, m.shape))
                if (kw.get("value") is not None and (m == kw["value"]).any()) or \
                        (kw.get("threshold") is not None and (m > kw["threshold"]).any()):
                    assert ok(m, p)


def test_background_draw_covers_the_mask():
    m = [np.zeros((3, 4), np.uint8)] * 64
    out, = run_es(lambda x: fn.segmentation.random_mask_pixel(x, seed=1), m)
    seen = {tuple(g.tolist()) for g in samples(out)}
    assert len(seen) > 8 and all(0 <= r < 3 and 0 <= c < 4 for r, c in seen)
