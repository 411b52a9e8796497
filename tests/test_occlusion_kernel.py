"""_engine.erase and _engine.grid_mask against numpy references."""
import numpy as np
import pytest
from kernel_batch import DTYPE_CODES, POOL, pack, unpack

from penstock import _engine


def run_erase(samples, boxes_per_sample, fill):
    src, shapes, offs = pack(samples)
    dst = np.zeros_like(src)
    boxes = np.array([b for bs in boxes_per_sample for b in bs], np.int64).reshape(-1, 2 * samples[0].ndim)
    box_offs = np.concatenate([[0], np.cumsum([len(b) for b in boxes_per_sample])]).astype(np.int64)
    _engine.erase(POOL, src, shapes, offs, DTYPE_CODES[src.dtype], dst, offs, boxes, box_offs,
                  np.array(fill, np.float32))
    return unpack(dst, shapes, offs)


def test_erase_boxes_with_per_channel_fill_and_clipping():
    rng = np.random.default_rng(0)
    a = rng.integers(1, 256, (10, 12, 3)).astype(np.uint8)
    b = rng.integers(1, 256, (5, 4, 3)).astype(np.uint8)
    boxes = [[[2, 3, 0, 5, 7, 3], [8, -4, 0, 20, 2, 3]], []]  # (y0, x0, c0, y1, x1, c1)
    out = run_erase([a, b], boxes, [10, 20, 300])
    ref = a.copy()
    ref[2:5, 3:7] = [10, 20, 255]
    ref[8:10, 0:2] = [10, 20, 255]
    np.testing.assert_array_equal(out[0], ref)
    np.testing.assert_array_equal(out[1], b)


def test_erase_one_fill_value_float_and_channel_subset():
    img = np.ones((4, 4, 3), np.float32)
    out = run_erase([img], [[[0, 0, 1, 4, 2, 2]]], [-0.5])[0]
    ref = img.copy()
    ref[:, :2, 1] = -0.5
    np.testing.assert_array_equal(out, ref)


def test_erase_in_place_and_fill_count_mismatch():
    img = np.full((3, 3, 2), 7, np.int16)
    src, shapes, offs = pack([img])
    _engine.erase(POOL, src, shapes, offs, DTYPE_CODES[src.dtype], src, offs,
                  np.array([[1, 1, 0, 2, 2, 2]], np.int64), np.array([0, 1], np.int64),
                  np.array([0], np.float32))
    assert src.reshape(3, 3, 2)[1, 1].tolist() == [0, 0] and src.sum() == 7 * 16
    with pytest.raises(_engine.SampleError):
        run_erase([img], [[]], [1, 2, 3])


def grid_mask_reference(img, tile, ratio, angle, sx, sy):
    h, w = img.shape[:2]
    y, x = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")
    u = (x * np.cos(angle) - y * np.sin(angle) - sx) / tile
    v = (x * np.sin(angle) + y * np.cos(angle) - sy) / tile
    keep = (u - np.floor(u) >= ratio) | (v - np.floor(v) >= ratio)
    return img * keep[..., None].astype(img.dtype), u, v


@pytest.mark.parametrize("params", [(100, 0.5, 0.0, 0, 0), (10, 0.3, 0.0, 3, 7),
                                    (16, 0.6, 0.7, -5, 2.5), (7, 0.5, -2.0, 0, 0)])
def test_grid_mask_matches_formula(params):
    rng = np.random.default_rng(1)
    img = rng.integers(1, 256, (40, 57, 3)).astype(np.uint8)
    src, shapes, offs = pack([img])
    dst = np.zeros_like(src)
    _engine.grid_mask(POOL, src, shapes, offs, 0, dst, offs, np.array([params], np.float32))
    out = dst.reshape(img.shape)
    ref, u, v = grid_mask_reference(img, *params)
    # float32 vs float64 can only disagree within a rounding error of a square's edge
    near_edge = np.minimum.reduce([np.abs(t - np.round(t)) for t in
                                   (u, v, u - params[1], v - params[1])]) < 1e-4
    assert ((out == ref).all(axis=2) | near_edge).all()
    assert (out == 0).any() and (out != 0).any()


def test_grid_mask_default_tile_zeroes_top_left_quarter_square():
    img = np.full((120, 120, 1), 5, np.uint8)
    src, shapes, offs = pack([img])
    dst = np.zeros_like(src)
    _engine.grid_mask(POOL, src, shapes, offs, 0, dst, offs, np.array([[100, 0.5, 0, 0, 0]], np.float32))
    out = dst.reshape(img.shape)[..., 0]
    assert (out[:50, :50] == 0).all() and (out[50:100, :] == 5).all() and (out[:, 50:100] == 5).all()
    assert (out[100:, 100:] == 0).all()
