"""paste in pipelines against a numpy canvas."""
import numpy as np
import pytest
from pipeline_run import run_once

from penstock import fn


def test_paste_canvas_position_and_fill():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, s).astype(np.uint8) for s in [(4, 6, 3), (5, 3, 3)]]
    ratios = [np.float32(2.0), np.float32(1.5)]
    outs = run_once(lambda x, r: fn.paste(x, ratio=r, paste_x=0.25, paste_y=1.0, fill_value=[1, 2, 3],
                                          min_canvas_size=7), imgs, ratios)[0]
    for img, r, out in zip(imgs, ratios, outs):
        h, w = img.shape[:2]
        ch, cw = max(int(h * float(r)), 7), max(int(w * float(r)), 7)
        y0, x0 = int(1.0 * (ch - h)), int(0.25 * (cw - w))
        ref = np.empty((ch, cw, 3), np.uint8)
        ref[...] = [1, 2, 3]
        ref[y0:y0 + h, x0:x0 + w] = img
        np.testing.assert_array_equal(out, ref)


def test_one_fill_value_fills_every_channel():
    img = np.full((4, 4, 3), 200, np.uint8)
    o = run_once(lambda x: fn.paste(x, ratio=2.0, fill_value=7, paste_x=0, paste_y=0), [img])[0][0]
    assert o.shape == (8, 8, 3)
    np.testing.assert_array_equal(o[:4, :4], img)
    assert (o[4:, :] == 7).all() and (o[:, 4:] == 7).all()


def test_zero_n_channels_takes_the_images_channels():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (3, 2, c)).astype(np.uint8) for c in (4, 4)]
    outs = run_once(lambda x: fn.paste(x, ratio=2.0, fill_value=[5, 6, 7, 8], n_channels=0, paste_x=1, paste_y=0),
                    imgs)[0]
    for img, out in zip(imgs, outs):
        ref = np.empty((6, 4, 4), np.uint8)
        ref[...] = [5, 6, 7, 8]
        ref[0:3, 2:4] = img
        np.testing.assert_array_equal(out, ref)


def test_n_channels_must_match_the_images_and_not_be_negative():
    img = np.zeros((2, 2, 3), np.uint8)
    with pytest.raises(RuntimeError, match="paste.*3 channels.*n_channels=0"):
        run_once(lambda x: fn.paste(x, ratio=2.0, fill_value=0, n_channels=0),
                 [img, np.zeros((2, 2, 1), np.uint8)])
    with pytest.raises(RuntimeError, match="paste.*4 channels"):
        run_once(lambda x: fn.paste(x, ratio=2.0, fill_value=0, n_channels=4), [img])
    with pytest.raises(ValueError, match="n_channels"):
        run_once(lambda x: fn.paste(x, ratio=2.0, fill_value=0, n_channels=-1), [img])
