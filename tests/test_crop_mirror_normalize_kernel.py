"""_engine.crop_mirror_normalize against the numpy formula
out = convert((in - mean) / std * scale + shift), with padded crop, mirror, layout and pad_output
(an extra channel holding the last fill value)."""
import numpy as np
import pytest

from penstock import _engine

POOL = _engine.ThreadPool(2)
CODES = {np.dtype(np.uint8): 0, np.dtype(np.int8): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
         np.dtype(np.uint16): 1, np.dtype(np.float16): 8, np.dtype(np.float32): 9,
         np.dtype(np.float64): 10}


def convert(x, dtype):
    if np.dtype(dtype).kind == 'f':
        return x.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)


def ref_cmn(img, anchor, window, mirror, mean, std, scale, shift, fill, dtype, chw, pad):
    """img [..., H, W, C]; anchor/window over the non-channel dims; fill: C values (C + 1 with pad)."""
    c = img.shape[-1]
    out = np.empty(tuple(window) + (c,), np.float64)
    out[...] = np.asarray(fill, np.float64)[:c]
    src, dst = [], []
    for a, n, e in zip(anchor, window, img.shape[:-1]):
        lo, hi = max(a, 0), min(a + n, e)
        src.append(slice(lo, max(lo, hi)))
        dst.append(slice(lo - a, lo - a + max(0, hi - lo)))
    norm = (img.astype(np.float64) - mean) / std * scale + shift
    out[tuple(dst)] = norm[tuple(src)]
    if mirror:
        out = out[..., ::-1, :]
    if pad:
        out = np.concatenate([out, np.full(out.shape[:-1] + (1,), fill[c], np.float64)], axis=-1)
    out = convert(out, dtype)
    if chw:
        out = np.moveaxis(out, -1, -3)
    return np.ascontiguousarray(out)


def run(imgs, anchors, windows, mirror, mean, std, scale=1.0, shift=0.0, fill=None, dtype=np.float32,
        chw=True, pad=False):
    n, nd, c = len(imgs), imgs[0].ndim, imgs[0].shape[-1]
    src = np.concatenate([i.ravel() for i in imgs])
    src_shapes = np.array([i.shape for i in imgs], np.int64)
    src_offsets = np.cumsum([0] + [i.size for i in imgs])[:-1].astype(np.int64)
    cout = c + pad
    cdim = nd - 3 if chw else nd - 1
    dst_shapes = np.array([list(w[:cdim]) + [cout] + list(w[cdim:]) for w in windows], np.int64)
    vols = dst_shapes.prod(axis=1)
    dst_offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    dst = np.empty(int(vols.sum()), dtype)
    fill = np.zeros(cout, np.float32) if fill is None else np.array(fill, np.float32)
    _engine.crop_mirror_normalize(
        POOL, src, src_shapes, src_offsets, CODES[imgs[0].dtype], dst, dst_shapes, dst_offsets, CODES[np.dtype(dtype)],
        np.array(anchors, np.int64), np.array(mirror, np.uint8),
        np.broadcast_to(np.asarray(mean, np.float32), (n, c)).copy(),
        np.broadcast_to(np.asarray(std, np.float32), (n, c)).copy(), scale, shift, fill, cdim, pad)
    return [dst[o:o + v].reshape(s) for o, v, s in zip(dst_offsets, vols, dst_shapes)]


IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.mark.parametrize("chw", [True, False])
@pytest.mark.parametrize("mirror", [0, 1])
def test_imagenet_float(chw, mirror):
    rng = np.random.default_rng(mirror)
    imgs = [rng.integers(0, 256, (30, 40, 3), dtype=np.uint8), rng.integers(0, 256, (25, 24, 3), dtype=np.uint8)]
    anchors, windows = [(3, 5), (0, 0)], [(20, 20), (25, 24)]
    outs = run(imgs, anchors, windows, [mirror, 1 - mirror], IMAGENET_MEAN, IMAGENET_STD, chw=chw)
    for img, a, w, m, out in zip(imgs, anchors, windows, [mirror, 1 - mirror], outs):
        ref = ref_cmn(img, a, w, m, IMAGENET_MEAN, IMAGENET_STD, 1, 0, [0, 0, 0], np.float32, chw, False)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_out_of_bounds_fill_and_pad_output():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (10, 10, 3), dtype=np.uint8)
    for mirror in (0, 1):
        out = run([img], [(-2, -1)], [(12, 14)], [mirror], [10, 20, 30], [2, 4, 8], scale=2, shift=1,
                  fill=[-7, 8, 9.5, 4.5], pad=True)[0]
        ref = ref_cmn(img, (-2, -1), (12, 14), mirror, [10, 20, 30], [2, 4, 8], 2, 1, [-7, 8, 9.5, 4.5],
                      np.float32, True, True)
        assert out.shape == (4, 12, 14)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float16])
def test_output_types_round_and_saturate(dtype):
    rng = np.random.default_rng(4)
    img = rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)
    out = run([img], [(0, 0)], [(8, 9)], [0], [100.25, 0, 3], [0.5, 1, 2], shift=0.5, dtype=dtype, chw=False)[0]
    ref = ref_cmn(img, (0, 0), (8, 9), 0, [100.25, 0, 3], [0.5, 1, 2], 1, 0.5, [0] * 3, dtype, False, False)
    if dtype == np.float16:
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=1e-3)
    else:
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("chw", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_pad_output_channel_holds_the_last_fill_value_everywhere(chw, dtype):
    img = np.random.default_rng(8).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    fill = [1, 2, 3, 42]
    out = run([img], [(-1, 2)], [(8, 6)], [1], [5, 6, 7], [2, 2, 2], fill=fill, dtype=dtype, chw=chw, pad=True)[0]
    np.testing.assert_allclose(out, ref_cmn(img, (-1, 2), (8, 6), 1, [5, 6, 7], [2, 2, 2], 1, 0, fill, dtype, chw,
                                            True), rtol=1e-5, atol=1e-4)
    assert ((out[3] if chw else out[..., 3]) == 42).all()  # inside the input as well as outside


def test_fill_values_need_one_per_output_channel():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(_engine.SampleError, match="fill_values"):
        run([img], [(0, 0)], [(2, 2)], [0], [0, 0, 0], [1, 1, 1], fill=[0, 0, 0], pad=True)
    with pytest.raises(_engine.SampleError, match="fill_values"):
        run([img], [(0, 0)], [(2, 2)], [0], [0, 0, 0], [1, 1, 1], fill=[0, 0, 0, 0], pad=False)


def test_int8_saturates_at_127():
    img = np.full((2, 2, 1), 255, np.uint8)
    out = run([img], [(0, 0)], [(2, 2)], [0], [0], [1], dtype=np.int8)[0]
    assert (out == 127).all()


def test_float_input_and_frames():
    rng = np.random.default_rng(5)
    seq = rng.uniform(-1, 1, (3, 6, 7, 2)).astype(np.float32)  # FHWC, frames not cropped
    out = run([seq], [(0, 1, 2)], [(3, 4, 5)], [1], [0.1, -0.2], [0.5, 2.0])[0]  # -> FCHW
    ref = ref_cmn(seq, (0, 1, 2), (3, 4, 5), 1, [0.1, -0.2], [0.5, 2.0], 1, 0, [0, 0], np.float32, True, False)
    assert out.shape == (3, 2, 4, 5)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_per_sample_mean_std():
    rng = np.random.default_rng(6)
    imgs = [rng.integers(0, 256, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
    means = rng.uniform(0, 255, (3, 3)).astype(np.float32)
    stds = rng.uniform(1, 50, (3, 3)).astype(np.float32)
    outs = run(imgs, [(0, 0)] * 3, [(4, 5)] * 3, [0, 1, 0], means, stds)
    for img, m, s, mir, out in zip(imgs, means, stds, [0, 1, 0], outs):
        ref = ref_cmn(img, (0, 0), (4, 5), mir, m, s, 1, 0, [0] * 3, np.float32, True, False)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def test_errors():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(_engine.SampleError):
        run([img], [(0, 0)], [(2, 2)], [0], [0, 0, 0], [1, 0, 1])
    with pytest.raises(ValueError):
        run([img.astype(np.float64)], [(0, 0)], [(2, 2)], [0], [0, 0, 0], [1, 1, 1])
