"""``readers.nemo_asr``: speech samples listed in NeMo ASR manifests, decoded as they are read.

A manifest has one JSON object per line: ``audio_filepath`` (opened as written: a relative
path is relative to the working directory, as in DALI 2.4; in a manifest in an object store,
relative to the manifest's folder there), ``duration`` and ``offset`` in
seconds (the decoded range: ``int(offset * rate)`` frames skipped, at most
``int(duration * rate)`` kept), ``text``. Outputs, as DALI gives them: the audio (decoded like
``decoders.audio``, downmixed by default), then the file's own sample rate (float32 scalar,
``read_sample_rate``), the transcript's UTF-8 bytes (uint8, ``read_text``) and the sample's
index in the manifests (int64 ``[1]``, ``read_idxs``). Sharding, shuffling, checkpoints and
``on_error`` are the common readers' (``_reader.Reader``).

Manifests and audio files may be URLs of object stores (``s3://``, ``gs://``, ``az://``,
``http(s)://``; beyond DALI 2.4, whose reader takes local paths only): a batch's files are
fetched together, read ahead (``_reader.FilesReader``), and decoded from their bytes as local
files are.
"""
from __future__ import annotations

import json

import numpy as np

from .. import _engine
from .._operator import SampleError, sample_error_from_engine
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, FilesReader
from .audio_decode import DECODED_TYPE_ARG, QUALITY_ARG, check_decoding_args, decode_batch, rate_batch
from .readers_file import read_files


def _outputs(args: dict) -> int:
    return 1 + sum(bool(args.get(k, default)) for k, default in
                   (("read_sample_rate", True), ("read_text", True), ("read_idxs", False)))


NEMO_ASR = OpSchema(
    "readers.NemoAsr", "Reads and decodes the audio (and transcripts) listed in NeMo ASR manifests.",
    args=[Arg("manifest_filepaths", ArgType.STR_LIST, doc="manifest files (JSON lines)"),
          Arg("sample_rate", ArgType.FLOAT, -1.0, doc="resample to this rate (Hz); -1 keeps each file's own"),
          QUALITY_ARG,
          DECODED_TYPE_ARG,
          Arg("downmix", ArgType.BOOL, True, doc="average the channels into one (output (frames,))"),
          Arg("read_sample_rate", ArgType.BOOL, True, doc="output each file's own sample rate"),
          Arg("read_text", ArgType.BOOL, True, doc="output each transcript as UTF-8 bytes",
              ignored_aliases=("normalize_text",)),
          Arg("read_idxs", ArgType.BOOL, False, doc="output each sample's index in the manifests"),
          Arg("min_duration", ArgType.FLOAT, 0.0, doc="leave out samples shorter than this (s); 0: no limit"),
          Arg("max_duration", ArgType.FLOAT, 0.0, doc="leave out samples longer than this (s); 0: no limit"),
          *READER_ARGS],
    min_inputs=0, num_outputs=_outputs, is_reader=True, is_random=True, legacy_names=("NemoAsrReader",))


@register(NEMO_ASR)
class NemoAsrReader(FilesReader):
    shuffles_list = True
    decodes = True

    def setup(self) -> None:
        check_decoding_args(self, self.args["sample_rate"] > 0)
        if self.args["min_duration"] < 0 or self.args["max_duration"] < 0:
            raise ArgumentValueError(f"{self.label}: min_duration and max_duration must not be negative")
        super().setup()

    def scan(self) -> int:
        a = self.args
        paths, durations, offsets, texts, indices = [], [], [], [], []
        index = 0
        for manifest in a["manifest_filepaths"]:
            lines = objects.read_text(self.label, manifest, "manifest")
            # a relative audio_filepath: from the working directory (DALI), or beside a manifest in a store
            base = objects.dirname(manifest) if objects.is_url(manifest) else ""
            for line_no, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    path = entry["audio_filepath"]
                    duration = float(entry.get("duration", 0.0))
                    offset = float(entry.get("offset", 0.0))
                    text = str(entry.get("text", ""))
                except (ValueError, KeyError, TypeError) as e:
                    raise ValueError(f"{self.label}: line {line_no} of manifest '{manifest}' is not an entry with "
                                     f"an 'audio_filepath': {e}") from None
                if ((a["min_duration"] > 0 and duration < a["min_duration"])
                        or (a["max_duration"] > 0 and duration > a["max_duration"])):
                    index += 1
                    continue
                paths.append(objects.join(base, path) if base else path)
                durations.append(duration)
                offsets.append(offset)
                texts.append(text.encode("utf-8"))
                indices.append(index)
                index += 1
        if not paths:
            raise RuntimeError(f"{self.label}: the manifests list no samples (within min/max_duration)")
        self.paths = self.names = paths
        self.fetch_remote()
        self._durations = np.asarray(durations, np.float64)
        self._offsets = np.asarray(offsets, np.float64)
        self._texts = texts
        self._indices = np.asarray(indices, np.int64)
        return len(paths)

    def load(self, ws, indices: np.ndarray) -> list:
        a = self.args
        names = [self.paths[i] for i in indices]
        buf, sizes = read_files(self, ws, names)
        encoded = TensorListCPU._from_packed(buf, sizes.reshape(-1, 1), source_info=names)
        rates = np.full(len(indices), a["sample_rate"] if a["sample_rate"] > 0 else 0.0)
        try:
            audio, file_rates = decode_batch(ws, self, encoded, rates, self._offsets[indices],
                                             self._durations[indices])
        except _engine.SampleError as exc:  # a reader has no input to name the file: the message does
            bad = sample_error_from_engine(exc)
            raise SampleError(bad.sample, f"'{names[bad.sample]}': {bad.args[0]}") from None
        outs = [audio]
        if a["read_sample_rate"]:
            outs.append(rate_batch(file_rates, names))
        if a["read_text"]:
            texts = [self._texts[i] for i in indices]
            flat = np.frombuffer(b"".join(texts), np.uint8).copy()
            outs.append(TensorListCPU._from_packed(flat, np.array([[len(t)] for t in texts], np.int64).reshape(-1, 1),
                                                   source_info=names))
        if a["read_idxs"]:
            outs.append(TensorListCPU._from_packed(self._indices[indices].copy(), np.ones((len(indices), 1), np.int64),
                                                   source_info=names))
        return outs
