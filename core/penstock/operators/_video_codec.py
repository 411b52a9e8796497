"""Video demuxing and CPU decoding through FFmpeg's libraries, as PyAV binds them.

A video is indexed once by demuxing its packets (no decoding): the presentation timestamps of
its frames in presentation order and which of them are keyframes. Frame ``k`` of a video is the
frame with the k-th smallest timestamp, so frame numbers hold for B-frames and variable frame
rates alike. Decoding a set of frames seeks to the keyframe at or before the first one and
decodes forward, seeking again only where a keyframe lies between the frame decoded last and the
next one wanted; frames are converted to RGB by libswscale and written straight into the batch.

PyAV releases the GIL while FFmpeg demuxes, decodes and converts, so the samples of a batch are
decoded on ``num_threads`` threads at once (``DecodeThreads``), one decoder per sample.
"""
from __future__ import annotations

import collections
import dataclasses
import io
import threading
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from .._operator import SampleError
from .._workers import Workers
from . import _object_store as objects

# pad_mode values and the padding each means (DALI's names; numpy.pad's in the comments)
PAD_MODES = {"none": "none", "constant": "constant", "edge": "edge", "repeat": "edge",
             "reflect_1001": "symmetric", "symmetric": "symmetric", "reflect_101": "reflect", "reflect": "reflect"}

# bytes of a video in an object store fetched per ranged GET: FFmpeg reads a file front to back
# (its header, then packets), so a window of a few packets' worth serves many of its reads; a
# decoding thread keeps few files open (``_OpenFiles``), each holding its window
OBJECT_WINDOW = 1 << 20

_av_lock = threading.Lock()
_av_module: list = []


def require_av(label: str) -> Any:
    """The ``av`` module (PyAV), or a clear error saying how to get it."""
    with _av_lock:
        if not _av_module:
            try:
                import av
            except ImportError:
                raise RuntimeError(f"{label}: decoding video needs PyAV (FFmpeg's libraries): pip install av, "
                                   "or penstock's 'video' extra") from None
            # PyAV's logging is left as it comes (FFmpeg's messages dropped in C): a Python log level
            # makes FFmpeg's codec threads take the GIL to log, and a frame-threaded decoder closed
            # or flushed by PyAV with the GIL held then deadlocks on an error of its own threads.
            _av_module.append(av)
        return _av_module[0]


@dataclasses.dataclass
class VideoIndex:
    """What demuxing one video finds."""
    pts: np.ndarray          # int64, each frame's presentation timestamp, in presentation order
    keyframe: np.ndarray     # bool, per frame
    time_base: Fraction
    height: int
    width: int
    codec: str               # FFmpeg's name of the stream's codec (av1, not the decoder's libdav1d)
    rate: Fraction | None    # the stream's average frame rate, when the container gives one
    full_range: bool = False  # samples span 0..255 (JPEG's range), not 16..235
    pix_fmt: str = ""        # FFmpeg's name of the decoded samples' format (yuv420p, yuv420p10le ...)
    decode_position: np.ndarray | None = None  # int64, per frame: its place in decoding (demuxing) order

    def __post_init__(self) -> None:
        if self.decode_position is None:  # an index not made by demuxing: decoding order taken as shown
            self.decode_position = np.arange(len(self.pts), dtype=np.int64)

    @property
    def frames(self) -> int:
        return len(self.pts)

    def timestamps(self) -> np.ndarray:
        """Each frame's presentation time in seconds (float64)."""
        return self.pts.astype(np.float64) * float(self.time_base)

    def keyframe_at_or_before(self, frame: int) -> int:
        keys = np.flatnonzero(self.keyframe[:frame + 1])
        return int(keys[-1]) if keys.size else 0


def open_video(av: Any, source: str | bytes | np.ndarray, what: str = "video") -> Any:
    """An input container over a file path, the URL of an object (read through a seekable file
    object over ranged GETs: FFmpeg seeks to the index of an MP4 at its end, and decoding a few
    frames needs only their packets, not the whole file; errors name ``what``) or encoded bytes.
    Tags that are not UTF-8 (a title in Latin-1) must not fail the opening: they say nothing
    about the frames. PyAV before 19 decodes tags strictly unless told to replace what is not
    UTF-8; PyAV 19 dropped that argument (and the container's attribute of that name) and always
    reads tags with surrogate escapes."""
    if isinstance(source, np.ndarray):
        source = io.BytesIO(source.tobytes())
    elif isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    elif objects.is_url(source):
        source = objects.open_file(what, source, OBJECT_WINDOW)
    if hasattr(av.container.Container, "metadata_errors"):
        return av.open(source, "r", metadata_errors="replace")
    return av.open(source, "r")


def as_fraction(value: Any) -> Fraction | None:
    """A stream's rational (time base, frame rate) as a Fraction, None where it is unset: PyAV
    before 19 gives a Fraction or None, PyAV 19 its own AVRational, 0/1 where unset."""
    if value is None or not value.numerator or not value.denominator:
        return None
    return Fraction(value.numerator, value.denominator)


def video_stream(container: Any, what: str) -> Any:
    if not container.streams.video:
        raise ValueError(f"{what} has no video stream")
    stream = container.streams.video[0]
    if stream.codec_context is None:  # a stream FFmpeg found but has no decoder for
        raise ValueError(f"{what}: its video stream's codec is unknown to FFmpeg here")
    return stream


def build_index(container: Any, what: str) -> VideoIndex:
    """Demuxes the first video stream: timestamps and keyframes of its frames (no decoding)."""
    stream = video_stream(container, what)
    ctx = stream.codec_context
    if ctx.width <= 0 or ctx.height <= 0:
        raise ValueError(f"{what}: the video stream gives no frame size")
    pts, keys = [], []
    for packet in container.demux(stream):
        if packet.size == 0:
            continue  # the demuxer's end-of-stream marker
        t = packet.pts if packet.pts is not None else packet.dts
        pts.append(len(pts) if t is None else t)
        keys.append(packet.is_keyframe)
    if not pts:
        raise ValueError(f"{what} holds no video frames")
    pts_arr = np.asarray(pts, np.int64)
    order = np.argsort(pts_arr, kind="stable")
    keyframe = np.asarray(keys, bool)[order]
    keyframe[0] = True  # decoding can always start from the beginning
    full = getattr(ctx, "color_range", 0) == 2 or (ctx.pix_fmt or "").startswith("yuvj")
    return VideoIndex(pts_arr[order], keyframe, as_fraction(stream.time_base) or Fraction(1, 1), ctx.height,
                      ctx.width, codec_name(ctx.codec), as_fraction(stream.average_rate), full, ctx.pix_fmt or "",
                      order.astype(np.int64))


# codecs whose decoders in PyAV's FFmpeg may be named otherwise (libdav1d, libvpx-vp9)
NAMED_APART = ("av1", "vp8", "vp9", "h264", "hevc")


def codec_name(codec: Any) -> str:
    """FFmpeg's name of the codec a stream is coded in (``av1``), not that of the decoder PyAV
    opened for it (``libdav1d``): the codec's ``canonical_name`` where PyAV has it (not in 14),
    else FFmpeg's own decoder of a known codec with the same codec id."""
    name = getattr(codec, "canonical_name", None)
    if name:
        return name
    import av
    for known in NAMED_APART:
        try:
            if av.codec.Codec(known, "r").id == codec.id:
                return known
        except ValueError:  # an FFmpeg built without that decoder
            continue
    return codec.name


def index_of(av: Any, source: str | bytes | np.ndarray, what: str) -> VideoIndex:
    """Opens, indexes and closes a video; errors name ``what``."""
    try:
        with open_video(av, source, what) as container:
            return build_index(container, what)
    except av.error.FFmpegError as e:
        raise ValueError(f"{what} cannot be read as a video: {e}") from None


# frames a seek must skip to be worth it (a seek flushes the decoder and re-reads from a keyframe)
SEEK_GAIN = 4
# 4:2:0 formats converted natively -> (bits per sample, full range or not); FFmpeg's 10/12-bit
# planes hold little-endian 16-bit samples
YUV420 = {"yuv420p": (8, False), "yuvj420p": (8, True), "yuv420p10le": (10, False), "yuv420p12le": (12, False)}


def decode_into(av: Any, source: str | bytes | np.ndarray, index: VideoIndex, frames: np.ndarray, out: np.ndarray,
                what: str, pool: Any, pixel_format: str = "rgb24", seek: bool = True, threads: int = 1) -> None:
    """Decodes the frames numbered ``frames`` (any order, repeats allowed, all in range) into
    ``out[k]`` for ``frames[k]`` (``out``: [len(frames), H, W, C] uint8). ``seek=False`` decodes
    from the first frame on instead of seeking to keyframes. RGB from 4:2:0 video (8, 10 or 12-bit) is
    converted by the engine (``yuv420_to_rgb``, every frame in one call on ``pool``); other
    formats and colour spaces by libswscale."""
    frames = np.asarray(frames, np.int64)
    if not len(frames):
        return
    wanted, first_slot = np.unique(frames, return_index=True)
    planar: list[tuple[int, Any]] = []  # (slot, frame) converted natively after decoding
    container = None
    try:
        container, stream = _opened(av, source, what, threads)
        done = 0
        for k, frame in _decode_frames(container, stream, index, wanted, seek, what):
            if (frame.height, frame.width) != out.shape[1:3]:
                raise ValueError(f"{what}: frame {int(wanted[k])} is {frame.width}x{frame.height}, the video "
                                 f"{out.shape[2]}x{out.shape[1]}: frame sizes that change are not supported")
            if pixel_format == "rgb24" and frame.format.name in YUV420:
                planar.append((int(first_slot[k]), frame))
            else:
                out[first_slot[k]] = interleaved(frame, pixel_format)
            done += 1
    except av.error.FFmpegError as e:
        _close(source, container)
        raise ValueError(f"{what}: decoding failed: {e}") from None
    except BaseException:
        _close(source, container)
        raise
    if not isinstance(source, str):
        container.close()
    if done < len(wanted):
        raise ValueError(f"{what}: the video ended before frame {int(wanted[done])} was decoded "
                         "(the file may be truncated or corrupt)")
    if planar:
        _yuv420_to_rgb(pool, planar, out)
    slot_of = first_slot[np.searchsorted(wanted, frames)]
    for k in np.flatnonzero(slot_of != np.arange(len(frames))):
        out[k] = out[slot_of[k]]


def interleaved(frame: Any, pixel_format: str) -> np.ndarray:
    """The frame converted by libswscale to ``pixel_format``, channels last. PyAV gives a planar
    format (yuv444p) channels first; its ``channel_last`` argument is not in PyAV 14."""
    converted = frame.reformat(format=pixel_format)
    array = converted.to_ndarray()
    return np.moveaxis(array, 0, -1) if converted.format.is_planar and array.ndim == 3 else array


class _OpenFiles(threading.local):
    """The video files a decoding thread keeps open (readers come back to the same files): opening
    one probes its streams, which costs as much as decoding a few frames."""
    KEPT = 8

    def __init__(self) -> None:
        self.files: collections.OrderedDict = collections.OrderedDict()


_open_files = _OpenFiles()


def _opened(av: Any, source: str | bytes | np.ndarray, what: str, threads: int) -> tuple[Any, Any]:
    """An open container over ``source`` and its video stream, set to decode on ``threads`` threads:
    a file kept open by this thread (its position unknown: decoding seeks first), or a new one."""
    key = (source, threads) if isinstance(source, str) else None
    if key is not None and key in _open_files.files:
        _open_files.files.move_to_end(key)
        return _open_files.files[key]
    container = open_video(av, source, what)
    stream = video_stream(container, what)
    stream.thread_type = "AUTO" if threads > 1 else "SLICE"
    stream.codec_context.thread_count = threads
    if key is not None:
        _open_files.files[key] = (container, stream)
        while len(_open_files.files) > _OpenFiles.KEPT:
            _open_files.files.popitem(last=False)[1][0].close()
    return container, stream


def _close(source: Any, container: Any) -> None:
    """Closes a container after a failure (and forgets it: its state is unknown)."""
    for key in [k for k, (c, _) in _open_files.files.items() if c is container]:
        del _open_files.files[key]
    if container is not None:
        container.close()


def _full_range(frame: Any) -> int:
    """Whether a 4:2:0 frame's samples span their whole range (JPEG's: MJPEG, or a stream that says so)."""
    return int(YUV420[frame.format.name][1] or getattr(frame, "color_range", 0) == 2)


def _yuv420_to_rgb(pool: Any, planar: list, out: np.ndarray) -> None:
    from .. import _engine
    planes = [[np.frombuffer(p, np.uint8) for p in frame.planes[:3]] for _, frame in planar]
    address = np.array([[a.ctypes.data for a in f] for f in planes], np.uint64)
    frame_bytes = int(np.prod(out.shape[1:]))
    _engine.yuv420_to_rgb(pool, address[:, 0].copy(), address[:, 1].copy(), address[:, 2].copy(),
                          np.array([f.planes[0].line_size for _, f in planar], np.int64),
                          np.array([f.planes[1].line_size for _, f in planar], np.int64),
                          np.full(len(planar), out.shape[1], np.int64), np.full(len(planar), out.shape[2], np.int64),
                          np.array([_full_range(f) for _, f in planar], np.int64),
                          np.array([YUV420[f.format.name][0] for _, f in planar], np.int64),
                          np.array([out.ctypes.data + slot * frame_bytes for slot, _ in planar], np.uint64))


def _decode_frames(container: Any, stream: Any, index: VideoIndex, wanted: np.ndarray, seek: bool, what: str):
    """Yields (k, frame) for each ``wanted[k]`` (sorted, unique) in order. Seeks to the keyframe at
    or before a wanted frame whenever decoding on would pass a keyframe more than ``SEEK_GAIN``
    frames ahead first."""
    number_of_pts = {int(p): n for n, p in enumerate(index.pts)}
    decoded = None
    k, after = 0, 0     # after: frames numbered below it are behind the decoder
    while k < len(wanted):
        key = index.keyframe_at_or_before(int(wanted[k]))
        if decoded is None or (seek and key > after + SEEK_GAIN):
            start = key if seek else 0  # the container may have been used before: always seek first
            container.seek(int(index.pts[start]), stream=stream, backward=True, any_frame=False)
            after = start
            decoded = container.decode(stream)
        for frame in decoded:
            number = number_of_pts.get(frame.pts) if frame.pts is not None else after
            if number is None or number < after:
                continue  # decoded on the way from an earlier keyframe
            after = number + 1
            if number > wanted[k]:
                raise ValueError(f"{what}: frame {int(wanted[k])} could not be decoded (the stream skips from "
                                 f"an earlier frame to frame {number}; the file may be corrupt)")
            if number == wanted[k]:
                yield k, frame
                k += 1
                if k == len(wanted) or (seek and index.keyframe_at_or_before(int(wanted[k])) > after + SEEK_GAIN):
                    break  # done, or a keyframe closer to the next wanted frame: seek there
        else:
            return  # the stream ended


def pad_indices(positions: np.ndarray, frames: int, mode: str) -> np.ndarray:
    """Frame numbers for ``positions`` (which may run past the video's ``frames``), padded by
    ``mode`` (a ``PAD_MODES`` value): -1 marks a frame filled with the constant."""
    positions = np.asarray(positions, np.int64)
    past = positions >= frames
    if not past.any() or mode == "none":
        return positions
    if mode == "constant":
        return np.where(past, -1, positions)
    if mode == "edge":
        return np.minimum(positions, frames - 1)
    if mode == "symmetric":      # ... C B A | A B C | C B A ...
        period = 2 * frames
        p = positions % period
        return np.where(p < frames, p, period - 1 - p)
    if frames == 1:              # reflect without the edge: a single frame repeats
        return np.zeros_like(positions)
    period = 2 * frames - 2      # ... C B | A B C | B A ...
    p = positions % period
    return np.where(p < frames, p, period - p)


def fill_pixels(fill_value: Sequence[int], channels: int, label: str) -> np.ndarray:
    """The pad colour: one value for every channel, or one per channel, each in [0, 255]."""
    values = np.asarray(fill_value, np.int64).reshape(-1)
    if values.size not in (1, channels):
        raise ValueError(f"{label}: argument 'fill_value' needs 1 or {channels} values, got {values.size}")
    if ((values < 0) | (values > 255)).any():
        raise ValueError(f"{label}: argument 'fill_value' values must lie in [0, 255], got {list(values)}")
    return np.broadcast_to(values, (channels,)).astype(np.uint8)


class DecodeThreads:
    """The threads a video operator decodes its batches' samples on (created at first use)."""

    def __init__(self, name: str):
        self._name = name
        self._workers: Workers | None = None
        self.count = 0
        self._local = threading.local()

    def own_pool(self) -> Any:
        """A one-thread engine pool of the calling thread, for the engine calls of one sample."""
        if not hasattr(self._local, "pool"):
            from .. import _engine
            self._local.pool = _engine.ThreadPool(1)
        return self._local.pool

    def map(self, count: int, task: Callable[[int], Any], threads: int) -> list:
        """``task(i)`` for i in range(count), on up to ``threads`` threads; a failing sample's
        exception is raised as a ``SampleError`` naming it (the first failing sample)."""
        if self._workers is None or self.count < threads:
            if self._workers is not None:
                self._workers.close()
            self._workers = Workers(max(1, threads), self._name)
            self.count = max(1, threads)
        if count <= 1 or self.count == 1:
            futures = None
            results = []
            for i in range(count):
                results.append(_call(task, i))
        else:
            futures = [self._workers.submit(_call, task, i) for i in range(count)]
            results = [f.result() for f in futures]
        for i, r in enumerate(results):
            if isinstance(r, _Failure):
                raise SampleError(i, r.message) from r.error
        return results

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()


@dataclasses.dataclass
class _Failure:
    message: str
    error: BaseException


def _call(task: Callable[[int], Any], i: int) -> Any:
    try:
        return task(i)
    except (ValueError, RuntimeError, OSError) as e:
        return _Failure(str(e), e)
