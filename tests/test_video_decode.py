"""decoders.video, experimental.decoders.video and experimental.inputs.video on the CPU: videos the
tests encode (every codec and container this FFmpeg writes, constant and variable frame rates),
decoded frames matched to the encoded ones, frame selection, padding, errors."""
import io

import numpy as np
import pytest

from _video_data import KINDS, check_frames, clip, encoded
from penstock import fn, pipeline_def


def _decode(videos, batch=None, op="decoders.video", **kw):
    data = [np.frombuffer(v, np.uint8) for v in videos]

    @pipeline_def(batch_size=batch or len(data), num_threads=2, device_id=None)
    def p():
        enc = fn.external_source(source=lambda: data)
        f = fn
        for part in op.split("."):
            f = getattr(f, part)
        return f(enc, **kw)
    pipe = p()
    pipe.build()
    out, = pipe.run()
    assert out.layout() == "FHWC"
    return [np.array(out.at(i)) for i in range(len(out))]


@pytest.mark.parametrize("codec,container", KINDS)
def test_every_frame_of_every_codec(codec, container):
    data = encoded(codec, container)
    out, = _decode([data])
    assert out.dtype == np.uint8 and out.shape == (30, 48, 64, 3)
    check_frames(out, clip(), np.arange(30), codec)


def test_10bit_video_is_converted_as_8bit_video_is():
    """10-bit HEVC's samples are converted by the engine as 8-bit ones are (a 10-bit level / 4),
    which NVDEC's 10-bit frames (P016) are converted alike on the GPU."""
    import av
    from penstock import _engine
    from penstock.operators._video_codec import _yuv420_to_rgb
    data = encoded("hevc", "mkv", frames=8, pix_fmt="yuv420p10le")
    out, = _decode([data])
    check_frames(out, clip(8), np.arange(8), "hevc")
    with av.open(io.BytesIO(data)) as c:
        frames = list(c.decode(video=0))
    assert frames[0].format.name == "yuv420p10le"
    expect = np.zeros_like(out)
    _yuv420_to_rgb(_engine.ThreadPool(1), list(enumerate(frames)), expect)
    np.testing.assert_array_equal(out, expect)
    # the 10-bit planes as 8-bit (rounded) give the same colours within a level of rounding
    eight = [av.VideoFrame.from_ndarray(f.to_ndarray(format="yuv420p"), format="yuv420p") for f in frames]
    rounded = np.zeros_like(out)
    _yuv420_to_rgb(_engine.ThreadPool(1), list(enumerate(eight)), rounded)
    assert np.abs(rounded.astype(int) - out).max() <= 3


@pytest.mark.parametrize("codec,container", [("h264", "mp4"), ("vp9", "webm"), ("h264", "mkv")])
def test_variable_frame_rate_and_b_frames(codec, container):
    data = encoded(codec, container, vfr=True)
    out, = _decode([data], frames=[29, 0, 14, 14, 7])
    check_frames(out, clip(), [29, 0, 14, 14, 7], codec)


def test_frame_selection_arguments():
    data = encoded("h264", "mp4")
    a, = _decode([data], start_frame=3, end_frame=20, stride=4)
    check_frames(a, clip(), [3, 7, 11, 15, 19], "h264")
    b, = _decode([data], start_frame=25, sequence_length=4, stride=2, pad_mode="edge")
    check_frames(b, clip(), [25, 27, 29, 29], "h264")
    c, = _decode([data], start_frame=26, sequence_length=6, pad_mode="reflect")
    check_frames(c, clip(), [26, 27, 28, 29, 28, 27], "h264")
    d, = _decode([data], start_frame=26, sequence_length=6, pad_mode="symmetric")
    check_frames(d, clip(), [26, 27, 28, 29, 29, 28], "h264")
    e, = _decode([data], start_frame=28, sequence_length=4, fill_value=[10, 20, 30])
    check_frames(e[:2], clip(), [28, 29], "h264")
    assert (e[2:] == np.array([10, 20, 30], np.uint8)).all()


def test_per_sample_arguments_and_mixed_videos():
    videos = [encoded("h264", "mp4"), encoded("vp9", "webm", frames=20, height=32, width=48, seed=1)]
    starts = [np.array(5, np.int32), np.array(2, np.int32)]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def p():
        enc = fn.external_source(source=lambda: [np.frombuffer(v, np.uint8) for v in videos])
        start = fn.external_source(source=lambda: starts)
        return fn.experimental.decoders.video(enc, start_frame=start, sequence_length=3, stride=3)
    pipe = p()
    out, = pipe.run()
    check_frames(np.array(out.at(0)), clip(), [5, 8, 11], "h264")
    check_frames(np.array(out.at(1)), clip(20, 32, 48, 1), [2, 5, 8], "vp9")


def test_seeking_without_the_index_gives_the_same_frames():
    data = encoded("h264", "mp4", gop=5)
    with_index, = _decode([data], frames=[22, 3, 17])
    without, = _decode([data], frames=[22, 3, 17], build_index=False)
    np.testing.assert_array_equal(with_index, without)


def test_errors_name_the_operator_and_sample():
    data = encoded("h264", "mp4")
    with pytest.raises(ValueError, match="cannot be used"):
        _decode([data], frames=[1], start_frame=2)
    with pytest.raises(ValueError, match="'end_frame' and 'sequence_length'"):
        _decode([data], end_frame=3, sequence_length=2)
    with pytest.raises(RuntimeError, match="out of range.*pad_mode='none'"):
        _decode([data], frames=[3, 30], pad_mode="none")
    short, = _decode([data], start_frame=28, sequence_length=4, pad_mode="none")
    check_frames(short, clip(), [28, 29], "h264")
    with pytest.raises(ValueError, match="pad_mode"):
        _decode([data], pad_mode="wrap")
    with pytest.raises(RuntimeError, match="(?s)decoders.video.*(cannot be read|decoding failed|ended before)"):
        _decode([b"\x00\x00\x01 not a video at all" * 40])
    truncated = data[:len(data) // 2]
    with pytest.raises(RuntimeError, match="decoders.video"):
        _decode([truncated])


def _video_input(video, sequence_length, batch, policy="partial", iterations=None):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, prefetch_queue_depth=1)
    def p():
        return fn.experimental.inputs.video(name="vid", sequence_length=sequence_length,
                                            last_sequence_policy=policy)
    pipe = p()
    pipe.build()
    pipe.feed_input("vid", [np.frombuffer(video, np.uint8)])
    batches = []
    for _ in range(iterations):
        out, = pipe.run()
        batches.append([np.array(out.at(i)) for i in range(len(out))])
    return batches, pipe


@pytest.mark.parametrize("policy", ["partial", "pad"])
def test_input_video_hands_out_consecutive_sequences(policy):
    data = encoded("h264", "mp4", frames=23)
    batches, pipe = _video_input(data, 4, 2, policy, iterations=3)
    sizes = [[len(s) for s in b] for b in batches]
    assert sizes == [[4, 4], [4, 4], [4, 3 if policy == "partial" else 4]]
    frames = np.concatenate([s for b in batches for s in b])
    check_frames(frames[:23], clip(23), np.arange(23), "h264")
    if policy == "pad":
        assert not frames[23:].any()
    with pytest.raises(RuntimeError, match="feed_input"):
        pipe.run()


def test_input_video_takes_one_video_per_feed():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.experimental.inputs.video(name="vid", sequence_length=2)
    pipe = p()
    pipe.build()
    data = np.frombuffer(encoded("h264", "mp4"), np.uint8)
    with pytest.raises(RuntimeError, match="exactly one"):
        pipe.feed_input("vid", [data, data])


def test_on_error_skip_replaces_a_corrupt_video(tmp_path):
    from _video_data import write
    good = encoded("h264", "mp4")
    paths = [write(tmp_path, "a.mp4", good), write(tmp_path, "broken.mp4", good[:300]),
             write(tmp_path, "c.mp4", good)]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def p():
        data, _ = fn.readers.file(files=paths)
        return fn.decoders.video(data, sequence_length=2, on_error="skip")
    pipe = p()
    pipe.build()
    with pytest.warns(RuntimeWarning, match="broken.mp4"):
        out, = pipe.run()
    assert [np.array(out.at(i)).shape for i in range(2)] == [(2, 48, 64, 3)] * 2
    assert [s["source"] for s in pipe.skipped_samples][0].endswith("broken.mp4")


def test_pyav_logging_is_left_as_it_was(tmp_path):
    """A Python log level in PyAV has FFmpeg's codec threads take the GIL to log, and a
    frame-threaded decoder that PyAV closes with the GIL held then deadlocks on an error of its
    own threads: decoding (corrupt videos included) leaves PyAV's logging alone."""
    import av
    before = av.logging.get_level()
    test_on_error_skip_replaces_a_corrupt_video(tmp_path)
    assert av.logging.get_level() == before
