"""Which videos the GPU video operators send to NVDEC, pinned without a GPU: the stream's codec as
FFmpeg names it (AV1, whichever software decoder PyAV opened for it), 4:2:0 samples, and what
NVDEC's capability query answers for that codec and bit depth (a stand-in for PyNvVideoCodec's
GetDecoderCaps here); then how the frames PyNvVideoCodec returns are checked: their timestamps,
and the NV12/P016 buffers' layout."""
from types import SimpleNamespace

import numpy as np
import pytest

from _video_data import encoded
from penstock.operators import _video_nvdec
from penstock.operators._video_codec import VideoIndex, index_of
from penstock.operators._video_nvdec import NvdecCaps, VideoDevice, nvdec_caps, nvdec_refusal

av = pytest.importorskip("av")

# capabilities of the kind a current GPU's NVDEC answers for 4:2:0 (illustrative sizes; 10-bit
# for HEVC, VP9 and AV1 only)
CAPS = {("h264", 8): NvdecCaps(True, 48, 16, 4096, 4096, 65536),
        ("hevc", 8): NvdecCaps(True, 144, 144, 8192, 8192, 262144),
        ("hevc", 10): NvdecCaps(True, 144, 144, 8192, 8192, 262144),
        ("vp8", 8): NvdecCaps(True, 48, 16, 4096, 4096, 65536),
        ("vp9", 8): NvdecCaps(True, 128, 128, 8192, 8192, 262144),
        ("av1", 8): NvdecCaps(True, 128, 128, 8192, 8192, 262144)}


def caps_of(caps: dict):
    return lambda codec, depth: caps.get((codec, depth), NvdecCaps(False))


def _index(codec: str, width: int = 176, height: int = 144, pix_fmt: str = "yuv420p") -> VideoIndex:
    return VideoIndex(np.arange(3), np.array([True, False, False]), 1, height, width, codec, None, False, pix_fmt)


@pytest.mark.parametrize("codec,container", [("h264", "mp4"), ("hevc", "mkv"), ("vp9", "webm"), ("av1", "mkv"),
                                             ("vp8", "webm"), ("mpeg4", "avi"), ("mjpeg", "avi")])
def test_the_index_names_the_streams_codec_not_the_decoder(codec, container):
    index = index_of(av, encoded(codec, container, frames=4), "clip")
    assert index.codec == codec  # AV1 is decoded by libdav1d, VP9 by libvpx-vp9 or FFmpeg's own


@pytest.mark.parametrize("codec", ["h264", "hevc", "vp8", "vp9", "av1"])
def test_the_codecs_nvdec_decodes_go_to_it(codec):
    assert nvdec_refusal(_index(codec), "rgb24", 3, caps_of(CAPS)) == ""


def test_10bit_video_goes_to_nvdec_where_it_decodes_that_depth():
    assert nvdec_refusal(_index("hevc", pix_fmt="yuv420p10le"), "rgb24", 3, caps_of(CAPS)) == ""
    assert "does not decode h264 (10-bit 4:2:0)" in nvdec_refusal(_index("h264", pix_fmt="yuv420p10le"), "rgb24",
                                                                  3, caps_of(CAPS))


@pytest.mark.parametrize("index,caps,why", [
    (_index("mpeg4"), CAPS, "NVDEC does not decode mpeg4"),
    (_index("h264", pix_fmt="yuv444p"), CAPS, "4:2:0 video, not yuv444p"),
    (_index("h264", pix_fmt="yuv422p10le"), CAPS, "4:2:0 video, not yuv422p10le"),
    (_index("av1"), {**CAPS, ("av1", 8): NvdecCaps(False)}, "this GPU's NVDEC does not decode av1 (8-bit 4:2:0)"),
    (_index("hevc", 64, 48), CAPS, "decodes hevc from 144x144 to 8192x8192, not 64x48"),
    (_index("h264", 8192, 64), CAPS, "decodes h264 from 48x16 to 4096x4096, not 8192x64"),
    (_index("h264", 4096, 4096), {("h264", 8): NvdecCaps(True, 48, 16, 4096, 4096, 32768)}, "up to 32768 macroblocks"),
    (_index("vp9"), {("vp9", 8): NvdecCaps(False, why="NVDEC's capabilities cannot be read: boom")}, "cannot be read"),
])
def test_what_nvdec_does_not_take_is_refused_with_the_reason(index, caps, why):
    assert why in nvdec_refusal(index, "rgb24", 3, caps_of(caps))


def test_ycbcr_output_stays_on_the_cpu():
    assert "converted to RGB only" in nvdec_refusal(_index("h264"), "yuv444p", 3, caps_of(CAPS))


class _FakePyNvVideoCodec:
    """PyNvVideoCodec's capability query as far as the routing uses it, counting the calls."""
    cudaVideoCodec = SimpleNamespace(H264="H264", HEVC="HEVC", VP8="VP8", VP9="VP9", AV1="AV1")

    def __init__(self, supported: set):
        self.supported, self.calls = supported, []

    def GetDecoderCaps(self, gpuid: int, codec: str, bitdepth: int) -> dict:  # noqa: N802 - PyNvVideoCodec's name
        self.calls.append((gpuid, codec, bitdepth))
        supported = (codec, bitdepth) in self.supported
        return {"codec_id": 0, "chromaformat_id": 1, "bitdepth": bitdepth, "supported": int(supported),
                "num_decoder_engines": 7 if supported else 0, "width_max": 8192, "height_max": 8192,
                "mb_num_max": 262144, "width_min": 144, "height_min": 144}


def test_the_capability_query_decides_and_is_asked_once_per_gpu_codec_and_depth(monkeypatch):
    nvc = _FakePyNvVideoCodec({("HEVC", 8), ("AV1", 8), ("HEVC", 10)})
    monkeypatch.setattr(_video_nvdec, "load_pynvvideocodec", lambda: (nvc, ""))
    monkeypatch.setattr(_video_nvdec, "_caps", {})
    device = VideoDevice("decoders.video ('v')")
    indices = [_index("av1"), _index("hevc"), _index("vp9"), _index("av1"), _index("hevc", 64, 48),
               _index("hevc", pix_fmt="yuv420p10le"), _index("av1", pix_fmt="yuv420p10le")]
    with pytest.warns(RuntimeWarning) as caught:
        taken = device.takes(3, list("abcdefg"), indices, "rgb24", 3)
    assert taken == [True, True, False, True, False, True, False]
    assert sorted(nvc.calls) == [(3, "AV1", 8), (3, "AV1", 10), (3, "HEVC", 8), (3, "HEVC", 10), (3, "VP9", 8)]
    messages = [str(w.message) for w in caught]
    assert any("does not decode vp9" in m for m in messages) and any("not 64x48" in m for m in messages)
    assert any("does not decode av1 (10-bit" in m for m in messages)
    assert all(m.startswith("decoders.video ('v'): decoding on the CPU and uploading the frames") for m in messages)


def test_a_failing_capability_query_sends_the_video_to_the_cpu(monkeypatch):
    def failing(**_):
        raise RuntimeError("cuvidGetDecoderCaps failed")
    nvc = SimpleNamespace(cudaVideoCodec=_FakePyNvVideoCodec.cudaVideoCodec, GetDecoderCaps=failing)
    monkeypatch.setattr(_video_nvdec, "_caps", {})
    caps = nvdec_caps(nvc, 0, "h264", 8)
    assert not caps.supported and "RuntimeError: cuvidGetDecoderCaps failed" in caps.why


class _FakeSimpleDecoder:
    """PyNvVideoCodec's SimpleDecoder as far as fetching frames goes: frame index j is the frame
    with timestamp ``timestamps[j]`` (presentation order, decoding order, or something wrong)."""

    def __init__(self, timestamps):
        self.timestamps, self.asked = list(timestamps), []

    def get_batch_frames_by_index(self, indices):
        self.asked.append(list(indices))
        return [SimpleNamespace(timestamp=self.timestamps[j]) for j in indices]


@pytest.fixture(scope="module")
def hevc_with_b_frames():
    """x265's clip (B-frames: frames decode in another order than they are shown) and its packets'
    timestamps in decoding order."""
    import io
    data = encoded("hevc", "mkv", frames=30)
    with av.open(io.BytesIO(data)) as c:
        decoding_order = [p.pts for p in c.demux(video=0) if p.size]
    assert decoding_order != sorted(decoding_order)
    return index_of(av, data, "clip"), decoding_order


def test_frames_numbered_in_presentation_order_are_taken_as_returned(hevc_with_b_frames):
    index, _ = hevc_with_b_frames
    decoder = _FakeSimpleDecoder(index.pts)
    frames, why = _video_nvdec.presented_frames(decoder, index, [3, 5, 7, 21], "clip")
    assert why == "" and [f.timestamp for f in frames] == list(index.pts[[3, 5, 7, 21]])
    assert decoder.asked == [[3, 5, 7, 21]]


def test_frames_numbered_in_decoding_order_are_asked_for_by_their_places_in_it(hevc_with_b_frames):
    """What the wrong HEVC frames on NVDEC came from: with B-frames, the k-th frame decoded is not
    the k-th shown. The timestamps tell, and the frames are asked for again where they decode."""
    index, decoding_order = hevc_with_b_frames
    decoder = _FakeSimpleDecoder(decoding_order)
    wanted = [3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25]
    frames, why = _video_nvdec.presented_frames(decoder, index, wanted, "clip")
    assert why == "" and [f.timestamp for f in frames] == list(index.pts[wanted])
    assert len(decoder.asked) == 2 and decoder.asked[1] != wanted


def test_frames_that_no_order_explains_are_refused(hevc_with_b_frames):
    index, _ = hevc_with_b_frames
    decoder = _FakeSimpleDecoder(list(index.pts[1:]) + [10 ** 6])  # one frame off
    frames, why = _video_nvdec.presented_frames(decoder, index, [0, 4], "clip")
    assert frames is None
    assert f"frame 0 of clip has the timestamp {index.pts[1]}, not the demuxer's {index.pts[0]}" in why


def test_a_stream_without_b_frames_is_asked_once():
    index = index_of(av, encoded("vp9", "webm", frames=12), "clip")
    decoder = _FakeSimpleDecoder(list(index.pts[2:]) + [0, 0])
    frames, why = _video_nvdec.presented_frames(decoder, index, [1, 2], "clip")
    assert frames is None and len(decoder.asked) == 1  # decoding order is presentation order: nothing else to try


@pytest.mark.parametrize("shape,strides,dtype,layout", [
    ((72, 64), (64, 1), np.uint8, (48, 1)),      # NV12 of 48 rows, as PyNvVideoCodec copies it out
    ((96, 64), (128, 1), np.uint8, (64, 1)),     # a surface of 64 coded rows, pitch 128, for a 64x48 frame
    ((75, 64), (64, 1), np.uint8, (50, 1)),      # 50 rows: 25 chroma rows
    ((72, 64), (128, 2), np.uint16, (48, 2)),    # P016 as 16-bit samples
    ((72, 128), (256, 1), np.uint8, (48, 2)),    # P016 as bytes
    ((72, 64), (128, 2), np.uint8, (0, 0)),      # not interleaved bytes
    ((72, 64), (64, 1), np.int8, (0, 0)),        # not unsigned
    ((60, 64), (64, 1), np.uint8, (0, 0)),       # 40 rows: fewer than the frame's
    ((72, 32), (64, 1), np.uint8, (0, 0)),       # narrower than the frame
    ((72, 96), (96, 1), np.uint8, (0, 0)),       # neither the frame's width nor twice it
    ((73, 64), (64, 1), np.uint8, (0, 0)),       # no luma/chroma split
])
def test_surface_layout(shape, strides, dtype, layout):
    plane = SimpleNamespace(shape=shape, ndim=2, strides=strides, dtype=np.dtype(dtype))
    assert _video_nvdec.surface_layout(plane, 48, 64) == layout
