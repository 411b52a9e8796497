"""Natural-motion test clips made with PyAV: a photograph (scikit-image's sample images) seen
through a camera that pans and zooms over it, encoded with H.264, HEVC, VP9, AV1, MPEG-4 part 2
or MJPEG into MP4, MKV, WebM or AVI, at a constant or a variable frame rate.

The frames are known, so a decoder's output can be checked against what was encoded (within the
codec's loss) and matched to its frame number. Used by the video tests and bench/video.py.
Without scikit-image the photographs are photo-like synthetic images (make_sample_data.py).
"""
from __future__ import annotations

import argparse
import io
import os
from fractions import Fraction

import numpy as np

# codec -> (PyAV encoder, pixel format, encoder options); the first encoder found is used. Each
# encoder runs on as few threads as it can (x265 and SVT-AV1 take that from their own parameters,
# the others from the codec context): thread pools sized to the machine's cores buy nothing on
# clips this small and are what differs from one machine to the next.
CODECS = {
    "h264": (("libx264", "h264"), "yuv420p", {"preset": "ultrafast", "crf": "16", "x264-params": "bframes=2"}),
    "hevc": (("libx265", "hevc"), "yuv420p", {"preset": "ultrafast", "crf": "16",
                                              "x265-params": "log-level=none:bframes=2:pools=1:frame-threads=1"}),
    "vp9": (("libvpx-vp9", "vp9"), "yuv420p", {"crf": "20", "b": "0", "deadline": "realtime", "cpu-used": "8"}),
    "vp8": (("libvpx",), "yuv420p", {"crf": "10", "b": "2M", "deadline": "realtime", "cpu-used": "8"}),
    "av1": (("libsvtav1", "libaom-av1"), "yuv420p", {"preset": "12", "crf": "20", "svtav1-params": "lp=1"}),
    "mpeg4": (("mpeg4",), "yuv420p", {"qscale": "2"}),
    "mjpeg": (("mjpeg",), "yuvj420p", {"qscale": "2"}),
}
CONTAINER_OF = {"mp4": "mp4", "mkv": "matroska", "webm": "webm", "avi": "avi"}


def photograph(name: str = "astronaut") -> np.ndarray:
    """A real photograph, HWC uint8 RGB (scikit-image's; where it is not installed, a photo-like
    synthetic image of make_sample_data.py, seeded by the name)."""
    try:
        from skimage import data
    except ImportError:
        from make_sample_data import photo_like
        return photo_like(np.random.default_rng(sum(map(ord, name))), 512, 512)
    img = getattr(data, name)()
    return img[..., :3] if img.ndim == 3 else np.repeat(img[..., None], 3, axis=2)


def natural_motion(frames: int, height: int, width: int, photo: str = "astronaut", seed: int = 0) -> np.ndarray:
    """[frames, height, width, 3] uint8: a window over the photograph that drifts and zooms
    smoothly (a slow camera move), resampled bilinearly; consecutive frames differ by a pixel or
    two of motion, as in real footage."""
    img = photograph(photo).astype(np.float32)
    ih, iw = img.shape[:2]
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, max(frames, 2))[:frames]
    phase = rng.uniform(0, 2 * np.pi, 3)
    zoom = 0.55 + 0.25 * (0.5 + 0.5 * np.sin(2 * np.pi * t * 0.7 + phase[0]))  # window / photo size
    out = np.empty((frames, height, width, 3), np.uint8)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    for k in range(frames):
        wh = zoom[k] * min(ih, iw * height / width)
        ww = wh * width / height
        cy = (ih - wh) * (0.5 + 0.45 * np.sin(2 * np.pi * t[k] * 0.5 + phase[1]))
        cx = (iw - ww) * (0.5 + 0.45 * np.cos(2 * np.pi * t[k] * 0.4 + phase[2]))
        sy = np.clip(cy + (ys + 0.5) * wh / height - 0.5, 0, ih - 1.001)
        sx = np.clip(cx + (xs + 0.5) * ww / width - 0.5, 0, iw - 1.001)
        y0, x0 = sy.astype(np.int32), sx.astype(np.int32)
        fy, fx = (sy - y0)[..., None], (sx - x0)[..., None]
        top = img[y0, x0] * (1 - fx) + img[y0, x0 + 1] * fx
        bottom = img[y0 + 1, x0] * (1 - fx) + img[y0 + 1, x0 + 1] * fx
        out[k] = np.clip(top * (1 - fy) + bottom * fy + 0.5, 0, 255).astype(np.uint8)
    return out


def encoder_for(codec: str) -> str | None:
    """The PyAV encoder that writes ``codec`` here, or None."""
    import av
    for name in CODECS[codec][0]:
        try:
            av.codec.Codec(name, "w")
            return name
        except Exception:  # noqa: BLE001 - not built into this FFmpeg
            continue
    return None


def encode(frames: np.ndarray, codec: str = "h264", container: str = "mp4", fps: int = 25,
           pts: list[int] | None = None, time_base: Fraction | None = None, gop: int = 12,
           pix_fmt: str | None = None) -> bytes:
    """The encoded file. ``pts`` (in ``time_base`` units) gives a variable frame rate; else the
    frames are 1/fps apart. ``gop``: frames between keyframes. ``pix_fmt``: the samples' format,
    where not the codec's usual one (yuv420p10le: 10-bit HEVC)."""
    import av
    name = encoder_for(codec)
    if name is None:
        raise RuntimeError(f"this FFmpeg has no encoder for {codec}")
    _, usual_pix_fmt, options = CODECS[codec]
    buf = io.BytesIO()
    buf.name = f"clip.{container}"
    with av.open(buf, "w", format=CONTAINER_OF[container]) as out:
        stream = out.add_stream(name, rate=fps, options=dict(options))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = pix_fmt or usual_pix_fmt
        stream.codec_context.gop_size = gop
        stream.codec_context.thread_count = 1
        if pts is not None:
            stream.codec_context.time_base = time_base or Fraction(1, 1000)
            stream.time_base = time_base or Fraction(1, 1000)
        for k, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            if pts is not None:
                frame.pts = pts[k]
                frame.time_base = stream.codec_context.time_base
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return buf.getvalue()


def variable_pts(frames: int, seed: int = 0) -> list[int]:
    """Presentation times (ms) 20 to 60 ms apart: a variable frame rate."""
    rng = np.random.default_rng(seed)
    return np.concatenate([[0], np.cumsum(rng.choice([20, 33, 40, 60], frames - 1))]).astype(int).tolist()


def _write_clip(path: str, frames: int, height: int, width: int, photo: str, seed: int, codec: str,
                container: str) -> None:
    clip = natural_motion(frames, height, width, photo, seed)
    with open(path + ".part", "wb") as f:
        f.write(encode(clip, codec, container))
    os.replace(path + ".part", path)  # a clip that exists is whole


def write_clips(root: str, count: int = 8, frames: int = 48, height: int = 120, width: int = 160,
                codec: str = "h264", container: str = "mp4", classes: int = 2, seed: int = 0,
                processes: int = 1) -> list[str]:
    """``count`` clips of different photographs and camera moves in class folders under ``root``
    (``class_k/clip_i.<container>``), made on up to ``processes`` processes where they do not
    exist yet; returns their paths."""
    photos = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry")
    paths, todo = [], []
    for i in range(count):
        folder = os.path.join(root, f"class_{i % classes}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"clip_{i:04d}.{container}")
        if not os.path.exists(path):
            todo.append((path, frames, height, width, photos[i % len(photos)], seed + i, codec, container))
        paths.append(path)
    if processes > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(min(processes, len(todo))) as pool:
            list(pool.map(_write_clip, *zip(*todo)))
    else:
        for job in todo:
            _write_clip(*job)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--size", type=int, nargs=2, default=(120, 160), metavar=("H", "W"))
    parser.add_argument("--codec", default="h264", choices=sorted(CODECS))
    parser.add_argument("--container", default="mp4", choices=sorted(CONTAINER_OF))
    parser.add_argument("--processes", type=int, default=os.cpu_count())
    args = parser.parse_args()
    print("\n".join(write_clips(args.root, args.count, args.frames, *args.size, args.codec, args.container,
                                 processes=args.processes)))
