"""Native image decoders (penstock._engine.decode_images / peek_image_shapes) against PIL and
numpy reference formulas. Every image is generated here."""
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageOps

from _util import chroma_spread_per_block
from penstock import _engine

RGB, BGR, GRAY, YCBCR, ANY = 0, 1, 2, 3, 4


@pytest.fixture(scope="module")
def pool():
    return _engine.ThreadPool(2)


def photo(h, w, seed=0):
    """Photographic-like content: smooth gradients, flat shapes with sharp edges, noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 100 * np.sin(x / 37 + y / 53), 128 + 100 * np.cos(x / 23 - y / 41),
                    255 * (x + y) / (h + w)], -1)
    img[h // 4:h // 2, w // 5:w // 2] = [200, 30, 60]
    img[(x - 0.7 * w) ** 2 + (y - 0.6 * h) ** 2 < (min(h, w) / 5) ** 2] = [20, 180, 90]
    img += rng.normal(0, 6, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def encode(img, fmt, mode=None, **kw):
    pil = img if isinstance(img, Image.Image) else Image.fromarray(img)
    if mode:
        pil = pil.convert(mode)
    buf = io.BytesIO()
    pil.save(buf, fmt, **kw)
    return buf.getvalue()


def pil_rgb(blob, mode="RGB"):
    return np.array(Image.open(io.BytesIO(blob)).convert(mode))


def batch(blobs):
    data = np.frombuffer(b"".join(blobs), np.uint8).copy()
    shapes = np.array([[len(b)] for b in blobs], np.int64).reshape(-1, 1)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])[:-1]]).astype(np.int64)
    return data, shapes, offsets


def decode(pool, blobs, output_type=RGB, adjust=True, crop=None, target=None, fast=False, fancy=True):
    data, shapes, offsets = batch(blobs)
    crop = None if crop is None else np.asarray(crop, np.int64).reshape(len(blobs), 4)
    target = None if target is None else np.asarray(target, np.int64).reshape(len(blobs), 2)
    out, out_shapes, out_offsets, fallback = _engine.decode_images(
        pool, data, shapes, offsets, output_type, adjust, crop, target, fast, fancy_upsampling=fancy)
    return [None if fb else out[o:o + s.prod()].reshape(s)
            for o, s, fb in zip(out_offsets, out_shapes, fallback)]


def decode1(pool, blob, **kw):
    return decode(pool, [blob], **{k: (None if v is None else [v]) if k in ("crop", "target") else v
                                   for k, v in kw.items()})[0]


def peek(pool, blobs, output_type=ANY, adjust=True):
    return _engine.peek_image_shapes(pool, *batch(blobs), output_type, adjust)


def assert_close(a, b, max_diff=2, mean_diff=0.5):
    assert a.shape == b.shape
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    assert d.max() <= max_diff, d.max()
    assert d.mean() <= mean_diff, d.mean()


# ---- JPEG ---------------------------------------------------------------------------------

@pytest.mark.parametrize("h,w", [(375, 500), (101, 77), (8, 8), (1, 13)])
@pytest.mark.parametrize("subsampling", [0, 1, 2])  # 4:4:4, 4:2:2, 4:2:0
def test_jpeg_matches_pil(pool, h, w, subsampling):
    blob = encode(photo(h, w), "JPEG", quality=90, subsampling=subsampling)
    assert_close(decode1(pool, blob), pil_rgb(blob))


def test_jpeg_progressive_and_gray(pool):
    img = photo(120, 90)
    prog = encode(img, "JPEG", quality=85, progressive=True)
    assert_close(decode1(pool, prog), pil_rgb(prog))
    gray = encode(img, "JPEG", mode="L", quality=90)
    out = decode1(pool, gray, output_type=ANY)
    assert out.shape == (120, 90, 1)
    assert_close(out[..., 0], pil_rgb(gray, "L"))
    assert_close(decode1(pool, gray), np.repeat(out, 3, axis=2), 0, 0)  # grey replicated
    assert peek(pool, [gray])[0].tolist() == [[120, 90, 1]]


def test_jpeg_cmyk_converted_to_rgb(pool):
    blob = encode(photo(40, 50), "JPEG", mode="CMYK", quality=95)
    out = decode1(pool, blob, output_type=ANY)
    assert out.shape == (40, 50, 3)
    assert_close(out, pil_rgb(blob), max_diff=2)


@pytest.mark.parametrize("window", [(0, 0, 375, 500), (93, 127, 188, 250), (1, 3, 5, 7),
                                    (370, 495, 5, 5), (0, 250, 375, 250), (200, 0, 175, 1)])
def test_jpeg_roi_equals_crop_of_full(pool, window):
    blob = encode(photo(375, 500), "JPEG", quality=90)
    full = decode1(pool, blob)
    y, x, h, w = window
    # the decoder reads a margin around the window, so even the edges are exact here
    np.testing.assert_array_equal(decode1(pool, blob, crop=window), full[y:y + h, x:x + w])


@pytest.mark.parametrize("variant", [dict(subsampling=0), dict(subsampling=1), dict(progressive=True),
                                     dict(mode="L"), dict(mode="CMYK")])
def test_jpeg_roi_other_layouts(pool, variant):
    kw = dict(variant)
    blob = encode(photo(123, 157), "JPEG", mode=kw.pop("mode", None), quality=90, **kw)
    full = decode1(pool, blob)
    for y, x, h, w in [(17, 33, 50, 61), (0, 150, 123, 7), (100, 0, 23, 157)]:
        np.testing.assert_array_equal(decode1(pool, blob, crop=(y, x, h, w)), full[y:y + h, x:x + w])
        scaled = decode1(pool, blob, crop=(y, x, h, w), target=(h // 2, w // 2))
        assert scaled.shape[0] >= h // 2 and scaled.shape[1] >= w // 2


def scale_for(hw, target):
    """Smallest n/8 (n = 1..8) whose ceil(dim * n / 8) still covers the target on both axes."""
    for n in range(1, 9):
        if all(-(-d * n // 8) >= t for d, t in zip(hw, target)):
            return n
    return 8


@pytest.mark.parametrize("target", [(188, 250), (100, 100), (40, 60), (375, 500), (376, 10), (1, 1)])
def test_jpeg_dct_scaling(pool, target):
    img = photo(375, 500)
    blob = encode(img, "JPEG", quality=90)
    out = decode1(pool, blob, target=target)
    n = scale_for((375, 500), target)
    assert out.shape == (-(-375 * n // 8), -(-500 * n // 8), 3)
    if 8 % n == 0:  # PIL's draft mode uses the same libjpeg DCT scaling, by 1/2, 1/4, 1/8 only
        k = 8 // n
        ref = Image.open(io.BytesIO(blob))
        ref.draft("RGB", (500 // k, 375 // k))
        assert_close(out, np.array(ref.convert("RGB")))
    # and it is a fair downscale of the image
    import cv2
    area = cv2.resize(img, (out.shape[1], out.shape[0]), interpolation=cv2.INTER_AREA)
    assert np.abs(out.astype(int) - area).mean() < 6


def test_jpeg_dct_scaling_with_crop(pool):
    blob = encode(photo(375, 500), "JPEG", quality=90)
    window = (40, 60, 200, 160)
    out = decode1(pool, blob, crop=window, target=(50, 40))  # 1/4 covers 200x160 -> 50x40
    y0, x0, y1, x1 = 40 // 4, 60 // 4, -(-(40 + 200) // 4), -(-(60 + 160) // 4)
    assert out.shape == (y1 - y0, x1 - x0, 3)
    ref = Image.open(io.BytesIO(blob))
    ref.draft("RGB", (125, 93))  # PIL picks scale 1/4
    ref = np.array(ref.convert("RGB"))
    assert ref.shape[:2] == (94, 125)
    assert_close(out, ref[y0:y1, x0:x1], max_diff=2, mean_diff=0.5)


def test_fast_idct_is_close(pool):
    blob = encode(photo(64, 80), "JPEG", quality=90)
    assert_close(decode1(pool, blob, fast=True), pil_rgb(blob), max_diff=16, mean_diff=2.0)


def test_jpeg_without_fancy_upsampling_repeats_each_chroma_sample(pool):
    # mid-range colours, so that no channel clips and hides the chroma
    img = (photo(96, 128).astype(np.int32) // 2 + 64).astype(np.uint8)
    blob = encode(img, "JPEG", quality=95, subsampling=2)  # 4:2:0: one chroma sample per 2x2 block
    plain = decode1(pool, blob, fancy=False)
    fancy = decode1(pool, blob)
    assert (chroma_spread_per_block(plain) <= 3).mean() > 0.99
    assert (chroma_spread_per_block(fancy) <= 3).mean() < 0.9  # interpolated between the samples
    assert_close(plain, fancy, max_diff=40, mean_diff=3.0)  # the same image, chroma edges aside
    full = encode(img, "JPEG", quality=95, subsampling=0)  # 4:4:4: nothing to upsample
    np.testing.assert_array_equal(decode1(pool, full, fancy=False), decode1(pool, full))


@pytest.mark.parametrize("window", [(0, 0, 96, 128), (17, 33, 50, 61), (1, 3, 5, 7), (91, 0, 5, 128)])
def test_jpeg_roi_without_fancy_upsampling_equals_crop_of_full(pool, window):
    blob = encode(photo(96, 128), "JPEG", quality=90, subsampling=2)
    y, x, h, w = window
    full = decode1(pool, blob, fancy=False)
    np.testing.assert_array_equal(decode1(pool, blob, crop=window, fancy=False), full[y:y + h, x:x + w])


# ---- EXIF orientation -----------------------------------------------------------------------

def with_orientation(img, orientation, fmt="JPEG", **kw):
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode(img, fmt, exif=exif.tobytes(), **kw)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_exif_transpose(pool, orientation):
    img = photo(60, 90)
    blob = with_orientation(img, orientation, quality=95)
    ref = np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(blob))).convert("RGB"))
    out = decode1(pool, blob)
    assert_close(out, ref)
    assert peek(pool, [blob])[0].tolist() == [list(ref.shape)]
    stored = decode1(pool, blob, adjust=False)
    assert_close(stored, pil_rgb(blob))
    # a crop window is in display coordinates
    win = (7, 11, 31, 43) if ref.shape[0] >= 38 else (11, 7, 43, 31)
    y, x, h, w = win
    assert_close(decode1(pool, blob, crop=win), out[y:y + h, x:x + w], mean_diff=0.3)
    # so is a scale target; 1/2 scale of the displayed size
    half = decode1(pool, blob, target=(ref.shape[0] // 2, ref.shape[1] // 2))
    assert half.shape == (-(-ref.shape[0] // 2), -(-ref.shape[1] // 2), 3)


@pytest.mark.parametrize("orientation", [3, 6, 7])
def test_png_exif_orientation_exact(pool, orientation):
    img = photo(30, 50)
    blob = with_orientation(img, orientation, "PNG")
    ref = np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(blob))).convert("RGB"))
    np.testing.assert_array_equal(decode1(pool, blob), ref)
    np.testing.assert_array_equal(decode1(pool, blob, output_type=GRAY)[..., 0],
                                  decode1(pool, blob, output_type=GRAY, adjust=False)[..., 0]
                                  if orientation == 1 else
                                  np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(blob))).convert("L")))


def test_big_endian_exif(pool):
    img = photo(20, 30)
    # hand-written big-endian TIFF block: IFD0 with one entry, orientation 8
    tiff = b"MM\x00\x2a\x00\x00\x00\x08" + struct.pack(">HHHIHH", 1, 0x0112, 3, 1, 8, 0) + b"\0\0\0\0"
    blob = encode(img, "JPEG", quality=95, exif=b"Exif\x00\x00" + tiff)
    ref = np.rot90(pil_rgb(blob))  # orientation 8: rotate 90 counter-clockwise
    assert_close(decode1(pool, blob), ref)


# ---- output colour types ------------------------------------------------------------------

def test_output_types_from_rgb(pool):
    img = photo(50, 70)
    for blob in (encode(img, "JPEG", quality=90), encode(img, "PNG")):
        rgb = decode1(pool, blob).astype(np.float64)
        np.testing.assert_array_equal(decode1(pool, blob, output_type=BGR), rgb[..., ::-1])
        gray = decode1(pool, blob, output_type=GRAY)
        assert gray.shape == img.shape[:2] + (1,)
        if bytes(blob[:2]) == b"\xff\xd8":  # a colour JPEG's GRAY is libjpeg's luma (the stored Y)
            stored = Image.open(io.BytesIO(blob))
            stored.draft("L", stored.size)
            np.testing.assert_array_equal(gray[..., 0], np.asarray(stored))
        else:
            luma = rgb @ [0.299, 0.587, 0.114]
            assert np.abs(gray[..., 0] - luma).max() <= 0.5 + 1e-6
        ycc = decode1(pool, blob, output_type=YCBCR)
        m = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]])
        ref = rgb @ m.T / 255 + [16, 128, 128]
        assert np.abs(ycc - ref).max() <= 0.5 + 1e-3
        np.testing.assert_array_equal(decode1(pool, blob, output_type=ANY), rgb)


def test_ycbcr_of_pure_red_is_limited_range(pool):
    red = np.zeros((4, 4, 3), np.uint8)
    red[..., 0] = 255
    assert decode1(pool, encode(red, "PNG"), output_type=YCBCR)[0, 0].tolist() == [81, 90, 240]


# ---- PNG ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,channels", [("RGB", 3), ("RGBA", 4), ("L", 1), ("LA", 2), ("P", 3),
                                           ("1", 1)])
def test_png_modes_bit_exact(pool, mode, channels):
    img = photo(33, 47)
    pil = Image.fromarray(img)
    if mode == "RGBA" or mode == "LA":
        pil = pil.convert("RGBA")
        pil.putalpha(Image.fromarray(img[..., 1]))
    blob = encode(pil, "PNG", mode=mode)
    stored = Image.open(io.BytesIO(blob))
    any_out = decode1(pool, blob, output_type=ANY)
    assert any_out.shape == (33, 47, channels)
    ref_mode = {"P": "RGB", "1": "L"}.get(mode, mode)
    np.testing.assert_array_equal(any_out.reshape(stored.convert(ref_mode).size[::-1] + (channels,)),
                                  np.array(stored.convert(ref_mode)).reshape(33, 47, channels))
    # RGB drops alpha and replicates grey
    np.testing.assert_array_equal(decode1(pool, blob), np.array(stored.convert("RGBA"))[..., :3]
                                  if "A" in mode else np.array(stored.convert("RGB")))
    assert peek(pool, [blob])[0].tolist() == [[33, 47, channels]]


def test_png_palette_with_transparency_has_alpha(pool):
    pil = Image.fromarray(photo(20, 30)).convert("P")
    blob = encode(pil, "PNG", transparency=3)
    out = decode1(pool, blob, output_type=ANY)
    np.testing.assert_array_equal(out, np.array(Image.open(io.BytesIO(blob)).convert("RGBA")))


def test_png_16_bit(pool):
    import cv2
    rng = np.random.default_rng(1)
    rgb16 = rng.integers(0, 65536, (21, 34, 3), dtype=np.uint16)
    ok, enc = cv2.imencode(".png", rgb16[..., ::-1])  # cv2 writes BGR
    blob = enc.tobytes()
    np.testing.assert_array_equal(decode1(pool, blob), (rgb16 >> 8).astype(np.uint8))
    np.testing.assert_array_equal(decode1(pool, blob), pil_rgb(blob))
    gray16 = rng.integers(0, 65536, (21, 34), dtype=np.uint16)
    blob = encode(Image.fromarray(gray16), "PNG")
    np.testing.assert_array_equal(decode1(pool, blob, output_type=ANY)[..., 0], gray16 >> 8)


def png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def interlaced_png(img):
    """Adam7-interlaced 8-bit RGB PNG, filter 0, written by hand (PIL cannot write it)."""
    h, w, _ = img.shape
    passes = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1)]
    raw = b""
    for y0, x0, dy, dx in passes:
        sub = img[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\0" + row.tobytes() for row in sub)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw))
            + png_chunk(b"IEND", b""))


def test_png_interlaced_and_crop(pool):
    img = photo(29, 37)
    blob = interlaced_png(img)
    np.testing.assert_array_equal(decode1(pool, blob), img)
    np.testing.assert_array_equal(decode1(pool, blob), pil_rgb(blob))
    np.testing.assert_array_equal(decode1(pool, blob, crop=(3, 5, 20, 9)), img[3:23, 5:14])
    plain = encode(img, "PNG")
    np.testing.assert_array_equal(decode1(pool, plain, crop=(3, 5, 20, 9)), img[3:23, 5:14])
    np.testing.assert_array_equal(decode1(pool, plain, crop=(28, 0, 1, 37)), img[28:29])


# ---- BMP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,channels", [("RGB", 3), ("RGBA", 3), ("L", 1), ("P", 3), ("1", 1)])
def test_bmp_from_pil(pool, mode, channels):
    blob = encode(photo(19, 23), "BMP", mode=mode)
    stored = Image.open(io.BytesIO(blob))
    out = decode1(pool, blob, output_type=ANY)
    assert out.shape == (19, 23, channels)
    np.testing.assert_array_equal(out, np.array(stored.convert("RGB" if channels == 3 else "L"))
                                  .reshape(out.shape))
    np.testing.assert_array_equal(decode1(pool, blob, crop=(2, 3, 10, 11)),
                                  np.array(stored.convert("RGB"))[2:12, 3:14])


def bmp_file(width, height, bpp, rows, compression=0, masks=(), palette=b"", header_size=40):
    """A BMP from already-packed rows (top row first); negative height = top-down storage."""
    stride = (bpp * width + 31) // 32 * 4
    packed = b"".join(r.ljust(stride, b"\0") for r in (rows if height < 0 else rows[::-1]))
    extra = b"".join(struct.pack("<I", m) for m in masks)
    info = struct.pack("<IiiHHIIiiII", header_size, width, height, 1, bpp, compression, len(packed),
                       2835, 2835, len(palette) // 4, 0)
    info = info.ljust(header_size, b"\0") if header_size > 40 else info
    if header_size > 40:  # masks live inside V4/V5 headers
        info = info[:40] + extra.ljust(header_size - 40, b"\0")[:header_size - 40]
        extra = b""
    offset = 14 + len(info) + len(extra) + len(palette)
    head = b"BM" + struct.pack("<IHHI", offset + len(packed), 0, 0, offset)
    return head + info + extra + palette + packed


def test_bmp_top_down_and_bottom_up(pool):
    img = photo(9, 13)
    rows = [r[..., ::-1].tobytes() for r in img]
    for height in (9, -9):
        blob = bmp_file(13, height, 24, rows)
        np.testing.assert_array_equal(decode1(pool, blob), img)
        np.testing.assert_array_equal(decode1(pool, blob), pil_rgb(blob))


def test_bmp_bitfields_and_4_bit_palette(pool):
    rng = np.random.default_rng(2)
    px = rng.integers(0, 65536, (6, 10), dtype=np.uint16)
    blob = bmp_file(10, 6, 16, [r.astype("<u2").tobytes() for r in px], 3, (0xF800, 0x7E0, 0x1F))
    ref = np.stack([(px >> 11) * 255 // 31, ((px >> 5) & 63) * 255 // 63, (px & 31) * 255 // 31], -1)
    np.testing.assert_array_equal(decode1(pool, blob), ref)
    np.testing.assert_array_equal(decode1(pool, blob), pil_rgb(blob))
    # 32-bit with an alpha mask in a V5 header
    p32 = rng.integers(0, 2 ** 32, (5, 7), dtype=np.uint32)
    blob = bmp_file(7, 5, 32, [r.astype("<u4").tobytes() for r in p32], 3,
                    (0xFF0000, 0xFF00, 0xFF, 0xFF000000), header_size=124)
    ref = np.stack([(p32 >> 16) & 255, (p32 >> 8) & 255, p32 & 255, p32 >> 24], -1)
    np.testing.assert_array_equal(decode1(pool, blob, output_type=ANY), ref)
    np.testing.assert_array_equal(decode1(pool, blob, output_type=ANY), pil_rgb(blob, "RGBA"))
    # 4-bit palette, odd width
    pal = rng.integers(0, 256, (16, 3), dtype=np.uint8)
    idx = rng.integers(0, 16, (4, 9))
    rows = [bytes((a << 4) | b for a, b in zip(r[0::2], np.append(r[1::2], 0))) for r in idx]
    blob = bmp_file(9, 4, 4, rows, palette=b"".join(bytes([c[2], c[1], c[0], 0]) for c in pal))
    np.testing.assert_array_equal(decode1(pool, blob), pal[idx])
    np.testing.assert_array_equal(decode1(pool, blob), pil_rgb(blob))


def test_bmp_rle_needs_fallback(pool):
    blob = bmp_file(2, 1, 8, [b"\x02\x01\x00\x00\x00\x01"], compression=1, palette=b"\0\0\0\0\xff\xff\xff\0")
    data, shapes, offsets = batch([blob])
    *_, fallback = _engine.decode_images(pool, data, shapes, offsets, RGB, True, None, None, False)
    assert fallback.tolist() == [True]


# ---- PNM ------------------------------------------------------------------------------------

def pnm(kind, w, h, maxval, values, plain):
    head = f"P{kind}\n# comment\n{w} {h}\n" + ("" if kind in (1, 4) else f"{maxval}\n")
    if plain:
        body = " ".join(str(int(v)) for v in np.ravel(values)).encode()
    elif kind == 4:
        body = np.packbits(values.astype(bool), axis=1).tobytes()
    else:
        body = values.astype(">u2" if maxval > 255 else np.uint8).tobytes()
    return head.encode() + body


@pytest.mark.parametrize("kind,plain,channels", [(1, True, 1), (2, True, 1), (3, True, 3), (4, False, 1),
                                                 (5, False, 1), (6, False, 3)])
@pytest.mark.parametrize("maxval", [255, 99, 65535])
def test_pnm_matches_formula_and_pil(pool, kind, plain, channels, maxval):
    rng = np.random.default_rng(kind)
    bitmap = kind in (1, 4)
    shape = (7, 11) if channels == 1 else (7, 11, 3)
    vals = rng.integers(0, 2 if bitmap else maxval + 1, shape)
    blob = pnm(kind, 11, 7, maxval, vals, plain)
    out = decode1(pool, blob, output_type=ANY)
    ref = np.where(vals == 1, 0, 255) if bitmap else np.round(vals * 255 / maxval)  # ties to even
    np.testing.assert_array_equal(out, ref.reshape(7, 11, channels))
    if not (channels == 1 and maxval > 255):  # PIL keeps 16-bit grey as 16-bit
        np.testing.assert_array_equal(out, pil_rgb(blob, "RGB" if channels == 3 else "L").reshape(out.shape))
    np.testing.assert_array_equal(decode1(pool, blob, output_type=ANY, crop=(2, 3, 4, 5)), out[2:6, 3:8])


# ---- errors and fallback --------------------------------------------------------------------

def assert_sample_error(pool, blobs, index, match=None, **kw):
    with pytest.raises(_engine.SampleError) as info:
        decode(pool, blobs, **kw)
    msg, i = info.value.args
    assert i == index
    if match:
        assert match in msg, msg


def test_truncated_files_raise(pool):
    good = encode(photo(40, 50), "JPEG", quality=90)
    png = encode(photo(40, 50), "PNG")
    for blob in (good, png, encode(photo(10, 12), "BMP"), pnm(6, 11, 7, 255, np.zeros((7, 11, 3)), False)):
        for cut in list(range(0, 40)) + list(range(40, len(blob) - 2, max(1, len(blob) // 60))):
            assert_sample_error(pool, [good, blob[:cut], good], 1)


def test_zero_length_and_unknown_formats(pool):
    good = encode(photo(8, 8), "PNG")
    assert_sample_error(pool, [good, b""], 1, "empty")
    assert_sample_error(pool, [b"hello world, not an image", good], 0, "unsupported image format")
    gif = encode(photo(8, 8), "GIF")
    assert_sample_error(pool, [good, good, gif], 2, "GIF")


def test_crop_outside_image_raises(pool):
    blob = encode(photo(20, 30), "JPEG")
    for win in [(0, 0, 21, 30), (-1, 0, 5, 5), (0, 25, 5, 6), (0, 0, 0, 5)]:
        assert_sample_error(pool, [blob, blob], 1, "outside", crop=[(0, 0, 20, 30), win])


def test_headers_claiming_huge_images_are_rejected(pool):
    jpeg = bytearray(encode(photo(64, 64), "JPEG", progressive=True, quality=90))
    sof = jpeg.find(b"\xff\xc2")
    jpeg[sof + 5:sof + 9] = struct.pack(">HH", 30000, 30000)
    assert_sample_error(pool, [bytes(jpeg)], 0, "cannot hold")
    png = bytearray(encode(photo(64, 64), "PNG"))
    ihdr = bytes(png[12:16]) + struct.pack(">II", 60000, 60000) + bytes(png[24:29])
    png[8:33] = png_chunk(b"IHDR", ihdr[4:])
    assert_sample_error(pool, [bytes(png)], 0, "too small")


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_bit_flips_never_crash(pool, fmt):
    img = photo(48, 64)
    blob = encode(img, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    rng = np.random.default_rng(3)
    raised = 0
    for _ in range(200):
        bad = bytearray(blob)
        for pos in rng.integers(0, len(bad), rng.integers(1, 4)):
            bad[pos] ^= 1 << int(rng.integers(0, 8))
        try:
            out = decode(pool, [blob, bytes(bad), blob])
        except _engine.SampleError as e:
            assert e.args[1] == 1
            raised += 1
        else:
            assert out[1].ndim == 3 and out[1].shape[2] == 3
    if fmt == "PNG":
        assert raised >= 190  # every chunk is CRC-protected
    else:
        assert raised > 0


def test_fallback_formats_are_flagged(pool):
    img = photo(10, 12)
    blobs = [encode(img, "PNG"), encode(img, "TIFF"), encode(img, "WEBP"), encode(img, "JPEG2000")]
    out = decode(pool, blobs)
    assert out[1] is None and out[2] is None and out[3] is None
    np.testing.assert_array_equal(out[0], img)
    shapes, fallback = peek(pool, blobs)
    assert fallback.tolist() == [False, True, True, True]
    assert shapes[0].tolist() == [10, 12, 3] and not shapes[1:].any()


def test_one_and_two_threads_agree():
    blobs = [encode(photo(50 + i, 60 + 3 * i, i), "JPEG", quality=80) for i in range(6)]
    one = decode(_engine.ThreadPool(1), blobs)
    two = decode(_engine.ThreadPool(2), blobs)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
