"""_engine.slice (crop / slice / pad / flip) against numpy: np.pad + slicing + np.flip."""
import numpy as np
import pytest

from penstock import _engine

POOL = _engine.ThreadPool(2)


def ref_slice(x, anchor, shape, flips, fill, channel_dim):
    """Window [anchor, anchor+shape) of x with outside positions = fill[out channel index]."""
    fill = np.atleast_1d(np.asarray(fill, x.dtype))
    out = np.empty(shape, x.dtype)
    if channel_dim < 0 or fill.size == 1:
        out[...] = fill[0]
    else:
        bshape = [1] * x.ndim
        bshape[channel_dim] = shape[channel_dim]
        out[...] = fill[:shape[channel_dim]].reshape(bshape)
    src_idx, dst_idx = [], []
    for a, n, e in zip(anchor, shape, x.shape):
        lo, hi = max(a, 0), min(a + n, e)
        src_idx.append(slice(lo, max(lo, hi)))
        dst_idx.append(slice(lo - a, lo - a + max(0, hi - lo)))
    out[tuple(dst_idx)] = x[tuple(src_idx)]
    axes = [d for d, f in enumerate(flips) if f]
    if axes:  # flipping the window = reading it backwards, fill included
        out = np.flip(out, axis=axes)
        if channel_dim in axes:  # fill is chosen by output position, not source: redo it
            raise ValueError("reference does not model flipped channel axes")
    return np.ascontiguousarray(out)


def run(samples, anchors, shapes, flips=None, fill=(0,), channel_dim=-1):
    nd = samples[0].ndim
    src = np.concatenate([s.ravel() for s in samples])
    src_shapes = np.array([s.shape for s in samples], np.int64)
    src_offsets = np.cumsum([0] + [s.size for s in samples])[:-1].astype(np.int64)
    dst_shapes = np.array(shapes, np.int64).reshape(len(samples), nd)
    vols = dst_shapes.prod(axis=1)
    dst_offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    dst = np.empty(int(vols.sum()), samples[0].dtype)
    flips = np.zeros((len(samples), nd), np.uint8) if flips is None else np.array(flips, np.uint8)
    _engine.slice(POOL, src, src_shapes, src_offsets, dst, dst_shapes, dst_offsets,
                  np.array(anchors, np.int64).reshape(len(samples), nd), flips,
                  np.tile(np.array(fill, samples[0].dtype), (len(samples), 1)), channel_dim)
    return [dst[o:o + v].reshape(s) for o, v, s in zip(dst_offsets, vols, dst_shapes)]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_crop_inside(dtype):
    img = (np.arange(10 * 12 * 3) % 251).astype(dtype).reshape(10, 12, 3)
    out = run([img], [(2, 3, 0)], [(5, 4, 3)])[0]
    np.testing.assert_array_equal(out, img[2:7, 3:7])


def test_pad_outside_with_channel_fill():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (6, 7, 3), dtype=np.uint8), rng.integers(0, 255, (4, 9, 3), dtype=np.uint8)]
    anchors = [(-2, -1, 0), (1, 5, 0)]
    shapes = [(10, 12, 3), (5, 8, 3)]
    outs = run(imgs, anchors, shapes, fill=(7, 8, 9), channel_dim=2)
    for img, a, s, out in zip(imgs, anchors, shapes, outs):
        np.testing.assert_array_equal(out, ref_slice(img, a, s, [0, 0, 0], (7, 8, 9), 2))


def test_window_entirely_outside():
    img = np.ones((4, 4, 1), np.float32)
    out = run([img], [(10, 10, 0)], [(2, 3, 1)], fill=(-1.5,))[0]
    np.testing.assert_array_equal(out, np.full((2, 3, 1), -1.5, np.float32))


def test_channel_first_fill():
    img = np.arange(3 * 4 * 5, dtype=np.int32).reshape(3, 4, 5)  # CHW
    out = run([img], [(0, -1, 2)], [(3, 6, 5)], fill=(100, 200, 300), channel_dim=0)[0]
    np.testing.assert_array_equal(out, ref_slice(img, (0, -1, 2), (3, 6, 5), [0] * 3, (100, 200, 300), 0))


def test_pad_channels():
    img = np.arange(2 * 3 * 2, dtype=np.uint8).reshape(2, 3, 2)
    out = run([img], [(0, 0, 0)], [(2, 3, 4)], fill=(1, 2, 3, 4), channel_dim=2)[0]
    np.testing.assert_array_equal(out, ref_slice(img, (0, 0, 0), (2, 3, 4), [0] * 3, (1, 2, 3, 4), 2))


@pytest.mark.parametrize("flips", [(0, 1, 0), (1, 0, 0), (1, 1, 0)])
def test_flip_full_window(flips):
    img = np.random.default_rng(1).integers(0, 255, (5, 6, 3), dtype=np.uint8)
    out = run([img], [(0, 0, 0)], [img.shape], flips=[flips])[0]
    np.testing.assert_array_equal(out, np.flip(img, axis=[d for d, f in enumerate(flips) if f]))


def test_flip_with_padding():
    img = np.random.default_rng(2).uniform(size=(5, 6, 2)).astype(np.float32)
    out = run([img], [(-1, 2, 0)], [(8, 7, 2)], flips=[(1, 1, 0)], fill=(5, 6), channel_dim=2)[0]
    np.testing.assert_array_equal(out, ref_slice(img, (-1, 2, 0), (8, 7, 2), (1, 1, 0), (5, 6), 2))


def test_flip_depthwise_volume_and_1d():
    vol = np.arange(4 * 3 * 2 * 1, dtype=np.float32).reshape(4, 3, 2, 1)
    out = run([vol], [(0, 0, 0, 0)], [vol.shape], flips=[(1, 0, 0, 0)])[0]
    np.testing.assert_array_equal(out, vol[::-1])
    x = np.arange(10, dtype=np.int64)
    np.testing.assert_array_equal(run([x], [(-3,)], [(5,)], fill=(-1,))[0], [-1, -1, -1, 0, 1])
    np.testing.assert_array_equal(run([x], [(8,)], [(4,)], flips=[(1,)], fill=(-1,))[0], [-1, -1, 9, 8])


def test_empty_output_and_many_samples():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 255, (rng.integers(1, 20), rng.integers(1, 20), 3), dtype=np.uint8) for _ in range(20)]
    anchors = [(int(rng.integers(-5, 5)), int(rng.integers(-5, 5)), 0) for _ in imgs]
    shapes = [(int(rng.integers(0, 25)), int(rng.integers(0, 25)), 3) for _ in imgs]
    outs = run(imgs, anchors, shapes, fill=(1, 2, 3), channel_dim=2)
    for img, a, s, out in zip(imgs, anchors, shapes, outs):
        np.testing.assert_array_equal(out, ref_slice(img, a, s, [0] * 3, (1, 2, 3), 2))


def test_per_sample_fill():
    imgs = [np.zeros((2, 2), np.int16), np.zeros((3, 1), np.int16)]
    src = np.concatenate([i.ravel() for i in imgs])
    dst = np.empty(18, np.int16)
    _engine.slice(POOL, src, np.array([[2, 2], [3, 1]], np.int64), np.array([0, 4], np.int64), dst,
                  np.array([[3, 3], [3, 3]], np.int64), np.array([0, 9], np.int64), np.zeros((2, 2), np.int64),
                  np.zeros((2, 2), np.uint8), np.array([[5], [-6]], np.int16), -1)
    np.testing.assert_array_equal(dst[:9].reshape(3, 3), [[0, 0, 5], [0, 0, 5], [5, 5, 5]])
    np.testing.assert_array_equal(dst[9:].reshape(3, 3), [[0, -6, -6], [0, -6, -6], [0, -6, -6]])


def test_bad_fill_count():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(_engine.SampleError):
        run([img], [(0, 0, 0)], [(2, 2, 3)], fill=(1, 2), channel_dim=2)
