"""``readers.sequence`` (deprecated, as in DALI 2.4): frame sequences from streams of image files.

Each directory under ``file_root`` is a stream: its image files, sorted by name, are its frames.
A sample is ``sequence_length`` frames ``stride`` apart; consecutive samples of a stream start
``step`` frames apart, and only whole sequences are read (none crosses a stream's end). A batch's
files are read by one native call and decoded by another (``decode_whole``), the sequences coming
out FHWC uint8 in the frames' packed order. ``file_root`` may be a URL prefix of an object store
(s3://, gs://, az://, http(s)://): its folders are the streams, as on local disk, listed all at once,
and a batch's frames are fetched with one GET each, started as the batch is drawn.
"""
from __future__ import annotations

import os

import numpy as np

from .. import _engine
from .._operator import SampleError, sample_error_from_engine
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIImageType
from . import _object_store as objects
from ._reader import READER_ARGS, FilesReader
from .image_decode import decode_whole
from .readers_file import DEFAULT_FILTERS, read_files

# the extensions of the frames a stream's directory holds (other files are not frames)
FRAME_EXTENSIONS = tuple(pattern[1:] for pattern in DEFAULT_FILTERS if pattern not in ("*.flac", "*.ogg", "*.wav"))
_IMAGE_TYPES = (DALIImageType.RGB, DALIImageType.BGR, DALIImageType.GRAY, DALIImageType.ANY_DATA)

SEQUENCE_READER = OpSchema(
    "readers.Sequence", "Reads sequences of frames (FHWC uint8) from a directory of streams: each sub-directory "
    "holds one stream's frames as image files, in name order.",
    args=[Arg("file_root", ArgType.STR, doc="the directory whose sub-directories are the streams"),
          Arg("sequence_length", ArgType.INT, doc="frames per sequence", range=(1, None)),
          Arg("step", ArgType.INT, 1, "frames between the starts of a stream's consecutive sequences", range=(1, None)),
          Arg("stride", ArgType.INT, 1, "frames between a sequence's consecutive frames", range=(1, None)),
          Arg("image_type", ArgType.IMAGE_TYPE, DALIImageType.RGB, "colour format of the frames: RGB, BGR, GRAY or "
              "ANY_DATA (as stored)"),
          *READER_ARGS],
    min_inputs=0, is_reader=True, is_random=True, legacy_names=("SequenceReader",), deprecated=True, hidden=True,
    deprecation_note="It may go in a later release: read frame sequences from videos (readers.video, "
                     "experimental.readers.video, experimental.decoders.video, experimental.inputs.video), or "
                     "from files through external_source.")


@register(SEQUENCE_READER)
class SequenceReader(FilesReader):
    shuffles_list = True
    decodes = True

    def setup(self) -> None:
        if self.args["image_type"] not in _IMAGE_TYPES:
            raise ArgumentValueError(f"{self.label}: Format not supported: image_type "
                                     f"{self.args['image_type'].name} (RGB, BGR, GRAY or ANY_DATA)")
        super().setup()

    def scan(self) -> int:
        a = self.args
        root, length, step, stride = a["file_root"], a["sequence_length"], a["step"], a["stride"]
        frames, firsts = [], []   # every stream's frame paths; each sequence's first frame among them
        span = (length - 1) * stride
        for stream, files in self._streams(root).items():
            names = sorted(name for name in files if name.lower().endswith(FRAME_EXTENSIONS))
            firsts += range(len(frames), len(frames) + max(0, len(names) - span), step)
            frames += [objects.join(root, f"{stream}/{name}") for name in names]
        self.frames = frames
        self.firsts = np.array(firsts, np.int64)
        self.paths = self.names = [frames[f] for f in firsts]  # a sequence is named by its first frame
        self.fetch_remote()
        return len(firsts)

    def _streams(self, root: str) -> dict[str, list[str]]:
        """The streams (folders directly under ``root``), in name order, each with the names of the
        files directly in it."""
        if objects.is_url(root):
            streams = objects.list_folders(self.label, root, sorted)
            del streams[""]  # objects directly under file_root belong to no stream
            return streams
        try:
            names = sorted(e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)))
        except OSError as e:
            raise RuntimeError(f"{self.label}: cannot list file_root '{root}': {e.strerror}") from None
        return {stream: [f for f in os.listdir(os.path.join(root, stream))
                         if os.path.isfile(os.path.join(root, stream, f))] for stream in names}

    def _frames_of(self, indices: np.ndarray) -> list[str]:
        """The frames of sequences ``indices``, in the order they are packed."""
        a = self.args
        frame_indices = (self.firsts[indices][:, None] + a["stride"] * np.arange(a["sequence_length"])).ravel()
        return [self.frames[f] for f in frame_indices]

    def prefetch(self, indices: np.ndarray) -> None:
        if self.object_reads is not None:
            self.object_reads.prefetch(self._frames_of(indices))

    def load(self, ws, indices: np.ndarray):
        a = self.args
        length = a["sequence_length"]
        paths = self._frames_of(indices)
        try:  # a frame that cannot be read or decoded is its sequence's error
            buf, sizes = read_files(self, ws, paths)
            src = TensorListCPU._from_packed(buf, sizes.reshape(-1, 1), source_info=paths)
            pixels, shapes, _ = decode_whole(self, ws.pool, src, int(a["image_type"]), None)
        except (_engine.SampleError, SampleError) as e:
            bad = sample_error_from_engine(e) or e
            raise SampleError(bad.sample // length, f"{self.label}: frame '{paths[bad.sample]}': {bad.args[0]}") \
                from None
        shapes = shapes.reshape(len(indices), length, 3)
        odd = np.flatnonzero((shapes != shapes[:, :1]).any(axis=(1, 2)))
        if len(odd):
            i = int(odd[0])
            raise SampleError(i, f"{self.label}: the frames of the sequence from '{self.paths[indices[i]]}' differ "
                                 f"in shape ({', '.join(str(tuple(s)) for s in np.unique(shapes[i], axis=0))})")
        out_shapes = np.concatenate([np.full((len(indices), 1), length, np.int64), shapes[:, 0]], axis=1)
        return [TensorListCPU._from_packed(pixels, out_shapes, layout="FHWC")]

