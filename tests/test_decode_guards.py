"""The decoders' guards against files that would give silently wrong data or exhaust memory
(beyond DALI): JPEGs libjpeg-turbo finds corrupt data in fail as their sample's error unless
``accept_corrupt_jpeg=True``, and images whose headers claim more than the pipeline's
``max_image_pixels`` fail before anything is decoded, naming the file and the size."""
import io
import os
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def
from penstock.pipeline import Pipeline
from penstock.pipeline._pipeline import MAX_IMAGE_PIXELS


def _photo(h=64, w=96, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // w, y * 255 // h, (x + y) * 127 // (h + w)], -1)
    return np.clip(img + rng.integers(-20, 20, img.shape), 0, 255).astype(np.uint8)


def _jpeg(img, **kw) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=90, **kw)
    return buf.getvalue()


def _scan_start(data: bytes) -> int:
    sos = data.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")


GOOD = _jpeg(_photo())
_SCAN = _scan_start(GOOD)
_MIDDLE = _SCAN + (len(GOOD) - _SCAN) // 2


def _garbage_in_scan() -> bytes:
    b = bytearray(GOOD)
    b[_MIDDLE:_MIDDLE + 8] = b"\xff\x00" * 4  # stuffed 0xFF bytes: codes no Huffman table has
    return bytes(b)


def _bits_flipped() -> bytes:
    b = bytearray(GOOD)
    b[_MIDDLE] ^= 0x55
    b[_MIDDLE + 1] ^= 0xAA
    return bytes(b)


def _restart_marker_damaged() -> bytes:
    data = _jpeg(_photo(seed=1), restart_marker_blocks=4)
    first = data.index(b"\xff\xd0", _scan_start(data))
    return data[:first] + b"\xff\xd5" + data[first + 2:]


# what libjpeg-turbo warns about in each (DALI 2.4's CPU decoder prints it and decodes the file)
CORRUPT = {
    "cut mid-scan, end marker appended": (GOOD[:_MIDDLE] + b"\xff\xd9", "premature end of data segment"),
    "garbage in the scan": (_garbage_in_scan(), "Corrupt JPEG data"),
    "two bytes of the scan flipped": (_bits_flipped(), "extraneous bytes before marker 0xd9"),
    "a restart marker damaged": (_restart_marker_damaged(), "instead of RST0"),
}


def _files(tmp_path, blobs: dict) -> list:
    paths = []
    for name, data in blobs.items():
        p = tmp_path / name
        p.write_bytes(data)
        paths.append(str(p))
    return paths


def _decode_files(paths, decoder=fn.decoders.image, on_error="raise", batch=None, **kw):
    @pipeline_def(batch_size=batch or len(paths), num_threads=2, device_id=None, **kw.pop("pipe", {}))
    def pipe():
        data, _ = fn.readers.file(files=paths, on_error="raise")
        return decoder(data, on_error=on_error, **kw)

    p = pipe()
    return p, p.run()[0]


# ---- corrupt JPEG data ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_jpeg_data_is_an_error_naming_the_file(tmp_path, case):
    blob, warning = CORRUPT[case]
    (path,) = _files(tmp_path, {"bad.jpg": blob})
    with pytest.raises(RuntimeError) as info:
        _decode_files([path])
    msg = str(info.value)
    assert "decoders.image" in msg and "bad.jpg" in msg and warning in msg and "accept_corrupt_jpeg" in msg


@pytest.mark.parametrize("case", list(CORRUPT))
def test_accept_corrupt_jpeg_decodes_as_dali_does(tmp_path, case):
    (path,) = _files(tmp_path, {"bad.jpg": CORRUPT[case][0]})
    _, out = _decode_files([path], accept_corrupt_jpeg=True)
    assert np.array(out[0]).shape[2] == 3 and np.array(out[0]).size > 0


def test_the_rows_past_a_cut_are_made_up(tmp_path):
    """What the default refuses: libjpeg-turbo fills the rows after the cut with flat grey."""
    (path,) = _files(tmp_path, {"cut.jpg": CORRUPT["cut mid-scan, end marker appended"][0]})
    _, out = _decode_files([path], accept_corrupt_jpeg=True)
    img = np.array(out[0]).astype(int)
    whole = np.asarray(Image.open(io.BytesIO(GOOD)).convert("RGB")).astype(int)
    assert img.shape == whole.shape
    assert np.abs(img[:8] - whole[:8]).max() <= 2          # the rows before the cut are the file's
    assert img[-8:].std() < 1 and np.abs(img[-8:] - 128).max() <= 1  # after it: grey, not the picture
    assert np.abs(img[-8:] - whole[-8:]).mean() > 20


def test_a_window_above_the_damage_is_refused_too(tmp_path):
    """A crop reads the file to its end marker: the file is refused wherever the window lies, as by
    decoders.image; accepting corruption, the window above the cut is the file's own pixels."""
    (path,) = _files(tmp_path, {"cut.jpg": CORRUPT["cut mid-scan, end marker appended"][0]})
    for pos in (0.0, 1.0):
        with pytest.raises(RuntimeError, match="premature end of data segment"):
            _decode_files([path], decoder=fn.decoders.image_crop, crop=(8, 96), crop_pos_y=pos)
    _, out = _decode_files([path], decoder=fn.decoders.image_crop, crop=(8, 96), crop_pos_y=0.0,
                           accept_corrupt_jpeg=True)
    whole = np.asarray(Image.open(io.BytesIO(GOOD)).convert("RGB")).astype(int)
    assert np.abs(np.array(out[0]).astype(int) - whole[:8]).max() <= 2


def test_on_error_skip_drops_corrupt_jpegs(tmp_path):
    blobs = {"a.jpg": GOOD, **{f"bad{k}.jpg": blob for k, (blob, _) in enumerate(CORRUPT.values())},
             "b.jpg": _jpeg(_photo(seed=3))}
    paths = _files(tmp_path, blobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pipe, out = _decode_files(paths, on_error="skip", batch=2)
    assert [s.split(os.sep)[-1] for s in out._source_info] == ["a.jpg", "b.jpg"]
    assert [os.path.basename(s["source"]) for s in pipe.skipped_samples[:4]] == [f"bad{k}.jpg" for k in range(4)]


@pytest.mark.parametrize("kw", [{}, {"progressive": True}, {"restart_marker_blocks": 4}, {"subsampling": 0}])
def test_valid_jpegs_still_decode_exactly(tmp_path, kw):
    blob = _jpeg(_photo(seed=5), **kw)
    paths = _files(tmp_path, {"ok.jpg": blob, "trailing.jpg": blob + b"data after the end marker" * 4})
    _, out = _decode_files(paths)
    want = np.asarray(Image.open(io.BytesIO(blob)).convert("RGB")).astype(int)
    for k in range(2):
        assert np.abs(np.array(out[k]).astype(int) - want).max() <= 2


def test_dali_decodes_what_accept_corrupt_jpeg_decodes(tmp_path):
    """DALI 2.4's CPU decoder only prints libjpeg-turbo's warnings: the same pixels."""
    dali = pytest.importorskip("nvidia.dali")
    paths = _files(tmp_path, {f"bad{k}.jpg": blob for k, (blob, _) in enumerate(CORRUPT.values())})
    _, ours = _decode_files(paths, accept_corrupt_jpeg=True)

    @dali.pipeline_def(batch_size=len(paths), num_threads=1, device_id=None)
    def theirs():
        data, _ = dali.fn.readers.file(files=paths)
        return dali.fn.decoders.image(data, device="cpu")

    p = theirs()
    p.build()
    (out,) = p.run()
    for k in range(len(paths)):
        assert np.abs(np.array(ours[k]).astype(int) - np.array(out[k]).astype(int)).mean() < 1


# ---- a photograph with 20 bytes of its scan flipped ------------------------------------------------
def _astronaut_jpeg() -> bytes:
    from skimage import data
    return _jpeg(data.astronaut())


def _flipped_in_the_middle_third(blob: bytes, count: int = 20) -> bytes:
    """``count`` bytes spread over the middle third of the entropy-coded data, each XORed with 0x5A;
    bytes of or next to a marker (0xFF) are left alone, so that the scan keeps its markers and only
    the Huffman decoder is put out of step."""
    start = _scan_start(blob)
    end = len(blob) - 2  # the end marker
    third = (end - start) // 3
    b = bytearray(blob)
    flipped = 0
    for pos in np.linspace(start + third, start + 2 * third, 4 * count).astype(int):
        if flipped == count:
            break
        if 0xFF in (b[pos - 1], b[pos], b[pos + 1], b[pos] ^ 0x5A):
            continue
        b[pos] ^= 0x5A
        flipped += 1
    assert flipped == count
    return bytes(b)


ASTRONAUT = _astronaut_jpeg()
DAMAGED = _flipped_in_the_middle_third(ASTRONAUT)
_CROPS = {  # (decoder, its window arguments): windows above, across and below the damage
    "image_crop top": (fn.decoders.image_crop, {"crop": (64, 512), "crop_pos_y": 0.0}),
    "image_crop middle": (fn.decoders.image_crop, {"crop": (64, 64), "crop_pos_y": 0.5, "crop_pos_x": 0.5}),
    "image_crop bottom": (fn.decoders.image_crop, {"crop": (64, 512), "crop_pos_y": 1.0}),
    "image_slice top-left": (fn.decoders.image_slice, {"start": [0, 0], "end": [40, 40], "axes": [0, 1]}),
    "image_random_crop": (fn.decoders.image_random_crop, {}),
    "image": (fn.decoders.image, {}),
}


def test_the_damaged_photograph_is_corrupt_where_libjpeg_only_notices_at_the_end():
    """Decoded whole and tolerated, its rows after the damage are wrong; libjpeg says so only at the
    end marker (the desynchronised scan ends before it)."""
    ours = np.asarray(Image.open(io.BytesIO(DAMAGED)).convert("RGB")).astype(int)
    good = np.asarray(Image.open(io.BytesIO(ASTRONAUT)).convert("RGB")).astype(int)
    rows_wrong = (np.abs(ours - good).max(axis=(1, 2)) > 32)
    assert not rows_wrong[:128].any() and rows_wrong[-128:].all()


@pytest.mark.parametrize("case", list(_CROPS))
def test_every_decoder_refuses_the_damaged_photograph(tmp_path, case):
    decoder, kw = _CROPS[case]
    (path,) = _files(tmp_path, {"astronaut_damaged.jpg": DAMAGED})
    with pytest.raises(RuntimeError) as info:
        _decode_files([path], decoder=decoder, **kw)
    msg = str(info.value)
    assert "astronaut_damaged.jpg" in msg and "extraneous bytes before marker 0xd9" in msg
    assert f"decoders.{case.split()[0]}" in msg


def test_a_file_read_through_before_spares_the_read_but_not_other_bytes(tmp_path):
    """A crop remembers the files it read to the end marker by their bytes: the good photograph's
    later crops stop below the window, and the damaged one (other bytes) is still refused, every
    time."""
    paths = _files(tmp_path, {"astronaut.jpg": ASTRONAUT, "astronaut_damaged.jpg": DAMAGED})
    kw = {"crop": (64, 512), "crop_pos_y": 0.0}
    for _ in range(2):
        _, out = _decode_files(paths[:1], decoder=fn.decoders.image_crop, **kw)
        assert np.array(out[0]).shape == (64, 512, 3)
        with pytest.raises(RuntimeError, match="extraneous bytes before marker 0xd9"):
            _decode_files(paths[1:], decoder=fn.decoders.image_crop, **kw)


@pytest.mark.parametrize("fancy", [False, True])
def test_valid_files_pass_the_read_to_the_end_whatever_the_window(fancy):
    """Windows ending on every row of a 4:2:0 image 16 rows high per MCU row (with plain upsampling
    libjpeg-turbo makes rows in pairs, and skipping from the second of a pair once ran past the
    end of the scan), each on bytes new to the decoder (a counter after the end marker)."""
    from penstock import _engine
    pool = _engine.ThreadPool(1)
    blob = _jpeg(_photo(96, 128, seed=7), subsampling=2)
    whole = _engine.decode_images(pool, np.frombuffer(blob, np.uint8), np.array([[len(blob)]]), np.zeros(1, np.int64),
                                  0, True, fancy_upsampling=fancy)[0].reshape(96, 128, 3)
    for bottom in range(1, 96):
        data = np.frombuffer(blob + bottom.to_bytes(2, "little") + b"new", np.uint8)
        y = max(0, bottom - 9)
        out = _engine.decode_images(pool, data, np.array([[len(data)]]), np.zeros(1, np.int64), 0, True,
                                    np.array([[y, 5, bottom - y, 70]], np.int64), fancy_upsampling=fancy)[0]
        np.testing.assert_array_equal(out.reshape(bottom - y, 70, 3), whole[y:bottom, 5:75])


@pytest.mark.parametrize("case", list(_CROPS))
def test_on_error_skip_replaces_the_damaged_photograph(tmp_path, case):
    """A batch of 4 read from 5 files, the second damaged: it is skipped and the batch refilled with
    the next file, so the batch holds the 4 good ones, each window the good file's."""
    decoder, kw = _CROPS[case]
    good = {f"good{k}.jpg": _jpeg(np.roll(np.asarray(Image.open(io.BytesIO(ASTRONAUT))), 37 * k, axis=1))
            for k in range(4)}
    blobs = {"good0.jpg": good["good0.jpg"], "astronaut_damaged.jpg": DAMAGED,
             **{k: v for k, v in good.items() if k != "good0.jpg"}}
    paths = _files(tmp_path, blobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pipe, out = _decode_files(paths, decoder=decoder, on_error="skip", batch=4, **kw)
    assert [os.path.basename(s) for s in out._source_info] == [f"good{k}.jpg" for k in range(4)]
    # (the next, prefetched, batch skips it too: the reader's stream wraps round)
    assert {os.path.basename(s["source"]) for s in pipe.skipped_samples} == {"astronaut_damaged.jpg"}
    assert "extraneous bytes before marker 0xd9" in pipe.skipped_samples[0]["reason"]


@pytest.mark.parametrize("case", [c for c in _CROPS if c != "image_random_crop"])
def test_a_good_photograph_decodes_as_before(tmp_path, case):
    """The check reads on past the window without changing it: each window is the whole image's."""
    decoder, kw = _CROPS[case]
    (path,) = _files(tmp_path, {"astronaut.jpg": ASTRONAUT})
    _, out = _decode_files([path], decoder=decoder, **kw)
    _, whole = _decode_files([path])
    _, tolerated = _decode_files([path], decoder=decoder, accept_corrupt_jpeg=True, **kw)
    window, whole = np.array(out[0]), np.array(whole[0])
    np.testing.assert_array_equal(window, np.array(tolerated[0]))  # the old path: stop below the window
    h, w = window.shape[:2]
    matches = [(y, x) for y in range(0, 513 - h) for x in (0, (512 - w) // 2, 512 - w)
               if np.array_equal(whole[y:y + h, x:x + w], window)]
    assert matches


# ---- decompression bombs -------------------------------------------------------------------------
def _png_bomb(height: int, width: int) -> bytes:
    """A grey PNG of height x width black pixels: ~4 KB of file per megapixel."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    deflate = zlib.compressobj(1)
    row = bytes(width + 1)  # filter byte 0, then the row
    idat = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """16400 x 16400 pixels, just over the default cap, in 1.2 MB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.png"
    path.write_bytes(_png_bomb(16400, 16400))
    return str(path)


def test_default_cap_refuses_a_bomb_before_decoding(bomb):
    with pytest.raises(RuntimeError) as info:
        _decode_files([bomb])
    msg = str(info.value)
    assert "bomb.png" in msg and "PNG image of 16400x16400 = 268960000 pixels" in msg
    assert f"max_image_pixels={MAX_IMAGE_PIXELS}" in msg and MAX_IMAGE_PIXELS == 16384 * 16384


@pytest.mark.parametrize("decoder", [fn.decoders.image, fn.decoders.image_random_crop, fn.decoders.image_slice])
def test_pipeline_cap_applies_to_every_decoder(tmp_path, decoder):
    paths = _files(tmp_path, {"small.jpg": _jpeg(_photo(8, 8)), "big.jpg": GOOD})
    kw = {"start": [0, 0], "end": [4, 4], "axes": [0, 1]} if decoder is fn.decoders.image_slice else {}
    with pytest.raises(RuntimeError, match=r"(?s)big\.jpg.*64x96 = 6144 pixels.*max_image_pixels=6000"):
        _decode_files(paths, decoder=decoder, pipe={"max_image_pixels": 6000}, **kw)
    _, out = _decode_files(paths, decoder=decoder, pipe={"max_image_pixels": 6144}, **kw)
    assert len(out) == 2


def test_cap_covers_formats_decoded_through_pillow(tmp_path):
    buf = io.BytesIO()
    Image.fromarray(_photo()).save(buf, "TIFF")
    (path,) = _files(tmp_path, {"big.tif": buf.getvalue()})
    with pytest.raises(RuntimeError, match=r"(?s)big\.tif.*TIFF image of 64x96 = 6144 pixels.*max_image_pixels=100"):
        _decode_files([path], pipe={"max_image_pixels": 100})


def test_on_error_skip_drops_images_over_the_cap(tmp_path):
    paths = _files(tmp_path, {"a.jpg": _jpeg(_photo(8, 8)), "big.jpg": GOOD, "b.jpg": _jpeg(_photo(8, 8, 1))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pipe, out = _decode_files(paths, on_error="skip", batch=2, pipe={"max_image_pixels": 1000})
    assert len(out) == 2 and "big.jpg" in pipe.skipped_samples[0]["source"]
    assert "max_image_pixels=1000" in pipe.skipped_samples[0]["reason"]


def test_cap_none_lifts_it_and_bad_values_are_refused(tmp_path):
    (path,) = _files(tmp_path, {"a.jpg": GOOD})
    pipe, out = _decode_files([path], pipe={"max_image_pixels": None})
    assert pipe.max_image_pixels is None and np.array(out[0]).shape == (64, 96, 3)
    for bad in (0, -1, 2.5, True, "1000"):
        with pytest.raises(ValueError, match="max_image_pixels must be a positive int or None"):
            Pipeline(batch_size=1, num_threads=1, device_id=None, max_image_pixels=bad)


def test_peek_image_shape_reads_headers_whatever_their_size(bomb):
    _, out = _decode_files([bomb], decoder=lambda data, on_error: fn.peek_image_shape(data))
    assert np.array(out[0]).tolist() == [16400, 16400, 3]


def test_cap_survives_serialization():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None, max_image_pixels=12345)
    def pipe():
        return fn.decoders.image(fn.external_source(name="jpegs"))

    again = Pipeline.deserialize(pipe().serialize())
    assert again.max_image_pixels == 12345
