"""nvImageCodec through its C API (penstock._cuda._nvimgcodec, the engine's ImageCodecDecoder), on
nvImageCodec's CPU backend into host memory: the same calls the mixed decoders make on the GPU.
The GPU side (DeviceDecoder) is tested on the GPU (tests/test_gpu_operators.py, mixed decoders);
its scratch bookkeeping here, on a stand-in device context."""
import io

import numpy as np
import pytest
from PIL import Image

from penstock._cuda import _nvimgcodec

rng = np.random.default_rng(11)


def _jpeg(h, w, exif_orientation=None):
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx + yy) % 256], -1)
    px = np.clip(base + rng.normal(0, 10, base.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    img = Image.fromarray(px)
    if exif_orientation is None:
        img.save(out, "JPEG", quality=92)
    else:
        exif = Image.Exif()
        exif[0x0112] = exif_orientation
        img.save(out, "JPEG", quality=92, exif=exif.tobytes())
    return np.frombuffer(out.getvalue(), np.uint8)


def _reference(data, orient=True):
    img = Image.open(io.BytesIO(data.tobytes()))
    if orient:
        from PIL import ImageOps
        img = ImageOps.exif_transpose(img)
    return np.asarray(img.convert("RGB"))


@pytest.fixture(scope="module")
def decoder():
    return _nvimgcodec.open_decoder(_nvimgcodec.CPU_ONLY, 2, [("cpu", 1.0, _nvimgcodec.FIXED)])


def _pack(datas):
    lengths = np.array([len(d) for d in datas], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.concatenate(datas), starts, lengths


@pytest.mark.parametrize("fancy", [False, True])
def test_decoder_options_name_the_upsampling_and_the_hardware_decoders_batch(fancy):
    text = _nvimgcodec.decoder_options(fancy, 256, 0, 500, 640 * 480)
    options = dict(token.split("=") for token in text.split())
    assert options["nvjpeg_cuda_decoder:hybrid_huffman_threshold"] == "307200"
    assert "hybrid_huffman_threshold=4294967295" in _nvimgcodec.decoder_options(fancy, 1, 0, 0, -1)  # as uint32
    assert options["nvjpeg_hw_decoder:fancy_upsampling"] == options["nvjpeg_cuda_decoder:fancy_upsampling"] \
        == str(int(fancy))
    assert options["nvjpeg_hw_decoder:preallocate_batch_size"] == "256"
    assert options["nvjpeg_hw_decoder:preallocate_width_hint"] == "1"  # no hint: nvImageCodec's least
    assert options["nvjpeg_hw_decoder:preallocate_height_hint"] == "500"
    _nvimgcodec.open_decoder(_nvimgcodec.CPU_ONLY, 1, [("cpu", 1.0, _nvimgcodec.FIXED)], text)  # accepted


def test_the_default_gives_the_jpegs_to_the_hardware_engines_alone_and_a_given_load_splits_them_as_dali():
    assert _nvimgcodec.jpeg_backends(0.65, True) == [("hw", 0.65, _nvimgcodec.ADAPTIVE)]
    assert _nvimgcodec.jpeg_backends(0.3, False) == [("hw", 0.3, _nvimgcodec.FIXED), ("hybrid", 1.0, _nvimgcodec.FIXED)]
    assert _nvimgcodec.jpeg_backends(0.0, False) == [("hybrid", 1.0, _nvimgcodec.FIXED)]  # the CUDA decoder alone


def test_a_gpu_without_hardware_jpeg_engines_gets_the_cuda_decoder(monkeypatch):
    opened = []

    def open_decoder(device_id, cpu_threads, backends, options=""):
        opened.append(backends)
        if any(name == "hw" for name, _, _ in backends):
            raise RuntimeError("nvImageCodec: creating the decoder failed with status 7 (ARCH_MISMATCH)")
        return "the CUDA decoder"
    monkeypatch.setattr(_nvimgcodec, "open_decoder", open_decoder)
    assert _nvimgcodec.open_jpeg_decoder(0, 2, 0.65, True, "") == "the CUDA decoder"
    assert opened == [[("hw", 0.65, _nvimgcodec.ADAPTIVE)], [("hybrid", 1.0, _nvimgcodec.FIXED)]]


def test_a_decoder_no_backend_opens_says_nvimagecodecs_status_by_name():
    # on the CPU no GPU backend opens: the default list's error, with the status named
    with pytest.raises(RuntimeError, match=r"status 7 \(ARCH_MISMATCH\)"):
        _nvimgcodec.open_jpeg_decoder(_nvimgcodec.CPU_ONLY, 1, 0.65, True, "")
    with pytest.raises(RuntimeError, match=r"status 7 \(ARCH_MISMATCH\)"):
        _nvimgcodec.open_jpeg_decoder(_nvimgcodec.CPU_ONLY, 1, 0.5, False, "")


def test_the_library_is_found():
    assert _nvimgcodec.library_dir() is not None


def test_a_batch_decodes_into_the_given_rows_as_pillow_does(decoder):
    datas = [_jpeg(h, w) for h, w in [(31, 45), (64, 48), (17, 80), (1, 1)]]
    encoded, starts, lengths = _pack(datas)
    shapes = np.array([_reference(d).shape[:2] for d in datas], np.int64)
    pitches = shapes[:, 1] * 3 + 7  # rows further apart than the image is wide
    outs = [np.full((h, p), 1, np.uint8) for (h, _), p in zip(shapes, pitches)]
    parsed = decoder.parse(encoded, starts, lengths, shapes, True)
    assert parsed.parsed().all()
    decoded, seconds = decoder.decode(parsed, np.array([o.ctypes.data for o in outs], np.uint64), pitches, 0)
    assert decoded.all() and seconds > 0
    for data, out, (h, w) in zip(datas, outs, shapes):
        got = out[:, :w * 3].reshape(h, w, 3)
        np.testing.assert_array_equal(got, _reference(data))
        assert (out[:, w * 3:] == 1).all()  # nothing written past a row


def test_a_cpu_only_decoder_keeps_no_codec_memory(decoder):
    # a GPU decoder's codecs allocate from memory it keeps (test_gpu_operators.py); the host's, malloc
    none = {"blocks": 0, "bytes": 0, "reused": 0}
    assert decoder.memory() == {"device": none, "pinned": none}
    assert _nvimgcodec.codec_memory() == dict.fromkeys(
        ("decoders", "device_blocks", "device_bytes", "pinned_blocks", "pinned_bytes", "reused"), 0)  # none open


def test_codec_memory_sums_the_open_gpu_decoders(monkeypatch):
    # on stand-ins for the device context and the native decoder: what the benchmarks read
    import contextlib
    import types

    class Native:
        def __init__(self, scale):
            self.scale = scale

        def memory(self):
            return {"device": {"blocks": 2 * self.scale, "bytes": 2048 * self.scale, "reused": 8 * self.scale},
                    "pinned": {"blocks": self.scale, "bytes": 512 * self.scale, "reused": self.scale}}
    natives = iter([Native(1), Native(10), Native(100)])
    monkeypatch.setattr(_nvimgcodec, "DeviceContext", lambda device_id: types.SimpleNamespace())
    monkeypatch.setattr(_nvimgcodec, "open_jpeg_decoder", lambda *args: next(natives))
    ctx = types.SimpleNamespace(device_id=0, device=contextlib.nullcontext())
    decoders = [_nvimgcodec.DeviceDecoder(ctx, "", 2, 1.0, True) for _ in range(3)]
    decoders[2].native = None  # closed
    assert _nvimgcodec.codec_memory() == {"decoders": 2, "device_blocks": 22, "device_bytes": 22528,
                                          "pinned_blocks": 11, "pinned_bytes": 5632, "reused": 99}
    del decoders
    assert _nvimgcodec.codec_memory()["decoders"] == 0  # gone with them


def test_a_sample_with_address_0_waits_for_a_later_call(decoder):
    datas = [_jpeg(12, 20), _jpeg(14, 9), _jpeg(7, 7)]
    encoded, starts, lengths = _pack(datas)
    shapes = np.array([_reference(d).shape[:2] for d in datas], np.int64)
    outs = [np.zeros((h, w, 3), np.uint8) for h, w in shapes]
    addresses = np.array([o.ctypes.data for o in outs], np.uint64)
    parsed = decoder.parse(encoded, starts, lengths, shapes, True)
    first, _ = decoder.decode(parsed, np.where([True, False, True], addresses, np.uint64(0)), shapes[:, 1] * 3, 0)
    assert first.tolist() == [True, False, True] and not outs[1].any()
    second, _ = decoder.decode(parsed, np.where([False, True, False], addresses, np.uint64(0)), shapes[:, 1] * 3, 0)
    assert second.tolist() == [False, True, False]
    for data, out in zip(datas, outs):
        np.testing.assert_array_equal(out, _reference(data))


def test_a_closed_batch_has_let_go_of_its_code_streams_and_is_refused(decoder):
    """The mixed decoders close a batch once decoded: its code streams are destroyed without the GIL."""
    datas = [_jpeg(12, 20), _jpeg(14, 9)]
    encoded, starts, lengths = _pack(datas)
    shapes = np.array([_reference(d).shape[:2] for d in datas], np.int64)
    outs = [np.zeros((h, w, 3), np.uint8) for h, w in shapes]
    addresses = np.array([o.ctypes.data for o in outs], np.uint64)
    parsed = decoder.parse(encoded, starts, lengths, shapes, True, np.array([[0, 0, 12, 20], [2, 1, 5, 6]]))
    assert decoder.decode(parsed, addresses, np.array([60, 18]), 0)[0].all()
    parsed.close()
    parsed.close()  # once is enough
    assert parsed.parsed().all()  # what parsed is still known
    with pytest.raises(ValueError, match="the parsed batch was closed"):
        decoder.decode(parsed, addresses, np.array([60, 18]), 0)
    np.testing.assert_array_equal(outs[0], _reference(datas[0]))


def test_windows_decode_to_their_region_as_a_crop_of_the_whole_image(decoder):
    datas = [_jpeg(h, w) for h, w in [(64, 80), (48, 48), (33, 57), (40, 24)]]
    encoded, starts, lengths = _pack(datas)
    shapes = np.array([_reference(d).shape[:2] for d in datas], np.int64)
    # a window off the 8x8 blocks, a whole image, a window to the bottom-right corner, one row
    windows = np.array([[5, 11, 30, 41], [0, 0, 48, 48], [9, 16, 24, 41], [17, 0, 1, 24]], np.int64)
    outs = [np.full((h, w, 3), 1, np.uint8) for h, w in windows[:, 2:]]
    parsed = decoder.parse(encoded, starts, lengths, shapes, True, windows)
    assert parsed.parsed().all()
    decoded, _ = decoder.decode(parsed, np.array([o.ctypes.data for o in outs], np.uint64), windows[:, 3] * 3, 0)
    assert decoded.all()
    for data, out, (y, x, h, w) in zip(datas, outs, windows):
        np.testing.assert_array_equal(out, _reference(data)[y:y + h, x:x + w])


def test_a_window_outside_its_image_leaves_the_sample_out(decoder):
    datas = [_jpeg(16, 16), _jpeg(16, 16)]
    encoded, starts, lengths = _pack(datas)
    shapes = np.array([[16, 16], [16, 16]], np.int64)
    windows = np.array([[8, 8, 9, 8], [0, 0, 16, 16]], np.int64)
    assert decoder.parse(encoded, starts, lengths, shapes, True, windows).parsed().tolist() == [False, True]
    with pytest.raises(ValueError, match="one window"):
        decoder.parse(encoded, starts, lengths, shapes, True, windows[:1])


def test_exif_oriented_images_are_left_out_when_orientation_is_asked_for(decoder):
    # nvImageCodec's CPU backend writes them unturned: the caller decodes them itself
    data = _jpeg(20, 36, exif_orientation=6)  # rotated 90 degrees: displayed 36 x 20
    encoded, starts, lengths = _pack([data])
    for shape in ((36, 20), (20, 36)):
        assert not decoder.parse(encoded, starts, lengths, np.array([shape], np.int64), True).parsed().any()
    out = np.zeros((20, 36, 3), np.uint8)
    parsed = decoder.parse(encoded, starts, lengths, np.array([[20, 36]], np.int64), False)
    assert decoder.decode(parsed, np.array([out.ctypes.data], np.uint64), np.array([36 * 3]), 0)[0].all()
    np.testing.assert_array_equal(out, _reference(data, orient=False))


def test_corrupt_or_unexpected_samples_are_left_out_and_others_decode(decoder):
    good, other = _jpeg(24, 32), _jpeg(16, 16)
    corrupt = np.frombuffer(b"\xff\xd8\xff\xe0 not a jpeg at all", np.uint8)
    truncated = good[:60]
    encoded, starts, lengths = _pack([good, corrupt, other, truncated])
    shapes = np.array([[24, 32], [8, 8], [17, 16], [24, 32]], np.int64)  # `other` is not 17 rows high
    parsed = decoder.parse(encoded, starts, lengths, shapes, True)
    assert parsed.parsed()[:3].tolist() == [True, False, False]
    outs = [np.zeros((h, w, 3), np.uint8) for h, w in shapes]
    decoded, _ = decoder.decode(parsed, np.array([o.ctypes.data for o in outs], np.uint64), shapes[:, 1] * 3, 0)
    assert decoded[0] and not decoded[1:3].any()
    assert not decoded[3] or not (outs[3] == 0).all()  # a truncated stream, if decoded, was written
    np.testing.assert_array_equal(outs[0], _reference(good))
    assert not outs[1].any() and not outs[2].any()  # left-out samples were not written


def test_bad_arguments_raise_before_decoding(decoder):
    data = _jpeg(8, 8)
    encoded, starts, lengths = _pack([data])
    with pytest.raises(IndexError, match="outside the encoded buffer"):
        decoder.parse(encoded, starts, lengths + 1, np.array([[8, 8]], np.int64), True)
    with pytest.raises(ValueError, match="one start, length and"):
        decoder.parse(encoded, starts, lengths, np.array([[8]], np.int64), True)
    with pytest.raises(ValueError, match="one start, length and"):
        decoder.parse(encoded, starts, lengths, np.array([[8, 8], [8, 8]], np.int64), True)
    # a batch's (H, W, C) shape rows are taken as they are: H and W lead each row
    assert decoder.parse(encoded, starts, lengths, np.array([[8, 8, 3]], np.int64), True).parsed().tolist() == [True]
    parsed = decoder.parse(encoded, starts, lengths, np.array([[8, 8]], np.int64), True)
    out = np.zeros(8 * 8 * 3, np.uint8)
    with pytest.raises(ValueError, match="row pitch is less than its width"):
        decoder.decode(parsed, np.array([out.ctypes.data], np.uint64), np.array([8 * 3 - 1]), 0)
    with pytest.raises(ValueError, match="one address and pitch"):
        decoder.decode(parsed, np.zeros(2, np.uint64), np.array([24, 24]), 0)
    # CUDA work around the decoding needs a device decoder, and a kernel needs its launch shape
    with pytest.raises(ValueError, match="CPU-only decoder queues no CUDA work"):
        decoder.decode(parsed, np.array([out.ctypes.data], np.uint64), np.array([24]), 0, done_event=1)
    with pytest.raises(ValueError, match="needs a function, a grid and a block"):
        decoder.decode(parsed, np.array([out.ctypes.data], np.uint64), np.array([24]), 0, then=(1, 0, 256, []))


def test_a_library_that_cannot_load_is_a_runtime_error():
    from penstock import _engine
    with pytest.raises(RuntimeError, match="nvImageCodec: cannot load /nonexistent/libnvimgcodec.so.0"):
        _engine.ImageCodecDecoder("/nonexistent/libnvimgcodec.so.0", "/nonexistent", _nvimgcodec.CPU_ONLY, 1,
                                  [(1, 1.0, 2)], "")


class _FakeMemory:
    def __init__(self, size):
        self.size, self.ptr = size, 4096 * size


def _scratch_holder(events):
    """A DeviceDecoder with only its scratch bookkeeping, on a stand-in device context that logs
    stream synchronizations and allocations."""
    import threading
    import types
    d = object.__new__(_nvimgcodec.DeviceDecoder)
    d._scratch, d._scratch_users, d._scratch_change = None, 0, threading.Condition()
    def memory(size):
        events.append(("alloc", size))
        return _FakeMemory(size)

    cuda = types.SimpleNamespace(Memory=memory)
    d.own = types.SimpleNamespace(device=_NullContext(), cp=types.SimpleNamespace(cuda=cuda),
                                  stream=types.SimpleNamespace(synchronize=lambda: events.append(("sync",))))
    return d


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_scratch_grows_only_once_the_batches_using_it_are_done():
    import threading
    import time
    events = []
    d = _scratch_holder(events)
    first = d._use_scratch(1000)
    assert events == [("alloc", int(1000 * (1 + _nvimgcodec._SCRATCH_SPARE)))]
    assert d._use_scratch(900) == first  # fits: shared by two batches in flight
    d._release_scratch()
    grown = []
    waiter = threading.Thread(target=lambda: grown.append(d._use_scratch(5000)))
    waiter.start()
    time.sleep(0.2)
    assert not grown and len(events) == 1  # the first batch still queues work on the old scratch
    d._release_scratch()
    waiter.join(5)
    # the old scratch's last readers finished on the stream before the larger one replaced it
    assert events[1:] == [("sync",), ("alloc", int(5000 * (1 + _nvimgcodec._SCRATCH_SPARE)))]
    assert grown == [d._scratch.ptr] and d._scratch_users == 1
    d._release_scratch()
    assert d._use_scratch(0) == d._scratch.ptr and len(events) == 3  # no windows: nothing to grow


def test_the_idle_clock_counts_the_time_between_turns_once():
    clock = _nvimgcodec.IdleClock()
    clock.turn(10.0, 2.0)  # the first turn: nothing before it
    clock.turn(13.0, 1.0)  # began at 12.0, 2 s after the first ended
    clock.turn(13.5, 1.0)  # began before the last one ended (a turn taken straight after): no idle
    assert clock.take() == pytest.approx((2.0, 0.0)) and clock.take() == (0.0, 0.0)
    clock.turn(20.0, 0.5)
    assert clock.take() == pytest.approx((6.0, 0.0))


def test_the_idle_clock_tells_the_time_before_a_call_came_from_its_preparation():
    clock = _nvimgcodec.IdleClock()
    clock.turn(10.0, 1.0, arrived=8.0)
    clock.turn(15.0, 2.0, arrived=11.5)  # idle 10-13: unfed until 11.5, then the call's preparation
    clock.turn(16.0, 1.0, arrived=12.0)  # came while the last one decoded, its turn straight after
    clock.turn(18.0, 1.0)  # a later turn of the same call: 1 s idle, none unfed
    assert clock.take() == pytest.approx((4.0, 1.5))
    clock.turn(25.0, 1.0, arrived=30.0)  # (a clock read late: never more unfed than idle)
    assert clock.take() == pytest.approx((6.0, 6.0))
