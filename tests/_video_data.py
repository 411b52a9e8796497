"""Videos the video tests make for themselves (examples/make_video_data.py: a photograph under a
slow camera move), cached per session, and how decoded frames are matched to what was encoded.

The clips are encoded in a process of their own (spawned once per session): the encoders' threads
then never share a process with what the tests ran before (frameworks' thread pools, decoders
left open, a Python log callback installed in PyAV), and an encoder that crashes fails the tests
that need its clip, naming it, instead of ending the session."""
from __future__ import annotations

import concurrent.futures
import faulthandler
import functools
import multiprocessing
import os
import sys
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from make_video_data import encode, encoder_for, natural_motion, variable_pts  # noqa: E402

av = pytest.importorskip("av")

# (codec, container) pairs this FFmpeg writes; DALI 2.4's CPU decodes only VP8, VP9 and MJPEG
KINDS = [("h264", "mp4"), ("hevc", "mkv"), ("vp9", "webm"), ("av1", "mkv"), ("mpeg4", "avi"), ("mjpeg", "avi"),
         ("vp8", "webm")]
# mean absolute error per pixel a codec may leave at these settings, in levels
LOSS = {"h264": 8, "hevc": 8, "vp9": 8, "av1": 8, "vp8": 8, "mpeg4": 20, "mjpeg": 18}


def available(codec: str) -> bool:
    return encoder_for(codec) is not None


@functools.lru_cache(maxsize=None)
def clip(frames: int = 30, height: int = 48, width: int = 64, seed: int = 0) -> np.ndarray:
    return natural_motion(frames, height, width, ("astronaut", "coffee", "chelsea")[seed % 3], seed)


def _encode_clip(codec: str, container: str, frames: int, height: int, width: int, seed: int, vfr: bool,
                 gop: int, pix_fmt: str | None) -> bytes:
    """Runs in the encoding process."""
    pts = variable_pts(frames, seed) if vfr else None
    return encode(clip(frames, height, width, seed), codec, container, pts=pts, gop=gop, pix_fmt=pix_fmt)


_encoder: list = []  # the encoding process (a one-worker pool), started at the first clip


@functools.lru_cache(maxsize=None)
def encoded(codec: str = "h264", container: str = "mp4", frames: int = 30, height: int = 48, width: int = 64,
            seed: int = 0, vfr: bool = False, gop: int = 10, pix_fmt: str | None = None) -> bytes:
    if not available(codec):
        pytest.skip(f"this FFmpeg has no {codec} encoder")
    if not _encoder:
        _encoder.append(concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"), initializer=faulthandler.enable))
    try:
        return _encoder[0].submit(_encode_clip, codec, container, frames, height, width, seed, vfr, gop,
                                  pix_fmt).result()
    except BrokenProcessPool:
        _encoder.pop().shutdown(wait=False)
        raise RuntimeError(f"the process encoding a {codec} clip in {container} ({frames} frames of {width}x"
                           f"{height}) died; its traceback, if any, is in the captured stderr") from None


def write(folder, name: str, data: bytes) -> str:
    path = os.path.join(str(folder), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def frame_numbers(decoded: np.ndarray, source: np.ndarray) -> np.ndarray:
    """For each decoded frame, the number of the source frame it is closest to."""
    d = np.abs(decoded[:, None].astype(np.int16) - source[None].astype(np.int16)).mean(axis=(2, 3, 4))
    return d.argmin(axis=1)


def check_frames(decoded: np.ndarray, source: np.ndarray, numbers, codec: str) -> None:
    """``decoded`` are source frames ``numbers`` (-1: a frame of ``fill``), within the codec's loss."""
    numbers = np.asarray(numbers)
    real = numbers >= 0
    assert decoded.shape[1:] == source.shape[1:]
    np.testing.assert_array_equal(frame_numbers(decoded[real], source), numbers[real])
    err = np.abs(decoded[real].astype(np.int16) - source[numbers[real]].astype(np.int16)).mean()
    assert err < LOSS[codec], err
