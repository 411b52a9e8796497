"""The 4:2:0-to-RGB kernel of the NVDEC path (csrc/cuda/video.cu) run on the host: compiled as C++,
driven by the real ``GpuKernels.nv12_to_rgb`` with numpy in place of CuPy, on surfaces laid out as
NVIDIA documents NVDEC's NV12 (8-bit) and P016 (16-bit samples, the value in the high bits)
outputs: a luma plane, then interleaved Cb/Cr at half resolution, rows a pitch apart. The surfaces
are built from the planes FFmpeg decodes from the tests' clips, with a pitch wider than the frame
and, as a coded size larger than the one shown gives, more rows than the frame (filled with
values that would show where they are read). Their RGB must match the CPU path's conversion of the
same frames (the engine's, csrc/kernels/video.cpp) within a level, for limited-range (H.264) and
full-range (MJPEG) video and for 10-bit HEVC, and padding frames must take the fill colour."""
import io

import numpy as np
import pytest

from _cuda_on_host import HostContext, compile_for_host
from _video_data import clip, encoded
from penstock import _engine
from penstock.operators._video_codec import _yuv420_to_rgb, decode_into, index_of

av = pytest.importorskip("av")

HARNESS = r"""
static Dim blockIdx, threadIdx, blockDim;
using std::min;
#include "SOURCE"
extern "C" void run_nv12_to_rgb(int grid, int block, const i64* desc, const i64* block_start, int n) {
  blockDim.x = block;
  for (int b = 0; b < grid; ++b)
    for (int t = 0; t < block; ++t) { blockIdx.x = b; threadIdx.x = t; nv12_to_rgb(desc, block_start, n); }
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return HostContext(compile_for_host(tmp_path_factory.mktemp("video_cu"), "video.cu", HARNESS)).kernels


def surface(planes: list[np.ndarray], rows: int, pitch_samples: int, dtype) -> np.ndarray:
    """An NVDEC 4:2:0 surface of ``rows`` luma rows (>= the frame's) holding Y, Cb, Cr (each
    [h, w] or [h/2, w/2]); what lies outside the frame is two thirds of the samples' maximum."""
    y, cb, cr = planes
    h, w = y.shape
    out = np.full((rows + (rows + 1) // 2, pitch_samples), np.iinfo(dtype).max // 3 * 2, dtype)
    out[:h, :w] = y
    out[rows:rows + cb.shape[0], 0:2 * cb.shape[1]:2] = cb
    out[rows:rows + cr.shape[0], 1:2 * cr.shape[1]:2] = cr
    return out


def convert(kernels, surfaces: list[np.ndarray], h: int, w: int, rows: int, full: bool,
            fill=(7, 8, 9)) -> np.ndarray:
    """The kernel's RGB of ``surfaces`` and one padding frame after them."""
    out = np.zeros((len(surfaces) + 1, h, w, 3), np.uint8)
    src = [s.ctypes.data for s in surfaces] + [0]
    n = len(src)
    kernels.nv12_to_rgb(np.array(src, np.uint64), np.array([surfaces[0].strides[0]] * n), np.array([rows] * n),
                        np.array([surfaces[0].itemsize] * n), np.array([h] * n), np.array([w] * n),
                        np.array([full] * n), np.array([out.ctypes.data + k * h * w * 3 for k in range(n)], np.uint64),
                        np.array(fill))
    assert (out[-1] == fill).all()
    return out[:-1]


def _planes(frame, fmt: str, dtype) -> list[np.ndarray]:
    planes = frame.reformat(format=fmt).planes
    sizes = [(frame.height, frame.width)] + [((frame.height + 1) // 2, (frame.width + 1) // 2)] * 2
    return [np.frombuffer(p, dtype).reshape(hh, -1)[:, :ww] for p, (hh, ww) in zip(planes, sizes)]


@pytest.mark.parametrize("codec,container", [("h264", "mp4"), ("mjpeg", "avi")])
@pytest.mark.parametrize("extra_rows,extra_pitch", [(0, 16), (10, 48)])  # 48x64 shown of 58 rows, pitch 112
def test_nv12_to_rgb_matches_the_cpu(kernels, codec, container, extra_rows, extra_pitch):
    with av.open(io.BytesIO(encoded(codec, container, frames=4))) as c:
        frames = list(c.decode(video=0))
    h, w = frames[0].height, frames[0].width
    fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
    nv12 = [surface(_planes(f, fmt, np.uint8), h + extra_rows, w + extra_pitch, np.uint8) for f in frames]
    out = convert(kernels, nv12, h, w, h + extra_rows, codec == "mjpeg")
    expect = np.zeros((len(frames), h, w, 3), np.uint8)
    _yuv420_to_rgb(_engine.ThreadPool(1), list(enumerate(frames)), expect)
    diff = np.abs(out.astype(int) - expect)
    assert diff.max() <= 1 and diff.mean() < 0.01, (diff.max(), diff.mean())


def test_the_chroma_plane_is_found_after_the_surfaces_rows_not_the_frames(kernels):
    """Where a surface has more rows than its frame (coded 64 rows, 48 shown), reading the chroma
    right under the frame's rows (what a kernel taking the frame's height for the surface's does)
    reads luma and padding as colour."""
    with av.open(io.BytesIO(encoded("h264", "mp4", frames=1))) as c:
        frame = next(iter(c.decode(video=0)))
    h, w = frame.height, frame.width
    nv12 = [surface(_planes(frame, "yuv420p", np.uint8), 64, 128, np.uint8)]
    right, wrong = convert(kernels, nv12, h, w, 64, False), convert(kernels, nv12, h, w, h, False)
    expect = np.zeros((1, h, w, 3), np.uint8)
    _yuv420_to_rgb(_engine.ThreadPool(1), [(0, frame)], expect)
    assert np.abs(right.astype(int) - expect).max() <= 1
    assert np.abs(wrong.astype(int) - expect).max() > 100


@pytest.mark.parametrize("extra_rows,extra_pitch", [(0, 0), (6, 22)])  # 150x170: coded 152 x 176 by x265's CUs
def test_p016_to_rgb_matches_the_cpu_decoding_of_10bit_hevc(kernels, extra_rows, extra_pitch):
    data = encoded("hevc", "mkv", frames=6, height=150, width=170, pix_fmt="yuv420p10le")
    index = index_of(av, data, "clip")
    assert index.pix_fmt == "yuv420p10le" and (index.height, index.width) == (150, 170)
    expect = np.zeros((6, 150, 170, 3), np.uint8)
    decode_into(av, data, index, np.arange(6), expect, "clip", _engine.ThreadPool(1))  # the CPU path: libswscale
    with av.open(io.BytesIO(data)) as c:
        frames = list(c.decode(video=0))
    p016 = [surface([p << 6 for p in _planes(f, "yuv420p10le", np.uint16)], 150 + extra_rows, 170 + extra_pitch,
                    np.uint16) for f in frames]
    out = convert(kernels, p016, 150, 170, 150 + extra_rows, False)
    diff = np.abs(out.astype(int) - expect)
    assert diff.max() <= 1 and diff.mean() < 0.01, (diff.max(), diff.mean())
    assert np.abs(out.astype(int) - clip(6, 150, 170)).mean() < 8  # and they are the clip's frames
