"""_engine.color_matrix against numpy references (np.einsum + round-half-away + saturate)."""
import numpy as np
import pytest
from kernel_batch import DTYPE_CODES, POOL, empty_like_shapes, pack, round_sat, unpack

from penstock import _engine


def run(samples, matrices, out_dtype):
    src, shapes, offs = pack(samples)
    out_shapes = shapes.copy()
    out_shapes[:, -1] = matrices.shape[1]
    dst, dshapes, doffs = empty_like_shapes(out_shapes, out_dtype)
    _engine.color_matrix(POOL, src, shapes, offs, DTYPE_CODES[src.dtype], dst, dshapes, doffs,
                         DTYPE_CODES[np.dtype(out_dtype)], np.ascontiguousarray(matrices, np.float32))
    return unpack(dst, dshapes, doffs)


def reference(sample, matrix, out_dtype):
    m = matrix.astype(np.float32)
    acc = np.einsum("oc,...c->...o", m[:, :-1], sample.astype(np.float32)) + m[:, -1]
    return round_sat(acc, out_dtype)


def brightness_contrast_matrix(brightness=1.0, shift=0.0, contrast=1.0, center=128.0, vmax=255.0):
    # out = shift*max + brightness*(center + contrast*(in - center))  (spec §4)
    m = np.zeros((3, 4))
    m[:, :3] = np.eye(3) * brightness * contrast
    m[:, 3] = shift * vmax + brightness * center * (1 - contrast)
    return m


@pytest.mark.parametrize("kwargs, expected", [
    (dict(brightness=1.5), [0, 96, 192, 255]),
    (dict(contrast=2.0), [0, 0, 128, 255]),
    (dict(shift=0.1), [26, 90, 154, 255]),
])
def test_brightness_contrast_verified_values(kwargs, expected):
    img = np.repeat(np.array([0, 64, 128, 255], np.uint8)[None, :, None], 3, axis=2)
    out = run([img], brightness_contrast_matrix(**kwargs)[None], np.uint8)[0]
    for c in range(3):
        assert out[0, :, c].tolist() == expected


@pytest.mark.parametrize("in_dtype, out_dtype", [
    (np.uint8, np.uint8), (np.uint8, np.float32), (np.float32, np.uint8),
    (np.int16, np.int16), (np.uint16, np.int32), (np.float32, np.float32)])
def test_random_matrices_match_einsum(in_dtype, out_dtype):
    rng = np.random.default_rng(1)
    samples = []
    for h, w in [(5, 7), (1, 1), (13, 4)]:
        if np.dtype(in_dtype).kind == "f":
            samples.append(rng.uniform(-2, 300, (h, w, 3)).astype(in_dtype))
        else:
            info = np.iinfo(in_dtype)
            samples.append(rng.integers(max(info.min, -1000), min(info.max, 1000), (h, w, 3),
                                        endpoint=True).astype(in_dtype))
    mats = rng.uniform(-1.5, 1.5, (3, 3, 4))
    mats[:, :, 3] *= 100
    outs = run(samples, mats, out_dtype)
    for s, m, o in zip(samples, mats, outs):
        np.testing.assert_allclose(o.astype(np.float64), reference(s, m, out_dtype).astype(np.float64),
                                   atol=1 if np.dtype(out_dtype).kind != "f" else 1e-3, rtol=1e-5)
        if np.dtype(out_dtype).kind != "f":  # off-by-one only where float sums differ at a tie
            assert np.mean(o == reference(s, m, out_dtype)) > 0.99


def test_channel_count_change_gray_to_rgb_and_back():
    rng = np.random.default_rng(2)
    gray = rng.integers(0, 256, (6, 5, 1)).astype(np.uint8)
    to_rgb = np.array([[1, 0], [1, 0], [1, 0]], np.float32)
    rgb = run([gray], to_rgb[None], np.uint8)[0]
    assert rgb.shape == (6, 5, 3) and (rgb == gray).all()
    luma = np.array([[0.299, 0.587, 0.114, 0]])
    back = run([rgb], luma[None], np.uint8)[0]
    np.testing.assert_array_equal(back, reference(rgb, luma, np.uint8))


def test_sequence_layout_and_empty_sample():
    rng = np.random.default_rng(3)
    seq = rng.integers(0, 256, (4, 3, 2, 3)).astype(np.uint8)  # FHWC
    empty = np.zeros((0, 5, 3), np.uint8).reshape(0, 1, 5, 3)
    m = rng.uniform(0, 1, (2, 3, 4))
    outs = run([seq, empty], m, np.uint8)
    np.testing.assert_array_equal(outs[0], reference(seq, m[0], np.uint8))
    assert outs[1].shape == (0, 1, 5, 3)


def test_wrong_channel_count_is_a_sample_error():
    good = np.zeros((2, 2, 3), np.uint8)
    bad = np.zeros((2, 2, 4), np.uint8)
    with pytest.raises(_engine.SampleError) as e:
        src, shapes, offs = pack([good, bad])
        dst = np.zeros(src.size, np.uint8)
        _engine.color_matrix(POOL, src, shapes, offs, 0, dst, shapes, offs, 0,
                             np.zeros((2, 3, 4), np.float32))
    assert e.value.args[1] == 1


def test_unsupported_type_is_named():
    src, shapes, offs = pack([np.zeros((2, 2, 3), np.float64)])
    with pytest.raises(ValueError, match="FLOAT64"):
        _engine.color_matrix(POOL, src, shapes, offs, 10, src.copy(), shapes, offs, 10,
                             np.zeros((1, 3, 4), np.float32))
