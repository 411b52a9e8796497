"""The video operators on the GPU: decoders.video and inputs.video (mixed), experimental.readers.video
and the legacy readers.video (gpu), sequence_rearrange (gpu). With PyNvVideoCodec installed the
frames come from NVDEC and must equal the CPU's decoding within 2 levels; without it (or for a
video NVDEC does not take) the operators decode on the CPU and upload, with one warning.

Which path ran is in every test's id: ``[nvdec-<PyNvVideoCodec version>]`` or ``[cpu-upload]``
(``pytest -v``), and each test checks that the path it names is the one taken."""
import contextlib
import importlib.util
import warnings

import numpy as np
import pytest

from _video_data import clip, check_frames, encoded, write
from penstock import fn, pipeline_def, types
from penstock.operators._video_nvdec import load_pynvvideocodec

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
from penstock._cuda import available as cuda_available  # noqa: E402


if not cuda_available():
    pytest.skip("no CUDA device", allow_module_level=True)

NVC, WHY_NOT_NVDEC = load_pynvvideocodec()
PATH = f"nvdec-{NVC.__version__}" if NVC is not None else "cpu-upload"
FALLBACK = "decoding on the CPU and uploading"
# NVDEC's smallest frames are 144x144 (HEVC), 128x128 (VP9, AV1): the clips NVDEC is to decode
# are bigger than that
SIZE = {"height": 144, "width": 176}


@pytest.fixture(autouse=True, params=[PATH])
def decoding_path(request):
    """Puts the decoding path in every test's id."""
    return request.param


@contextlib.contextmanager
def decoded_on_nvdec_if_installed(refused: str = ""):
    """Checks the path taken inside: NVDEC where PyNvVideoCodec starts (no fallback warning, but
    one naming ``refused`` where given), else the CPU and an upload, warned about once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    fallbacks = [str(w.message) for w in caught if FALLBACK in str(w.message)]
    if NVC is None:
        assert fallbacks and WHY_NOT_NVDEC in fallbacks[0], fallbacks
    elif refused:
        assert fallbacks and all(refused in f for f in fallbacks), fallbacks
    else:
        assert not fallbacks, f"NVDEC was not used: {fallbacks}"


@pytest.mark.skipif(importlib.util.find_spec("PyNvVideoCodec") is None,
                    reason="PyNvVideoCodec is not installed: the GPU video operators decode on the CPU")
def test_pynvvideocodec_starts_where_installed():
    assert NVC is not None, WHY_NOT_NVDEC


def _both(graph, batch=2, **pipe_kw):
    """The graph's outputs with device='cpu' and with the GPU device ('mixed'/'gpu'), as numpy."""
    results = []
    for device in ("cpu", "gpu"):
        @pipeline_def(batch_size=batch, num_threads=2, device_id=0 if device == "gpu" else None, **pipe_kw)
        def p():
            out = graph(device)
            return tuple(out) if isinstance(out, (list, tuple)) else out
        pipe = p()
        pipe.build()
        outs = pipe.run()
        results.append([[np.asarray(o.as_cpu().at(i)) if hasattr(o, "as_cpu") else np.asarray(o.at(i))
                         for i in range(len(o))] for o in outs])
    return results


def _close(cpu, gpu, tolerance=2):
    for a, b in zip(cpu, gpu):
        assert a.shape == b.shape and a.dtype == b.dtype
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
        assert diff.max() <= tolerance, diff.max()


CODECS = [("h264", "mp4"), ("hevc", "mkv"), ("vp9", "webm"), ("av1", "mkv")]
# a frame size no codec codes as it is: H.264 codes 176x160 (16x16 macroblocks), x265 176x152 (8x8
# coding blocks), VP9 and AV1 176x152 (8x8), and the decoders crop to the 170x150 shown
UNALIGNED = {"height": 150, "width": 170}


def _mixed_equals_cpu(codec: str, container: str, size: dict, pix_fmt: str | None = None) -> None:
    """fn.decoders.video on 'mixed' gives the CPU's frames of two clips of different sizes (B-frames
    in H.264 and HEVC: frames decode in another order than they are shown), and the pad colour
    after the second one's end."""
    h, w = size["height"], size["width"]
    videos = [np.frombuffer(encoded(codec, container, height=h, width=w, pix_fmt=pix_fmt), np.uint8),
              np.frombuffer(encoded(codec, container, frames=20, height=h, width=w - 16, seed=1, pix_fmt=pix_fmt),
                            np.uint8)]

    def graph(device):
        enc = fn.external_source(source=lambda: videos)
        return fn.decoders.video(enc, device="mixed" if device == "gpu" else "cpu", start_frame=3, sequence_length=12,
                                 stride=2, pad_mode="constant", fill_value=[5, 6, 7])
    with decoded_on_nvdec_if_installed():
        (cpu,), (gpu,) = _both(graph)
    _close(cpu, gpu)
    check_frames(gpu[0], clip(30, h, w), [3 + 2 * k for k in range(12)], codec)
    check_frames(gpu[1][:9], clip(20, h, w - 16, 1), [3 + 2 * k for k in range(9)], codec)
    assert (gpu[1][9:] == [5, 6, 7]).all()


@pytest.mark.parametrize("codec,container", CODECS)
def test_mixed_decoder_equals_the_cpu(codec, container):
    _mixed_equals_cpu(codec, container, SIZE)


@pytest.mark.parametrize("codec,container", CODECS)
def test_mixed_decoder_equals_the_cpu_where_the_coded_size_is_larger(codec, container):
    _mixed_equals_cpu(codec, container, UNALIGNED)


@pytest.mark.parametrize("size", [SIZE, UNALIGNED])
def test_mixed_decoder_equals_the_cpu_on_10bit_hevc(size):
    """NVDEC's 10-bit frames (P016) are converted as the CPU converts FFmpeg's 10-bit planes."""
    _mixed_equals_cpu("hevc", "mkv", size, pix_fmt="yuv420p10le")


def test_a_batch_of_nvdec_and_cpu_videos():
    """MPEG-4 part 2 stays on the CPU: its frames are uploaded into the batch NVDEC fills."""
    videos = [np.frombuffer(encoded("h264", "mp4", **SIZE), np.uint8),
              np.frombuffer(encoded("mpeg4", "avi", frames=20, seed=1), np.uint8)]

    def graph(device):
        enc = fn.external_source(source=lambda: videos)
        return fn.decoders.video(enc, device="mixed" if device == "gpu" else "cpu", sequence_length=6, stride=3)
    with decoded_on_nvdec_if_installed(refused="mpeg4"):
        (cpu,), (gpu,) = _both(graph)
    _close(cpu, gpu)
    check_frames(gpu[0], clip(**SIZE), [0, 3, 6, 9, 12, 15], "h264")
    check_frames(gpu[1], clip(20, seed=1), [0, 3, 6, 9, 12, 15], "mpeg4")


def test_gpu_reader_equals_the_cpu(tmp_path):
    paths = [write(tmp_path, "a.mp4", encoded("h264", "mp4", **SIZE)),
             write(tmp_path, "b.webm", encoded("vp9", "webm", **SIZE))]

    def graph(device):
        return fn.experimental.readers.video(device=device, filenames=paths, labels=[1, 2], sequence_length=5,
                                             stride=2, pad_mode="edge", enable_frame_num="sequence",
                                             enable_timestamps=True, random_shuffle=True, seed=4)
    with decoded_on_nvdec_if_installed():
        cpu, gpu = _both(graph, batch=4)
    _close(cpu[0], gpu[0])
    for k in range(1, 4):
        for a, b in zip(cpu[k], gpu[k]):
            np.testing.assert_array_equal(a, b)


def test_legacy_reader_float_normalized(tmp_path):
    path = write(tmp_path, "a.mp4", encoded("h264", "mp4", **SIZE))

    @pipeline_def(batch_size=2, num_threads=2, device_id=0)
    def p():
        return tuple(fn.readers.video(device="gpu", filenames=[path], labels=[], sequence_length=4,
                                      dtype=types.FLOAT, normalized=True, enable_frame_num=True))
    with decoded_on_nvdec_if_installed():
        video, labels, first = p().run()
    frames = np.asarray(video.as_cpu().at(1))
    assert frames.dtype == np.float32 and frames.max() <= 1.0
    check_frames((frames * 255 + 0.5).astype(np.uint8), clip(**SIZE), [4, 5, 6, 7], "h264")
    assert int(np.asarray(labels.at(0))[0]) == 0 and int(np.asarray(first.at(1))[0]) == 4


def test_video_input_mixed(tmp_path):
    data = np.frombuffer(encoded("h264", "mp4", frames=23, **SIZE), np.uint8)

    @pipeline_def(batch_size=2, num_threads=2, device_id=0, prefetch_queue_depth=1)
    def p():
        return fn.experimental.inputs.video(device="mixed", name="vid", sequence_length=4)
    pipe = p()
    pipe.build()
    pipe.feed_input("vid", [data])
    with decoded_on_nvdec_if_installed():
        out, = pipe.run()
    check_frames(np.asarray(out.as_cpu().at(1)), clip(23, **SIZE), [4, 5, 6, 7], "h264")


def test_sequence_rearrange_gpu():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 255, (f, 4, 3, 2), dtype=np.uint8) for f in (3, 5)]
    orders = [np.array([2, 2, 0], np.int32), np.array([4, 1], np.int32)]

    def graph(device):
        x = fn.external_source(source=lambda: seqs, layout="FHWC")
        o = fn.external_source(source=lambda: orders)
        return fn.sequence_rearrange(x.gpu() if device == "gpu" else x, new_order=o)
    (cpu,), (gpu,) = _both(graph)
    for a, b, s, o in zip(cpu, gpu, seqs, orders):
        np.testing.assert_array_equal(a, s[o])
        np.testing.assert_array_equal(b, s[o])


def test_legacy_resize_reader_equals_cpu_read_and_resize(tmp_path):
    path = write(tmp_path, "a.mp4", encoded("h264", "mp4", **SIZE))

    @pipeline_def(batch_size=2, num_threads=2, device_id=0)
    def gpu():
        return fn.readers.video_resize(device="gpu", filenames=[path], sequence_length=4, resize_x=40, resize_y=30,
                                       dtype=types.FLOAT)

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def cpu():
        video = fn.experimental.readers.video(filenames=[path], sequence_length=4)
        return fn.resize(video, resize_x=40, resize_y=30, dtype=types.FLOAT)
    with decoded_on_nvdec_if_installed():
        (a,), (b,) = gpu().run(), cpu().run()
    for i in range(2):
        x, y = np.asarray(a.as_cpu().at(i)), np.asarray(b.at(i))
        assert x.shape == y.shape == (4, 30, 40, 3)
        assert np.abs(x - y).max() <= 2.5
