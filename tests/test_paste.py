"""paste and multi_paste in pipelines against numpy canvases."""
import numpy as np
import pytest
from pipeline_run import run_once

from penstock import fn, types

from _util import run_es, samples


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


def _regions(*per_sample, dtype=np.int32):
    return [np.array(r, dtype).reshape(-1, 2) for r in per_sample]


A = (np.arange(4 * 5) + 1).astype(np.uint8).reshape(4, 5, 1)
B = (np.arange(4 * 5) + 100).astype(np.uint8).reshape(4, 5, 1)


def test_multi_paste_with_in_ids_pastes_in_order():
    ids = [np.array([0, 1], np.int32), np.array([1], np.int32)]
    out_anchors = _regions([[0, 0], [1, 1]], [[1, 1]])
    shapes = _regions([[3, 3], [2, 2]], [[3, 3]])
    out, = run_es(lambda x, i, o, s: fn.multi_paste(x, in_ids=i, out_anchors=o, shapes=s, output_size=[5, 6],
                                                    dtype=types.FLOAT),
                  [A, B], ids, out_anchors, shapes, layouts=["HWC", None, None, None])
    expected = np.zeros((2, 5, 6, 1), np.float32)
    expected[0, :3, :3] = A[:3, :3]
    expected[0, 1:3, 1:3] = B[:2, :2]  # the later region covers the earlier one
    expected[1, 1:4, 1:4] = B[:3, :3]
    assert out.dtype == types.FLOAT
    for e, o in zip(expected, samples(out)):
        np.testing.assert_array_equal(o, e)


def test_multi_paste_of_several_inputs_and_relative_coordinates():
    out, = run_es(lambda x, y: fn.multi_paste(x, y), [A, B], [B, A], layouts=["HWC", "HWC"])
    np.testing.assert_array_equal(out.at(0), B)  # input 1 is pasted over input 0
    np.testing.assert_array_equal(out.at(1), A)
    rel = [np.array([[0.5, 0.5]], np.float32)] * 2
    out, = run_es(lambda x, i, a, s: fn.multi_paste(x, in_ids=i, in_anchors_rel=a, out_anchors_rel=a, shapes_rel=s),
                  [A, B], [np.array([1], np.int32)] * 2, rel, [np.array([[0.3, 0.5]], np.float32)] * 2,
                  layouts=["HWC", None, None, None])
    # anchors (4 * 0.5, 5 * 0.5) rounded down = (2, 2); shape (4 * 0.3, 5 * 0.5) rounded up = (2, 3)
    expected = np.zeros_like(A)
    expected[2:4, 2:5] = B[2:4, 2:5]
    np.testing.assert_array_equal(out.at(0), expected)


@pytest.mark.parametrize("kwargs, args, message", [
    ({}, [[np.array([5], np.int32)] * 2], "in_ids must be in"),
    ({"out_anchors": True}, [[np.array([1], np.int32)] * 2, _regions([[3, 3]], [[0, 0]])], "within output bounds"),
])
def test_multi_paste_errors(kwargs, args, message):
    def graph(x, i, *rest):
        extra = {"out_anchors": rest[0]} if kwargs else {}
        return fn.multi_paste(x, in_ids=i, **extra)
    with pytest.raises(RuntimeError, match=message):
        run_es(graph, [A, B], *args, layouts=["HWC"] + [None] * len(args))
