"""``decoders.video`` (and its older name ``experimental.decoders.video``): encoded videos in
memory to ``FHWC`` uint8 sequences; ``experimental.inputs.video``: one long encoded video, fed
with ``feed_input``, handed out as batches of consecutive sequences over many iterations.

Demuxing and CPU decoding go through FFmpeg (``_video_codec``, PyAV). ``device="mixed"`` decodes
on the GPU's video engines where they can be reached (``_video_nvdec``) and otherwise on the CPU,
uploading the frames, with one warning. Unlike DALI 2.4's CPU backend, which decodes only VP8,
VP9 and MJPEG, the CPU decodes every codec FFmpeg has (H.264, HEVC, AV1, MPEG-4 part 2 ...).
"""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

import numpy as np

from .._batch import contiguous, empty_batch
from .._on_error import ON_ERROR_ARG
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ._video_codec import (PAD_MODES, DecodeThreads, VideoIndex, decode_into, fill_pixels, index_of, pad_indices,
                           require_av)
from ._video_nvdec import VideoDevice

PAD_MODE_DOC = ("frames past the end: 'none' (a shorter sequence; an error for frames named in 'frames'), "
                "'constant' (fill_value), 'edge'/'repeat' (the last frame), 'reflect_1001'/'symmetric' (mirrored "
                "with the last frame repeated), 'reflect_101'/'reflect' (mirrored without repeating it)")
FILL_VALUE_ARG = Arg("fill_value", ArgType.INT_LIST, (0,),
                     "pad_mode='constant': the pad colour, one value or one per channel, each in [0, 255]")
AFFINE_ARG = Arg("affine", ArgType.BOOL, True,
                 "mixed backend: pin the decoding threads to CPU cores (penstock leaves them to the OS scheduler; "
                 "accepted for DALI's API, no effect)")

VIDEO_DECODER_ARGS = [
    Arg("frames", ArgType.INT_LIST, optional=True, tensor=True,
        doc="the frame numbers to decode, in any order, repeats allowed (not with start_frame, stride, "
            "sequence_length, end_frame)"),
    Arg("start_frame", ArgType.INT, optional=True, tensor=True, doc="the first frame (default 0)"),
    Arg("end_frame", ArgType.INT, optional=True, tensor=True, doc="the frame the sequence stops before (not with "
                                                                  "sequence_length)"),
    Arg("sequence_length", ArgType.INT, optional=True, tensor=True, doc="frames per sequence (not with end_frame)"),
    Arg("stride", ArgType.INT, optional=True, tensor=True, doc="distance between decoded frames (default 1)"),
    Arg("pad_mode", ArgType.STR, "constant", PAD_MODE_DOC),
    FILL_VALUE_ARG,
    Arg("build_index", ArgType.BOOL, True,
        "seek to the keyframe before the frames wanted (else decode every frame from the first)"),
    AFFINE_ARG, ON_ERROR_ARG,
]

VIDEO_DECODER = OpSchema(
    "decoders.Video", "Decodes encoded videos (MP4, MKV, WebM, AVI ...) into FHWC uint8 RGB frame sequences.",
    args=VIDEO_DECODER_ARGS, devices=("cpu", "mixed"))
VIDEO_DECODER_EXPERIMENTAL = dataclasses.replace(VIDEO_DECODER, name="experimental.decoders.Video", fn_name=None,
                                                 doc=VIDEO_DECODER.doc + " (older name of decoders.video)",
                                                 deprecated=True, replaced_by="decoders.video", hidden=True,
                                                 deprecation_note="The operator left the experimental module.")

VIDEO_INPUT = OpSchema(
    "experimental.inputs.Video",
    "Decodes one long encoded video given with feed_input into batches of consecutive FHWC sequences, over as "
    "many iterations as it lasts; the next fed video follows.",
    args=[Arg("sequence_length", ArgType.INT, doc="frames per sequence", range=(1, None)),
          Arg("last_sequence_policy", ArgType.STR, "partial",
              "a video's last sequence when its frames run out: 'partial' (shorter) or 'pad' (zero frames)"),
          Arg("blocking", ArgType.BOOL, False, "wait for feed_input instead of raising when no video is queued"),
          Arg("no_copy", ArgType.BOOL, False, "keep the fed buffer instead of copying it (it must stay unchanged)"),
          AFFINE_ARG],
    min_inputs=0, max_inputs=0, devices=("cpu", "mixed"), is_source=True)


def check_pad_mode(op: Operator, value: str) -> str:
    """The padding ``pad_mode`` names (a ``PAD_MODES`` value)."""
    if value not in PAD_MODES:
        raise ArgumentValueError(f"{op.label}: argument 'pad_mode' must be one of {', '.join(PAD_MODES)}; "
                                 f"got {value!r}")
    return PAD_MODES[value]


def write_fill(out: np.ndarray, frames: np.ndarray, colour: np.ndarray) -> None:
    """Frames numbered -1 (constant padding) take the pad colour."""
    for k in np.flatnonzero(frames < 0):
        out[k] = colour


class VideoDecoding:
    """What the video operators share: the decoding threads, and the device side of mixed/gpu
    operators (NVDEC, or the CPU and an upload)."""

    def start_decoding(self) -> None:
        self.av = require_av(self.label)
        self.threads = DecodeThreads("penstock-video")
        self.video_device = VideoDevice(self.label) if self.device in ("mixed", "gpu") else None

    def decode_batch(self, ws, sources: list, indices: list[VideoIndex], frames: list[np.ndarray], what: list[str],
                     colour: np.ndarray, seek: bool = True, pixel_format: str = "rgb24") -> Any:
        """A packed FHWC batch of ``frames[i]`` of video i (-1: the pad colour), on the
        operator's device: on the GPU, the videos NVDEC takes decoded there, the others on the CPU
        and uploaded into their places."""
        channels = len(colour)
        shapes = np.array([[len(f), ix.height, ix.width, channels] for f, ix in zip(frames, indices)], np.int64)
        if self.video_device is None:
            return self._decode_on_host(ws, sources, indices, frames, shapes, what, colour, seek, pixel_format)
        taken = self.video_device.takes(ws.gpu.device_id, sources, indices, pixel_format, channels)
        if not any(taken):
            return ws.from_host(self._decode_on_host(ws, sources, indices, frames, shapes, what, colour, seek,
                                                     pixel_format))
        out, left = self.video_device.decode_batch(ws, sources, indices, frames, shapes, what, colour, taken)
        if left:
            try:
                host = self._decode_on_host(ws, [sources[i] for i in left], [indices[i] for i in left],
                                            [frames[i] for i in left], shapes[left], [what[i] for i in left], colour,
                                            seek, pixel_format)
            except SampleError as e:
                raise SampleError(left[e.sample], str(e)) from None
            for k, i in enumerate(left):
                size, at, start = int(shapes[i].prod()), int(host._offsets[k]), int(out._offsets[i])
                ws.gpu.upload(host._buf[at:at + size], out._buf[start:start + size])
        return out

    def _decode_on_host(self, ws, sources: list, indices: list[VideoIndex], frames: list[np.ndarray],
                        shapes: np.ndarray, what: list[str], colour: np.ndarray, seek: bool,
                        pixel_format: str) -> TensorListCPU:
        out = empty_batch(shapes, np.uint8, "FHWC", what)
        n = len(frames)
        threads = ws.pool.num_threads
        per_decoder = max(1, threads // max(1, n))  # FFmpeg's own threads where samples are fewer than threads

        def decode(i: int) -> None:
            pool = ws.pool if n == 1 else self.threads.own_pool()  # the engine's pool runs one call at a time
            sample = out._buf[out._offsets[i]:out._offsets[i] + int(shapes[i].prod())].reshape(shapes[i])
            wanted = frames[i] >= 0
            if wanted.all():
                decode_into(self.av, sources[i], indices[i], frames[i], sample, what[i], pool, pixel_format, seek,
                            per_decoder)
                return
            part = np.empty((int(wanted.sum()), *shapes[i][1:]), np.uint8)
            decode_into(self.av, sources[i], indices[i], frames[i][wanted], part, what[i], pool, pixel_format, seek,
                        per_decoder)
            sample[wanted] = part
            sample[~wanted] = colour

        self.threads.map(n, decode, threads)
        return out

    def close(self) -> None:
        if hasattr(self, "threads"):
            self.threads.close()


@register(VIDEO_DECODER, device=("cpu", "mixed"))
class VideoDecoder(VideoDecoding, Operator):
    def setup(self) -> None:
        a = self.args
        selection = [k for k in ("start_frame", "stride", "sequence_length", "end_frame") if self.given(k)]
        if self.given("frames") and selection:
            raise ArgumentValueError(f"{self.label}: argument 'frames' cannot be used with {', '.join(selection)}")
        if self.given("end_frame") and self.given("sequence_length"):
            raise ArgumentValueError(f"{self.label}: arguments 'end_frame' and 'sequence_length' cannot be used "
                                     "together")
        self.pad = check_pad_mode(self, a["pad_mode"])
        self.colour = fill_pixels(a["fill_value"], 3, self.label)
        self.start_decoding()

    def _frame_lists(self, ws, counts: np.ndarray) -> list[np.ndarray]:
        """Per sample: the frame numbers to decode, -1 for constant padding."""
        n = len(counts)
        if ws.has_arg("frames"):
            lists = _per_sample_lists(ws, "frames", self.label) if "frames" in ws.arg_inputs else \
                [np.asarray(self.args["frames"], np.int64)] * n
            positions = lists
        else:
            start = ws.per_sample("start_frame", np.int64) if ws.has_arg("start_frame") else np.zeros(n, np.int64)
            stride = ws.per_sample("stride", np.int64) if ws.has_arg("stride") else np.ones(n, np.int64)
            length = ws.per_sample("sequence_length", np.int64) if ws.has_arg("sequence_length") else None
            end = ws.per_sample("end_frame", np.int64) if ws.has_arg("end_frame") else None
            positions = []
            for i in range(n):
                if start[i] < 0 or stride[i] < 1:
                    raise SampleError(i, f"{self.label}: start_frame must be >= 0 and stride >= 1, got "
                                         f"start_frame={start[i]}, stride={stride[i]}")
                if length is not None:
                    if length[i] < 1:
                        raise SampleError(i, f"{self.label}: sequence_length must be positive, got {length[i]}")
                    positions.append(start[i] + np.arange(length[i], dtype=np.int64) * stride[i])
                else:
                    stop = end[i] if end is not None else counts[i]
                    positions.append(np.arange(start[i], stop, stride[i], dtype=np.int64))
                if not len(positions[-1]):
                    raise SampleError(i, f"{self.label}: the frame range selects no frame")
        out = []
        explicit = ws.has_arg("frames")
        for i, p in enumerate(positions):
            if (p < 0).any():
                raise SampleError(i, f"{self.label}: frame numbers must not be negative, got {int(p[p < 0][0])}")
            past = p >= counts[i]
            if self.pad == "none" and past.any():
                if explicit or past.all():
                    raise SampleError(i, f"{self.label}: frame {int(p[past][0])} is out of range for a video of "
                                         f"{counts[i]} frames (pad_mode='none')")
                p = p[~past]  # a frame range that runs past the end: a shorter sequence
            out.append(pad_indices(p, int(counts[i]), self.pad))
        return out

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src._buf.dtype != np.uint8 or src.ndim() != 1:
            raise TypeError(f"{self.label}: encoded videos must be 1-D uint8 bytes, got {src._buf.dtype} "
                            f"{src.ndim()}-D samples")
        n = len(src)
        what = [_name(src, i) for i in range(n)]
        sources = [src._buf[src._offsets[i]:src._offsets[i] + int(src._shapes[i, 0])] for i in range(n)]
        indices = self.threads.map(n, lambda i: index_of(self.av, sources[i], what[i]), ws.pool.num_threads)
        frames = self._frame_lists(ws, np.array([ix.frames for ix in indices], np.int64))
        return [self.decode_batch(ws, sources, indices, frames, what, self.colour, seek=self.args["build_index"])]


register(VIDEO_DECODER_EXPERIMENTAL, device=("cpu", "mixed"))(type("ExperimentalVideoDecoder", (VideoDecoder,), {}))


def _name(src: TensorListCPU, i: int) -> str:
    info = src._source_info[i] if src._source_info else ""
    return f"video '{info}'" if info else f"video of sample {i}"


def _per_sample_lists(ws, name: str, label: str) -> list[np.ndarray]:
    tl = ws.arg_inputs[name]
    if len(tl) != ws.batch_size:
        raise RuntimeError(f"{label}: argument input '{name}' has {len(tl)} samples, the batch has {ws.batch_size}")
    out = []
    for i in range(len(tl)):
        values = np.asarray(tl[i])
        if values.ndim > 1 or values.dtype.kind not in "iu":
            raise SampleError(i, f"{label}: argument '{name}' must be a 1-D integer tensor per sample, got "
                                 f"{values.dtype} of shape {values.shape}")
        out.append(values.reshape(-1).astype(np.int64))
    return out


@dataclasses.dataclass
class _FedVideo:
    data: np.ndarray
    index: VideoIndex
    next_frame: int = 0


class _SequencePlan:
    """One iteration of inputs.video: ``count`` sequences of ``video`` from frame ``first``."""

    def __init__(self, video: _FedVideo, first: int, lengths: list[int], padded: int):
        self.video, self.first, self.lengths, self.padded = video, first, lengths, padded

    def __len__(self) -> int:
        return len(self.lengths)


@register(VIDEO_INPUT, device=("cpu", "mixed"))
class VideoInput(VideoDecoding, Operator):
    def setup(self) -> None:
        if self.args["last_sequence_policy"] not in ("partial", "pad"):
            raise ArgumentValueError(f"{self.label}: argument 'last_sequence_policy' must be 'partial' or 'pad', "
                                     f"got {self.args['last_sequence_policy']!r}")
        self.start_decoding()
        self._queue: collections.deque = collections.deque()
        self._current: _FedVideo | None = None
        self._fed = threading.Condition()

    def feed(self, data: Any, layout: Any = None, cuda_stream: Any = None, use_copy_kernel: bool = False) -> None:
        samples = list(data) if isinstance(data, (list, tuple)) else [data[i] for i in range(len(data))]
        if len(samples) != 1:
            raise RuntimeError(f"{self.label}: feed_input takes a batch of exactly one encoded video, got "
                               f"{len(samples)} samples")
        video = np.asarray(samples[0])
        if video.dtype != np.uint8 or video.ndim != 1:
            raise TypeError(f"{self.label}: the encoded video must be 1-D uint8 bytes, got {video.dtype} of shape "
                            f"{video.shape}")
        if not self.args["no_copy"]:
            video = video.copy()
        index = index_of(self.av, video, f"{self.label}: the fed video")
        with self._fed:
            self._queue.append(_FedVideo(video, index))
            self._fed.notify_all()

    def ready(self) -> bool:
        return not self.args["blocking"] or bool(self._queue) or self._current is not None

    def fetch(self, epoch: int, iteration_in_epoch: int, batch_size: int) -> _SequencePlan:
        with self._fed:
            if self._current is None:
                if self.args["blocking"]:
                    while not self._queue:
                        self._fed.wait()
                if not self._queue:
                    raise RuntimeError(f"{self.label}: no video to decode: give one with feed_input() before run() "
                                       "(or use blocking=True to wait for it)")
                self._current = self._queue.popleft()
        video = self._current
        length, total = self.args["sequence_length"], video.index.frames
        first = video.next_frame
        lengths = []
        while len(lengths) < batch_size and video.next_frame < total:
            lengths.append(min(length, total - video.next_frame))
            video.next_frame += lengths[-1]
        padded = length - lengths[-1] if self.args["last_sequence_policy"] == "pad" else 0
        if video.next_frame >= total:
            self._current = None
        return _SequencePlan(video, first, lengths, padded)

    def run(self, ws):
        plan: _SequencePlan = ws.fed
        video = plan.video
        decoded = int(sum(plan.lengths))
        frames = np.arange(plan.first, plan.first + decoded, dtype=np.int64)
        # the sequences are consecutive frames: one decode, straight into the packed batch
        batch = self.decode_batch(ws, [video.data], [video.index], [np.concatenate([frames, np.full(plan.padded, -1)])],
                                  [f"{self.label}: the fed video"], np.zeros(3, np.uint8))
        lengths = np.array(plan.lengths, np.int64)
        lengths[-1] += plan.padded
        shapes = np.repeat(batch._shapes[:, 1:], len(lengths), axis=0)
        shapes = np.concatenate([lengths[:, None], shapes], axis=1)
        offsets = np.concatenate([[0], np.cumsum(shapes.prod(axis=1))[:-1]]).astype(np.int64)
        return [type(batch)._from_packed(batch._buf, shapes, offsets, "FHWC", None)]
