"""The NV12-to-RGB kernel of the NVDEC path (csrc/cuda/video.cu) run on the host: compiled as C++,
driven by the real ``GpuKernels.nv12_to_rgb`` with numpy in place of CuPy, on the YUV planes
FFmpeg decodes from the tests' clips; its RGB must match libswscale's conversion of the same
frames (what the CPU path gives) within 2 levels, for limited-range (H.264) and full-range
(MJPEG) video, and padding frames must take the fill colour."""
import numpy as np
import pytest

from _cuda_on_host import HostContext, compile_for_host
from _video_data import encoded

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


def _frames(codec, container):
    import io
    with av.open(io.BytesIO(encoded(codec, container, frames=4))) as c:
        frames = list(c.decode(video=0))
    # NVDEC's surface: the luma plane, then Cb/Cr interleaved at half resolution, rows padded to a pitch
    nv12 = []
    for f in frames:
        planes = f.reformat(format="yuv420p" if codec != "mjpeg" else "yuvj420p").planes
        h, w = f.height, f.width
        pitch = w + 16
        surface = np.zeros((h * 3 // 2, pitch), np.uint8)
        surface[:h, :w] = np.frombuffer(planes[0], np.uint8).reshape(h, -1)[:, :w]
        cb = np.frombuffer(planes[1], np.uint8).reshape(h // 2, -1)[:, :w // 2]
        cr = np.frombuffer(planes[2], np.uint8).reshape(h // 2, -1)[:, :w // 2]
        surface[h:, 0:w:2], surface[h:, 1:w:2] = cb, cr
        nv12.append(surface)
    return frames, nv12


@pytest.mark.parametrize("codec,container", [("h264", "mp4"), ("mjpeg", "avi")])
def test_nv12_to_rgb_matches_the_cpu(kernels, codec, container):
    frames, nv12 = _frames(codec, container)
    h, w = frames[0].height, frames[0].width
    out = np.zeros((len(nv12) + 1, h, w, 3), np.uint8)
    src = [s.ctypes.data for s in nv12] + [0]          # the last frame: padding
    dst = [out.ctypes.data + k * h * w * 3 for k in range(len(src))]
    kernels.nv12_to_rgb(np.array(src, np.uint64), np.array([w + 16] * len(src)), np.array([h] * len(src)),
                        np.array([w] * len(src)), np.array([codec == "mjpeg"] * len(src)),
                        np.array(dst, np.uint64), np.array([7, 8, 9]))
    from penstock import _engine
    from penstock.operators._video_codec import _yuv420_to_rgb
    expect = np.zeros((len(frames), h, w, 3), np.uint8)
    _yuv420_to_rgb(_engine.ThreadPool(1), list(enumerate(frames)), expect)
    diff = np.abs(out[:-1].astype(int) - expect)
    assert diff.max() <= 1 and diff.mean() < 0.01, (diff.max(), diff.mean())
    assert (out[-1] == [7, 8, 9]).all()
