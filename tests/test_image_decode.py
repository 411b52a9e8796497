"""Pipeline-level tests of the image decoders (operators/image_decode.py) against PIL / numpy."""
import io

import numpy as np
import pytest
from PIL import Image, ImageOps
from types import SimpleNamespace as types_ns

from penstock import fn, ops, types
from penstock.operators import image_decode as decoders
from penstock.pipeline import pipeline_def


def photo(h, w, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 100 * np.sin(x / 7 + y / 11), 128 + 100 * np.cos(x / 5 - y / 9),
                    255 * (x + y) / (h + w)], -1)
    img += rng.normal(0, 8, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def encode(img, fmt, **kw):
    buf = io.BytesIO()
    (img if isinstance(img, Image.Image) else Image.fromarray(img)).save(buf, fmt, **kw)
    return np.frombuffer(buf.getvalue(), np.uint8)


def pil_decode(blob, mode="RGB"):
    return np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(blob.tobytes()))).convert(mode))


def run(blobs, build, **pipe_kw):
    """Runs build(encoded) once on the batch `blobs`; returns a list of per-output sample lists."""
    @pipeline_def(batch_size=len(blobs), num_threads=2, device_id=None, **pipe_kw)
    def pipe():
        enc = fn.external_source(source=lambda: list(blobs), batch=True)
        out = build(enc)
        return out if isinstance(out, tuple) else (out,)
    p = pipe()
    p.build()
    return [[np.array(tl[i]) for i in range(len(blobs))] for tl in p.run()]


IMG = photo(40, 60)


def test_decode_formats_and_layout():
    blobs = [encode(IMG, "PNG"), encode(IMG, "JPEG", quality=95), encode(IMG, "BMP"),
             encode(IMG, "TIFF"), encode(IMG, "WEBP", lossless=True)]

    @pipeline_def(batch_size=len(blobs), num_threads=2, device_id=None)
    def pipe():
        return fn.decoders.image(fn.external_source(source=lambda: blobs, batch=True))
    p = pipe()
    p.build()
    (out,) = p.run()
    assert out.layout() == "HWC"
    for i, blob in enumerate(blobs):
        got = np.array(out[i])
        ref = pil_decode(blob)
        tol = 2 if i == 1 else 0
        assert got.dtype == np.uint8 and got.shape == (40, 60, 3)
        assert np.abs(got.astype(int) - ref).max() <= tol


def test_output_type_and_float_dtype():
    blob = encode(IMG, "PNG")
    rgb, gray, bgr, flt, any_ = run([blob], lambda e: (
        fn.decoders.image(e), fn.decoders.image(e, output_type=types.GRAY),
        fn.decoders.image(e, output_type=types.BGR), fn.decoders.image(e, dtype=types.FLOAT),
        fn.decoders.image(e, output_type=types.ANY_DATA)))
    np.testing.assert_array_equal(rgb[0], IMG)
    np.testing.assert_array_equal(bgr[0], IMG[..., ::-1])
    luma = IMG.astype(np.float64) @ [0.299, 0.587, 0.114]
    assert gray[0].shape == (40, 60, 1) and np.abs(gray[0][..., 0] - luma).max() < 1
    assert flt[0].dtype == np.float32
    np.testing.assert_array_equal(flt[0], IMG.astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(any_[0], IMG)


def test_fallback_formats_follow_output_type_and_orientation():
    exif = Image.Exif()
    exif[0x0112] = 6
    tif = encode(IMG, "TIFF", exif=exif.tobytes())  # decoded through Pillow
    png = encode(IMG, "PNG", exif=exif.tobytes())   # decoded natively
    for output_type in (types.GRAY, types.YCbCr, types.BGR):
        out, shape, crop = run([tif, png], lambda e: (fn.decoders.image(e, output_type=output_type),
                                                      fn.peek_image_shape(e),
                                                      fn.decoders.image_crop(e, crop=(30, 20),
                                                                             output_type=output_type)))
        np.testing.assert_array_equal(out[0], out[1])
        np.testing.assert_array_equal(crop[0], crop[1])
        assert out[0].shape[:2] == (60, 40)
        assert [s.tolist() for s in shape] == [[60, 40, 3], [60, 40, 3]]


def test_readers_file_and_error_names_the_file(tmp_path):
    (tmp_path / "a").mkdir()
    for k in range(3):
        (tmp_path / "a" / f"img{k}.jpg").write_bytes(encode(photo(30, 20, k), "JPEG", quality=90).tobytes())
    (tmp_path / "a" / "img3.jpg").write_bytes(encode(photo(30, 20, 3), "JPEG").tobytes()[:200])

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(tmp_path))
        return fn.decoders.image(jpegs)
    p = pipe()
    p.build()
    with pytest.raises(Exception) as info:
        p.run()
    msg = str(info.value)
    assert "decoders.image" in msg and "img3.jpg" in msg and "truncated" in msg


def test_image_crop_window_math():
    blob = encode(IMG, "PNG")  # 40 x 60
    outs = run([blob], lambda e: (
        fn.decoders.image_crop(e, crop=(11, 13)),
        fn.decoders.image_crop(e, crop_h=11, crop_w=13, crop_pos_x=0.25, crop_pos_y=0.9),
        fn.decoders.image_crop(e, crop=(11, 13), crop_pos_x=0.25, crop_pos_y=0.9, rounding="truncate")))

    def ref(px, py, rounding):
        fx, fy = px * (60 - 13), py * (40 - 11)
        r = (lambda v: int(np.floor(v + 0.5))) if rounding == "round" else int
        x0, y0 = r(fx), r(fy)
        return IMG[y0:y0 + 11, x0:x0 + 13]
    np.testing.assert_array_equal(outs[0][0], ref(0.5, 0.5, "round"))
    np.testing.assert_array_equal(outs[1][0], ref(0.25, 0.9, "round"))
    np.testing.assert_array_equal(outs[2][0], ref(0.25, 0.9, "truncate"))


def test_image_crop_depth_arguments_leave_a_2d_window_as_it_is():
    blob = encode(IMG, "PNG")
    outs = run([blob], lambda e: (fn.decoders.image_crop(e, crop_h=11, crop_w=13, crop_d=3, crop_pos_z=0.9),
                                  fn.decoders.image_crop(e, crop=(11, 13), crop_pos_z=0.1),
                                  fn.decoders.image_crop(e, crop=(11, 13))))
    np.testing.assert_array_equal(outs[0][0], outs[2][0])
    np.testing.assert_array_equal(outs[1][0], outs[2][0])
    with pytest.raises(RuntimeError, match="crop_d"):  # as DALI: only with crop_h and crop_w
        run([blob], lambda e: fn.decoders.image_crop(e, crop=(11, 13), crop_d=3))


def test_image_crop_per_sample_position():
    blobs = [encode(photo(40, 60, k), "PNG") for k in range(3)]
    pos = [np.float32(0.0), np.float32(0.5), np.float32(1.0)]
    out = run(blobs, lambda e: fn.decoders.image_crop(
        e, crop=(10, 20), crop_pos_x=fn.external_source(source=lambda: pos, batch=True)))[0]
    for k, p in enumerate(pos):
        x0 = int(np.floor(p * 40 + 0.5))
        np.testing.assert_array_equal(out[k], photo(40, 60, k)[15:25, x0:x0 + 20])


def test_integer_dtypes_scale_to_the_type_range():
    blob = encode(IMG, "PNG")
    v = IMG.astype(np.float64)
    i8, u16, i16, u32, i32 = run([blob], lambda e: tuple(
        fn.decoders.image(e, dtype=t) for t in (types.INT8, types.UINT16, types.INT16, types.UINT32, types.INT32)))
    assert (i8[0].dtype, u16[0].dtype, i16[0].dtype) == (np.int8, np.uint16, np.int16)
    np.testing.assert_array_equal(i8[0], np.rint(v * 127 / 255))
    np.testing.assert_array_equal(u16[0], IMG.astype(np.uint16) * 257)  # 65535 / 255 = 257 exactly
    np.testing.assert_array_equal(i16[0], np.rint(v * 32767 / 255))
    # 32-bit: scaled in float32 (24-bit mantissa): within a few float32 roundings of the exact value
    for out, top, dtype in ((u32[0], 2 ** 32 - 1, np.uint32), (i32[0], 2 ** 31 - 1, np.int32)):
        assert out.dtype == dtype
        assert np.abs(out.astype(np.float64) - v * top / 255).max() <= top * 2 ** -22
        np.testing.assert_array_equal(out[IMG == 0], 0)
        np.testing.assert_array_equal(out[IMG == 255], top)  # saturated, not wrapped


def test_unsupported_dtype_is_rejected():
    for dtype in (types.FLOAT16, types.INT64, types.FLOAT64):
        with pytest.raises(RuntimeError, match="decoders.image .*dtype"):
            run([encode(IMG, "PNG")], lambda e: fn.decoders.image(e, dtype=dtype))


def test_integer_dtypes_are_cpu_only():
    node = types_ns(args={"dtype": types.INT16}, name="d", device="mixed", resolved_seed=0,
                    schema=decoders.IMAGE)
    with pytest.raises(NotImplementedError, match="INT16 .*mixed"):
        decoders.ImageDecoder(node, types_ns(max_image_pixels=None)).setup()


def test_cache_arguments_belong_to_decoders_image_only():
    blob = encode(IMG, "PNG")
    np.testing.assert_array_equal(run([blob], lambda e: fn.decoders.image(e, cache_size=1))[0][0], IMG)
    for build in (lambda e: fn.decoders.image_crop(e, crop=(10, 10), cache_size=1),
                  lambda e: fn.decoders.image_random_crop(e, cache_type="threshold"),
                  lambda e: fn.decoders.image_slice(e, start=(0, 0), shape=(5, 5), cache_threshold=1)):
        with pytest.raises(KeyError, match="cache_"):
            run([blob], build)


def test_image_crop_too_large_raises():
    with pytest.raises(Exception, match="outside"):
        run([encode(IMG, "PNG")], lambda e: fn.decoders.image_crop(e, crop=(41, 10)))


def find_window(full, crop):
    h, w = crop.shape[:2]
    for y in range(full.shape[0] - h + 1):
        for x in range(full.shape[1] - w + 1):
            if np.array_equal(full[y:y + h, x:x + w], crop):
                return y, x
    return None


def test_image_random_crop_is_a_valid_window_and_seeded():
    blobs = [encode(photo(40, 60, k), "PNG") for k in range(4)]
    a = run(blobs, lambda e: fn.decoders.image_random_crop(e, seed=7, random_area=(0.2, 0.6),
                                                           random_aspect_ratio=(0.5, 2.0)))[0]
    b = run(blobs, lambda e: fn.decoders.image_random_crop(e, seed=7, random_area=(0.2, 0.6),
                                                           random_aspect_ratio=(0.5, 2.0)))[0]
    c = run(blobs, lambda e: fn.decoders.image_random_crop(e, seed=8, random_area=(0.2, 0.6),
                                                           random_aspect_ratio=(0.5, 2.0)))[0]
    for k, out in enumerate(a):
        np.testing.assert_array_equal(out, b[k])
        h, w = out.shape[:2]
        # w and h are rounded from sqrt(s * H * W * r): allow for that rounding
        assert 0.2 * 2400 * 0.8 <= h * w <= 0.6 * 2400 * 1.2
        assert 0.5 <= w / h <= 2.0
        assert find_window(photo(40, 60, k), out) is not None
    assert any(x.shape != y.shape or not np.array_equal(x, y) for x, y in zip(a, c))


def test_image_random_crop_on_fallback_formats():
    blobs = [encode(photo(40, 60, k), "TIFF") for k in range(3)]
    out = run(blobs, lambda e: fn.decoders.image_random_crop(e, seed=3))[0]
    for k, crop in enumerate(out):
        assert find_window(photo(40, 60, k), crop) is not None


def test_random_crop_window_special_cases():
    rng = np.random.default_rng(0)
    # far too wide for any window of >= 50% area with w/h <= 2: full height, width H * 2
    assert random_window_shape(rng, 10, 100, (0.5, 1.0), (0.5, 2.0)) == (10, 20)
    # far too tall: full width, height W / 0.5
    assert random_window_shape(rng, 100, 10, (0.5, 1.0), (0.5, 2.0)) == (20, 10)
    # minimum area needs w/h below the range: full width, height W / min_ratio
    assert random_window_shape(rng, 50, 50, (1.0, 1.0), (2.0, 3.0)) == (25, 50)
    # no successful draw: the whole image clamped to the ratio range (50 x int(50 * 1.333)),
    # scaled by sqrt(max_area * H * W / (h * w)) and truncated
    s = np.sqrt(0.6 * 5000 / (50 * 66))
    assert tuple(decoders.random_crop_windows(rng, [[50, 100]], (0.5, 0.6), (0.75, 1.333), 0)[0, 2:]) == \
        (int(50 * s), int(66 * s))
    # a window always lies inside the image
    hw = rng.integers(1, 300, (200, 2))
    y, x, h, w = decoders.random_crop_windows(rng, hw, (0.08, 1.0), (0.75, 4 / 3), 10).T
    assert (0 <= y).all() and (0 <= x).all() and (1 <= h).all() and (1 <= w).all()
    assert (y + h <= hw[:, 0]).all() and (x + w <= hw[:, 1]).all()


def test_image_random_crop_range_and_attempt_arguments():
    blobs = [encode(photo(24, 32), "PNG"), encode(photo(21, 30), "PNG")]
    # no attempts: the whole image clamped to the ratio range; the default range ends at 4/3 exactly,
    # so 32/24 is inside it and 30/21 is cut to 21 * 4/3 = 28 columns
    for attempts in (0, -1):
        out = run(blobs, lambda e: fn.decoders.image_random_crop(e, num_attempts=attempts))[0]
        assert [o.shape for o in out] == [(24, 32, 3), (21, 28, 3)]
    # one value v is the range [v, v]: every window has w/h = 2 (up to rounding); an area above
    # 1 never fits, leaving the clamped whole image
    out = run(blobs, lambda e: fn.decoders.image_random_crop(e, random_aspect_ratio=[2.0], seed=1))[0]
    assert all(abs(o.shape[1] / o.shape[0] - 2) <= 2 / o.shape[0] for o in out)
    out = run(blobs, lambda e: fn.decoders.image_random_crop(e, random_area=[2.0]))[0]
    assert [o.shape for o in out] == [(24, 32, 3), (21, 28, 3)]
    out = run(blobs, lambda e: fn.decoders.image_random_crop(e, random_area=[0.0, 1.0], seed=2))[0]
    assert all(o.shape[0] >= 1 and o.shape[1] >= 1 for o in out)
    for bad in (dict(random_area=[0.5, 0.2]), dict(random_area=[0.1, 0.2, 0.3]), dict(random_area=[]),
                dict(random_aspect_ratio=[2.0, 1.0]), dict(random_aspect_ratio=[0.0, 1.0])):
        with pytest.raises(RuntimeError, match="decoders.image_random_crop .*" + next(iter(bad))):
            run(blobs, lambda e: fn.decoders.image_random_crop(e, **bad))


def random_window_shape(rng, h, w, area, ratio):
    return tuple(int(v) for v in decoders.random_crop_windows(rng, [[h, w]], area, ratio, 10)[0, 2:])


def test_image_slice_forms():
    blob = encode(IMG, "PNG")  # 40 x 60

    def build(e):
        anchor = fn.external_source(source=lambda: [np.array([0.25, 0.5], np.float32)], batch=True)
        shape = fn.external_source(source=lambda: [np.array([0.5, 0.25], np.float32)], batch=True)
        abs_anchor = fn.external_source(source=lambda: [np.array([7, 3], np.float32)], batch=True)
        abs_shape = fn.external_source(source=lambda: [np.array([20, 10], np.float32)], batch=True)
        return (fn.decoders.image_slice(e, anchor, shape),
                fn.decoders.image_slice(e, abs_anchor, abs_shape, normalized_anchor=False, normalized_shape=False),
                fn.decoders.image_slice(e, start=(5, 2), end=(25, 32)),
                fn.decoders.image_slice(e, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5), axis_names="HW"),
                fn.decoders.image_slice(e, start=(4,), shape=(10,), axes=(0,)))
    outs = run([blob], build)
    np.testing.assert_array_equal(outs[0][0], IMG[20:30, 15:45])          # x, y order (WH)
    np.testing.assert_array_equal(outs[1][0], IMG[3:13, 7:27])
    np.testing.assert_array_equal(outs[2][0], IMG[2:32, 5:25])
    np.testing.assert_array_equal(outs[3][0], IMG[4:24, 12:42])
    np.testing.assert_array_equal(outs[4][0], IMG[4:14, :])


def test_peek_image_shape():
    exif = Image.Exif()
    exif[0x0112] = 8
    blobs = [encode(IMG, "JPEG", exif=exif.tobytes()), encode(Image.fromarray(IMG).convert("L"), "PNG"),
             encode(IMG, "WEBP")]
    d, f, g, n = run(blobs, lambda e: (fn.peek_image_shape(e), fn.peek_image_shape(e, dtype=types.FLOAT),
                                       fn.peek_image_shape(e, image_type=types.ANY_DATA),
                                       fn.peek_image_shape(e, adjust_orientation=False)))
    assert [s.tolist() for s in d] == [[60, 40, 3], [40, 60, 3], [40, 60, 3]]
    assert d[0].dtype == np.int64 and f[0].dtype == np.float32
    assert [s.tolist() for s in g] == [[60, 40, 3], [40, 60, 1], [40, 60, 3]]
    assert n[0].tolist() == [40, 60, 3]


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT16])
def test_peek_image_shape_refuses_types_too_narrow_for_extents(dtype):
    with pytest.raises(RuntimeError, match=f"peek_image_shape.*dtype {dtype.name} is not supported"):
        run([encode(IMG, "PNG")], lambda e: fn.peek_image_shape(e, dtype=dtype))


def test_legacy_ops_aliases():
    blob = encode(IMG, "PNG")
    outs = run([blob], lambda e: (ops.ImageDecoder(output_type=types.RGB)(e),
                                  ops.ImageDecoderCrop(crop=(10, 10))(e),
                                  ops.ImageDecoderRandomCrop(seed=1)(e),
                                  ops.ImageDecoderSlice()(e, np.array([0.0, 0.0], np.float32),
                                                          np.array([0.5, 0.5], np.float32)),
                                  ops.PeekImageShape()(e)))
    np.testing.assert_array_equal(outs[0][0], IMG)
    assert outs[1][0].shape == (10, 10, 3)
    assert outs[3][0].shape == (20, 30, 3)
    assert outs[4][0].tolist() == [40, 60, 3]


def test_experimental_decoder_paths_are_deprecated_aliases():
    blob = encode(IMG, "PNG")
    with pytest.warns(DeprecationWarning, match=r"`penstock.fn.experimental.decoders.image_crop` is now deprecated. "
                                                r"Use `penstock.fn.decoders.image_crop` instead"):
        outs = run([blob], lambda e: (fn.experimental.decoders.image(e), fn.experimental.decoders.image_crop(
            e, crop=(10, 10)), ops.experimental.decoders.ImageSlice(start=[1, 2], shape=[3, 4], axes=[0, 1])(e)))
    np.testing.assert_array_equal(outs[0][0], IMG)
    np.testing.assert_array_equal(outs[1][0], run([blob], lambda e: fn.decoders.image_crop(e, crop=(10, 10)))[0][0])
    np.testing.assert_array_equal(outs[2][0], IMG[1:4, 2:6])

def test_missing_pillow_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(decoders, "_pillow", lambda: None)
    with pytest.raises(Exception, match="needs Pillow"):
        run([encode(IMG, "PNG"), encode(IMG, "TIFF")], lambda e: fn.decoders.image(e))
    # formats decoded natively do not need it
    np.testing.assert_array_equal(run([encode(IMG, "PNG")], lambda e: fn.decoders.image(e))[0][0], IMG)


def test_encoded_input_must_be_bytes():
    with pytest.raises(Exception, match="uint8"):
        run([np.zeros(10, np.float32)], lambda e: fn.decoders.image(e))


def test_image_crop_window_sizes_follow_crop_rules():
    # as fn.crop: sizes read as integers, a size <= 0 keeps the whole extent, crop_h/crop_w together
    blob = encode(IMG, "PNG")
    truncated, whole_h, whole = run([blob], lambda e: (
        fn.decoders.image_crop(e, crop=(10.9, 20.5), crop_pos_x=0.0, crop_pos_y=0.0),
        fn.decoders.image_crop(e, crop_h=0.0, crop_w=7.0, crop_pos_x=0.0, crop_pos_y=0.0),
        fn.decoders.image_crop(e, crop_h=-1.0, crop_w=0.0)))
    np.testing.assert_array_equal(truncated[0], IMG[:10, :20])
    np.testing.assert_array_equal(whole_h[0], IMG[:, :7])
    np.testing.assert_array_equal(whole[0], IMG)
    with pytest.raises(RuntimeError, match="crop_h.*crop_w.*together"):
        run([blob], lambda e: fn.decoders.image_crop(e, crop_h=5.0))
