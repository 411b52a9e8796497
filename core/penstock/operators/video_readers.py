"""``experimental.readers.video`` (CPU and GPU) and the legacy ``readers.video`` (GPU): sequences
of frames read from video files, as DALI 2.4's readers give them.

Every file is indexed when the reader starts (``_video_codec``: demuxing only), and its frame
range (the whole video, or a file list's ``start``/``end``) is cut into sequences of
``sequence_length`` frames ``stride`` apart, starting ``step`` frames apart; each sequence is a
sample, read in list order and shuffled, sharded and padded as every reader's samples are
(``_reader.Reader``). A batch decodes each file it touches once, on the operator's decoding
threads: the frames of all of its sequences in that batch.

Outputs: the frames (``FHWC`` uint8; the legacy reader's ``dtype=FLOAT`` gives 0..255 floats, or
0..1 when ``normalized``), then the label (int32 ``[1]``) when there are labels, the frame number
(``enable_frame_num``: int32 ``[1]``, the first frame's, or ``[F]``, every frame's, -1 for
padding) and the timestamps (``enable_timestamps``: each frame's presentation time in seconds,
-1 for padding; float64, the legacy reader's float32).

Videos may lie in object stores (``s3://``, ``gs://``, ``az://``, ``http(s)://``; beyond DALI 2.4):
``filenames`` and ``file_list`` entries as URLs (a relative entry of a list in a store is relative
to the list's folder), ``file_root`` as a URL prefix listed as a folder is walked. FFmpeg reads
them through seekable files over ranged GETs (``_video_codec.open_video``), fetching the parts it
reads rather than whole files; NVDEC is given the whole object (``_video_nvdec``).
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .._operator import SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType, DALIImageType
from . import _object_store as objects
from ._reader import READER_ARGS, Reader
from ._video_codec import VideoIndex, fill_pixels, index_of, pad_indices
from .resize import RESIZE, Resize, filters, resize_batch
from .video_decode import FILL_VALUE_ARG, PAD_MODE_DOC, VideoDecoding, check_pad_mode

FRAME_NUM_MODES = {False: "none", True: "scalar", "none": "none", "scalar": "scalar", "sequence": "sequence"}
ROUNDINGS = {"start_down_end_up": (math.floor, math.ceil), "start_up_end_down": (math.ceil, math.floor),
             "all_up": (math.ceil, math.ceil), "all_down": (math.floor, math.floor)}

SOURCE_ARGS = [
    Arg("filenames", ArgType.STR_LIST, (), "the video files (not with file_root, file_list)"),
    Arg("file_root", ArgType.STR, "", "a directory whose sub-directories are the classes, in sorted order (label = "
                                      "position); every file below them is a video (not with filenames, file_list)"),
    Arg("labels", ArgType.INT_LIST, optional=True, doc="a label per file of filenames (no labels: no label output)"),
    Arg("sequence_length", ArgType.INT, doc="frames per sequence", range=(1, None)),
    Arg("stride", ArgType.INT, 1, "distance between the frames of a sequence", range=(1, None)),
    Arg("step", ArgType.INT, -1, "distance between the first frames of consecutive sequences of a file; < 0: the "
                                 "span of a sequence"),
    Arg("enable_frame_num", ArgType.ANY, "none",
        "an output of frame numbers: 'none'/False, 'scalar'/True (the first frame's, [1]) or 'sequence' (each "
        "frame's, [F], -1 for padding)"),
    Arg("enable_timestamps", ArgType.BOOL, False, "an output of each frame's presentation time in seconds"),
    Arg("image_type", ArgType.IMAGE_TYPE, DALIImageType.RGB, "the frames' colour space: RGB or YCbCr"),
]


def _frame_num_mode(value: Any, label: str) -> str:
    key = value if isinstance(value, (bool, str)) else None
    if key not in FRAME_NUM_MODES:
        raise ArgumentValueError(f"{label}: argument 'enable_frame_num' must be 'none', 'scalar', 'sequence' or a "
                                 f"bool, got {value!r}")
    return FRAME_NUM_MODES[key]


def _reader_outputs(args: dict) -> int:
    labelled = bool(args.get("file_root") or args.get("file_list")) or args.get("labels") is not None
    frame_num = FRAME_NUM_MODES.get(args.get("enable_frame_num", "none") if isinstance(
        args.get("enable_frame_num", "none"), (bool, str)) else None, "none") != "none"
    return 1 + labelled + frame_num + bool(args.get("enable_timestamps"))


VIDEO_READER = OpSchema(
    "experimental.readers.Video",
    "Reads sequences of frames (FHWC) from video files, with labels, frame numbers and timestamps.",
    args=[*SOURCE_ARGS,
          Arg("file_list", ArgType.STR, "", "a text file of 'path label [start [end]]' lines (not with filenames, "
                                            "file_root)"),
          Arg("file_list_format", ArgType.STR, "timestamps",
              "file_list's start/end: 'timestamps' (seconds) or 'frames' (numbers; negative ones count from the end)"),
          Arg("file_list_include_end", ArgType.BOOL, True, "file_list's end frame belongs to the range"),
          Arg("file_list_rounding", ArgType.STR, "start_down_end_up",
              "file_list timestamps between frames: 'start_down_end_up', 'start_up_end_down', 'all_up', 'all_down'"),
          Arg("pad_mode", ArgType.STR, "none", PAD_MODE_DOC),
          FILL_VALUE_ARG,
          Arg("uniform_sample", ArgType.BOOL, False,
              "one sequence per file: sequence_length frames spread evenly over its range (stride, step, pad_mode "
              "unused)"),
          *READER_ARGS],
    min_inputs=0, num_outputs=_reader_outputs, devices=("cpu", "gpu"), is_reader=True, is_random=True)

LEGACY_VIDEO_READER = OpSchema(
    "readers.Video",
    "Reads sequences of frames (FHWC) from video files on the GPU, with labels, frame numbers and timestamps "
    "(the older reader; experimental.readers.video runs on the CPU too).",
    args=[*SOURCE_ARGS,
          Arg("file_list", ArgType.STR, "", "a text file of 'path label [start [end]]' lines, start/end as "
                                            "timestamps (seconds) unless file_list_frame_num"),
          Arg("file_list_frame_num", ArgType.BOOL, False, "file_list's start/end are frame numbers"),
          Arg("file_list_include_preceding_frame", ArgType.BOOL, False,
              "file_list timestamps map to floor(start*fps) and ceil(end*fps) instead of ceil/floor"),
          Arg("pad_sequences", ArgType.BOOL, False,
              "a file's last sequence may run past its end: those frames are zero, their numbers and times -1"),
          Arg("skip_vfr_check", ArgType.BOOL, False, "accept videos whose frame rate varies"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.UINT8, "UINT8, or FLOAT (0..255, or 0..1 when normalized)"),
          Arg("normalized", ArgType.BOOL, False, "FLOAT frames in [0, 1]"),
          Arg("channels", ArgType.INT, 3, "channels of the frames (3)"),
          Arg("additional_decode_surfaces", ArgType.INT, 2,
              "NVDEC surfaces beyond the minimum (a performance hint; PyNvVideoCodec sizes its own)"),
          *READER_ARGS],
    min_inputs=0, num_outputs=_reader_outputs, devices=("gpu",), is_reader=True, is_random=True,
    legacy_names=("VideoReader",))


LEGACY_VIDEO_RESIZE_READER = OpSchema(
    "readers.VideoResize",
    "Reads sequences of frames (FHWC) from video files on the GPU and resizes them, with labels, frame numbers "
    "and timestamps (readers.video followed by resize's sizing and filters).",
    args=[*LEGACY_VIDEO_READER.args, *(a for a in RESIZE.args if a.name not in ("save_attrs", "dtype"))],
    min_inputs=0, num_outputs=_reader_outputs, devices=("gpu",), is_reader=True, is_random=True,
    legacy_names=("VideoReaderResize",))


class _Sequences:
    """Every sample of a reader: its file and the positions of its frames (padding unresolved)."""

    def __init__(self) -> None:
        self.file: list[int] = []
        self.positions: list[np.ndarray] = []


@register(VIDEO_READER, device=("cpu", "gpu"))
class VideoReader(VideoDecoding, Reader):
    shuffles_list = True
    legacy = False

    def setup(self) -> None:
        a = self.args
        sources = [k for k, v in (("filenames", a["filenames"]), ("file_root", a["file_root"]),
                                  ("file_list", a["file_list"])) if v]
        if len(sources) != 1:
            raise ArgumentValueError(f"{self.label}: give exactly one of 'filenames', 'file_root' and 'file_list'"
                                     + (f"; got {', '.join(sources)}" if sources else ""))
        if a["labels"] is not None and not a["filenames"]:
            raise ArgumentValueError(f"{self.label}: argument 'labels' goes with 'filenames'")
        if a["labels"] is not None and a["labels"] and len(a["labels"]) != len(a["filenames"]):
            raise ArgumentValueError(f"{self.label}: {len(a['filenames'])} files and {len(a['labels'])} labels were "
                                     "given; give one label per file")
        if a["labels"] is not None and not a["labels"] and not self.legacy:
            raise ArgumentValueError(f"{self.label}: 'labels' is empty: give one label per file, or leave it out")
        self.frame_num = _frame_num_mode(a["enable_frame_num"], self.label)
        if a["image_type"] not in (DALIImageType.RGB, DALIImageType.YCbCr):
            raise ArgumentValueError(f"{self.label}: image_type must be RGB or YCbCr, got {a['image_type'].name}")
        self.pixel_format = "rgb24" if a["image_type"] == DALIImageType.RGB else "yuv444p"
        self.pad = "constant" if self.legacy and a["pad_sequences"] else (
            "none" if self.legacy else check_pad_mode(self, a["pad_mode"]))
        self.colour = np.zeros(3, np.uint8) if self.legacy else fill_pixels(a["fill_value"], 3, self.label)
        self.labelled = bool(a["file_root"] or a["file_list"]) or a["labels"] is not None
        self.start_decoding()
        super().setup()

    # -- listing
    def _listed(self) -> tuple[list[str], list[int], list[tuple[str, str]]]:
        """Paths, labels and the (start, end) text of each file (empty: the whole video)."""
        a = self.args
        if a["filenames"]:
            labels = list(a["labels"]) if a["labels"] else list(range(len(a["filenames"])))
            return list(a["filenames"]), labels, [("", "")] * len(a["filenames"])
        if a["file_root"] and objects.is_url(a["file_root"]):
            return self._listed_objects(a["file_root"])
        if a["file_root"]:
            root = a["file_root"]
            if not os.path.isdir(root):
                raise RuntimeError(f"{self.label}: file_root '{root}' is not a directory")
            paths, labels = [], []
            classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
            for label, cls in enumerate(classes):
                found = []
                for dirpath, dirnames, filenames in os.walk(os.path.join(root, cls), followlinks=True):
                    dirnames.sort()
                    found += [os.path.join(dirpath, f) for f in filenames]
                paths += sorted(found)
                labels += [label] * len(found)
            return paths, labels, [("", "")] * len(paths)
        paths, labels, ranges = [], [], []
        lines = objects.read_text(self.label, a["file_list"], "file_list")
        # a relative path: from the working directory (DALI), or beside a list in an object store
        base = objects.dirname(a["file_list"]) if objects.is_url(a["file_list"]) else ""
        for line_no, line in enumerate(lines, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 2 or len(parts) > 4:
                raise ValueError(f"{self.label}: line {line_no} of '{a['file_list']}' is not 'path label [start "
                                 f"[end]]': {line!r}")
            try:
                label = int(parts[1])
            except ValueError:
                raise ValueError(f"{self.label}: line {line_no} of '{a['file_list']}': the label {parts[1]!r} is not "
                                 "an integer") from None
            paths.append(objects.join(base, parts[0]) if base else parts[0])
            labels.append(label)
            ranges.append((parts[2] if len(parts) > 2 else "", parts[3] if len(parts) > 3 else ""))
        return paths, labels, ranges

    def _listed_objects(self, root: str) -> tuple[list[str], list[int], list[tuple[str, str]]]:
        """file_root in an object store, as on local disk: the folders directly under it are the
        classes, in sorted order, and every object below one is a video of it (objects directly
        under the root belong to none); one listing of the prefix, in pages."""
        by_class: dict[str, list[str]] = {}
        for key in objects.list_all(self.label, root):
            if "/" in key:
                by_class.setdefault(key.split("/", 1)[0], []).append(objects.join(root, key))
        paths, labels = [], []
        for label, cls in enumerate(sorted(by_class)):
            paths += by_class[cls]  # in key order, as listed
            labels += [label] * len(by_class[cls])
        return paths, labels, [("", "")] * len(paths)

    def _what(self, path: str) -> str:
        return f"{self.label}: video file '{path}'"

    def _frame_range(self, index: VideoIndex, start: str, end: str, where: str) -> tuple[int, int]:
        """The [first, end) frames of a listed range."""
        n = index.frames
        if not start and not end:
            return 0, n
        a = self.args
        try:
            values = [float(v) if v else None for v in (start, end)]
        except ValueError:
            raise ValueError(f"{self.label}: {where}: start/end {start!r} {end!r} are not numbers") from None
        first, last = values[0] or 0.0, values[1] if values[1] is not None else 0.0
        if self._frames_format():
            first, last = int(first), int(last)
            first, last = (first + n if first < 0 else first), (last + n if last < 0 else last)
            if self.legacy or a.get("file_list_include_end", True):
                last = min(last, n)
            return first, last
        rate = float(index.rate) if index.rate else 1.0 / float(np.median(np.diff(index.timestamps())) or 1.0)
        if self.legacy:
            round_start, round_end = ((math.floor, math.ceil) if a["file_list_include_preceding_frame"]
                                      else (math.ceil, math.floor))
            return round_start(first * rate), round_end(last * rate)
        round_start, round_end = ROUNDINGS[a["file_list_rounding"]]
        return round_start(first * rate), round_end(last * rate)

    def _frames_format(self) -> bool:
        a = self.args
        if self.legacy:
            return a["file_list_frame_num"]
        if a["file_list_format"] not in ("frames", "timestamps"):
            raise ArgumentValueError(f"{self.label}: argument 'file_list_format' must be 'frames' or 'timestamps', "
                                     f"got {a['file_list_format']!r}")
        return a["file_list_format"] == "frames"

    def scan(self) -> int:
        a = self.args
        if not self.legacy and a["file_list_rounding"] not in ROUNDINGS:
            raise ArgumentValueError(f"{self.label}: argument 'file_list_rounding' must be one of "
                                     f"{', '.join(ROUNDINGS)}, got {a['file_list_rounding']!r}")
        paths, labels, ranges = self._listed()
        if not paths:
            raise RuntimeError(f"{self.label}: no video files found")
        indices = self.threads.map(len(paths), lambda i: index_of(self.av, paths[i], self._what(paths[i])),
                                   os.cpu_count() or 1)
        self.files, self.file_labels, self.indices = paths, np.asarray(labels, np.int32), indices
        length, stride = a["sequence_length"], a["stride"]
        step = a["step"] if a["step"] > 0 else (length if self.legacy else length * stride)
        seqs = _Sequences()
        self.file_starts = [0] * len(paths)                    # each file's range of frames
        self.file_ends = [index.frames for index in indices]
        for f, (path, index, (start, end)) in enumerate(zip(paths, indices, ranges)):
            if self.legacy and not a["skip_vfr_check"] and _variable_rate(index):
                raise RuntimeError(f"{self.label}: '{path}' has a variable frame rate; the reader needs a constant "
                                   "one (skip_vfr_check=True reads it anyway)")
            first, last = self._frame_range(index, start, end, f"file_list entry for '{path}'")
            if last <= first:
                continue
            self.file_starts[f], self.file_ends[f] = first, last
            if not self.legacy and a["uniform_sample"]:
                seqs.file.append(f)
                seqs.positions.append(np.floor(np.linspace(first, last - 1, length) + 0.5).astype(np.int64))
                continue
            span = length * stride if not self.legacy else (length - 1) * stride + 1
            for s in range(first, last, step):
                if self.pad == "none" and s + span > last:
                    break
                seqs.file.append(f)
                seqs.positions.append(s + np.arange(length, dtype=np.int64) * stride)
        if not seqs.file:
            raise RuntimeError(f"{self.label}: no video holds a whole sequence of {length} frames {stride} apart")
        self.sequences = seqs
        self.paths = [paths[f] for f in seqs.file]
        return len(seqs.file)

    # -- reading
    def _frames_of(self, sample: int) -> np.ndarray:
        """The frame numbers of a sample, -1 for constant padding."""
        f = self.sequences.file[sample]
        positions = self.sequences.positions[sample]
        first, end = self.file_starts[f], self.file_ends[f]
        if self.pad == "constant":
            return np.where(positions < end, positions, -1)
        return pad_indices(positions - first, end - first, self.pad) + first

    def load(self, ws, indices: np.ndarray) -> list:
        if ws.gpu is None:
            return self._load(ws, indices)
        with ws.gpu:  # the read-ahead thread: the pipeline's device current there too
            return self._load(ws, indices)

    def _load(self, ws, indices: np.ndarray) -> list:
        files = [self.sequences.file[i] for i in indices]
        frames = [self._frames_of(i) for i in indices]
        names = [self.files[f] for f in files]
        # one decode per file of the batch: the union of its samples' frames
        by_file: dict[int, list[int]] = {}
        for k, f in enumerate(files):
            by_file.setdefault(f, []).append(k)
        order = list(by_file)
        union = [np.concatenate([frames[k] for k in by_file[f]]) for f in order]
        try:
            batch = self.decode_batch(ws, [self.files[f] for f in order], [self.indices[f] for f in order], union,
                                      [self._what(self.files[f]) for f in order], self.colour,
                                      pixel_format=self.pixel_format)
        except SampleError as e:  # a sample of the per-file batch: name the first sample of that file
            raise SampleError(by_file[order[e.sample]][0], str(e)) from None
        video = self._split(ws, batch, by_file, order, frames, names)
        outs = [self._convert(ws, video)]
        if self.labelled:
            outs.append(TensorListCPU._from_packed(self.file_labels[files].astype(np.int32),
                                                   np.ones((len(files), 1), np.int64), source_info=names))
        if self.frame_num == "scalar":
            outs.append(TensorListCPU._from_packed(np.array([fr[0] for fr in frames], np.int32),
                                                   np.ones((len(files), 1), np.int64), source_info=names))
        elif self.frame_num == "sequence":
            outs.append(_packed_1d([fr.astype(np.int32) for fr in frames], names))
        if self.args["enable_timestamps"]:
            dtype = np.float32 if self.legacy else np.float64
            times = [np.where(fr >= 0, self.indices[f].timestamps()[np.maximum(fr, 0)], -1.0).astype(dtype)
                     for f, fr in zip(files, frames)]
            outs.append(_packed_1d(times, names))
        return outs

    def _split(self, ws, batch: Any, by_file: dict, order: list, frames: list, names: list) -> Any:
        """The per-file decoded batch cut into the samples' sequences, in the samples' order."""
        frame_bytes = batch._shapes[:, 1:].prod(axis=1)
        starts = np.zeros(len(frames), np.int64)
        src_file = np.zeros(len(frames), np.int64)
        for j, f in enumerate(order):
            at = 0
            for k in by_file[f]:
                starts[k], src_file[k] = at, j
                at += len(frames[k])
        if len(order) == len(frames):  # one sample per file: already in place
            perm = np.array([by_file[f][0] for f in order])
            if (perm == np.arange(len(perm))).all():
                batch._source_info = names
                return batch
        shapes = np.concatenate([np.array([[len(fr)] for fr in frames], np.int64), batch._shapes[src_file, 1:]], 1)
        out = ws.new_batch(shapes, np.uint8, "FHWC", names)
        counts = shapes.prod(axis=1)
        src_offsets = batch._offsets[src_file] + starts * frame_bytes[src_file]
        if ws.gpu is not None:
            from .sequences import gather_ranges
            gather_ranges(ws, batch, src_offsets, [], counts, dst_elements=out._offsets, dst=out)
        else:
            from .. import _engine
            _engine.copy_ranges(ws.pool, batch._buf, src_offsets, out._buf, out._offsets.astype(np.int64),
                                counts.astype(np.int64))
        return out

    def _convert(self, ws, video: Any) -> Any:
        return video

    def close(self) -> None:
        VideoDecoding.close(self)
        Reader.close(self)


@register(LEGACY_VIDEO_READER, device="gpu")
class LegacyVideoReader(VideoReader):
    legacy = True

    def setup(self) -> None:
        a = self.args
        if a["dtype"] not in (DALIDataType.UINT8, DALIDataType.FLOAT):
            raise ArgumentValueError(f"{self.label}: dtype must be UINT8 or FLOAT, got {a['dtype'].name}")
        if a["channels"] != 3:
            raise ArgumentValueError(f"{self.label}: channels must be 3, got {a['channels']}")
        super().setup()

    def _convert(self, ws, video: Any) -> Any:
        a = self.args
        if a["dtype"] == DALIDataType.UINT8:
            return video
        scale = np.float32(1.0 / 255.0 if a["normalized"] else 1.0)
        out = ws.new_batch(video._shapes, np.float32, "FHWC", video._source_info)
        n = int(video._shapes.prod(axis=1).sum())  # packed: one element-wise pass (numpy or CuPy, on the stream)
        out._buf[:n] = video._buf[:n].astype(np.float32) * scale
        return out


@register(LEGACY_VIDEO_RESIZE_READER, device="gpu")
class LegacyVideoResizeReader(LegacyVideoReader, Resize):
    """The legacy reader whose frames are resized as ``resize`` resizes FHWC sequences: every frame
    of a sequence to the size its first frame's extent gives, planned per batch with that batch's
    argument inputs (after the read-ahead), before the conversion to FLOAT."""

    def setup(self) -> None:
        Resize.setup(self)
        LegacyVideoReader.setup(self)

    def _convert(self, ws, video: Any) -> Any:
        return video  # resized first, in run()

    def run(self, ws):
        outs = list(Reader.run(self, ws))
        video = outs[0]
        out_sizes, rois = self.plan(ws, "HW", video._shapes[:, 1:3].astype(np.float64))
        minf, magf = filters(ws)
        floats = self.args["dtype"] == DALIDataType.FLOAT
        resized = resize_batch(ws, video, "FHWC", out_sizes, rois, minf, magf, self.args["antialias"],
                               DALIDataType.FLOAT if floats else None)
        if floats and self.args["normalized"]:
            n = int(resized._shapes.prod(axis=1).sum())
            resized._buf[:n] *= np.float32(1.0 / 255.0)
        outs[0] = resized
        return outs


def _variable_rate(index: VideoIndex) -> bool:
    gaps = np.diff(index.pts)
    return gaps.size > 1 and bool((np.abs(gaps - np.median(gaps)) > 0.1 * np.median(gaps) + 1).any())


def _packed_1d(arrays: list[np.ndarray], names: list) -> TensorListCPU:
    buf = np.concatenate(arrays) if arrays else np.zeros(0)
    shapes = np.array([[len(a)] for a in arrays], np.int64)
    return TensorListCPU._from_packed(buf, shapes, None, "", names)
