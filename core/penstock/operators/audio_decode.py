"""``decoders.audio``: WAV, FLAC, OGG/Vorbis and Opus files to samples and their sample rate.

Decoding goes through libsndfile (``_engine.audio_decode``: one call per batch, the GIL
released), opened from the copy the ``soundfile`` wheel bundles (``pip install penstock[audio]``)
or else the system's. Output as DALI 2.4 gives it: ``(frames, channels)`` (a mono file too)
or ``(frames,)`` when downmixed, no layout; INT16/INT32 are libsndfile's full-scale integers,
FLOAT its [-1, 1] values. Downmixing averages the channels; ``sample_rate`` resamples with the
windowed sinc of ``audio_resample`` (``quality``).
"""
from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import os
import threading

import numpy as np

from .. import _engine
from .._on_error import ON_ERROR_ARG
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType

DECODED_TYPES = (DALIDataType.INT16, DALIDataType.INT32, DALIDataType.FLOAT)

# the arguments decoders.audio and readers.nemo_asr share (their other defaults differ)
QUALITY_ARG = Arg("quality", ArgType.FLOAT, 50.0,
                  "resampling quality, 0..100: the windowed sinc's zero crossings per side grow from 3 to 64 "
                  "(16 at 50)")
DECODED_TYPE_ARG = Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT,
                       "output type: FLOAT (in [-1, 1]), INT16 or INT32 (full-scale integers)")


AUDIO = OpSchema(
    "decoders.Audio", "Decodes WAV, FLAC, OGG/Vorbis and Opus audio into samples and their sample rate.",
    args=[DECODED_TYPE_ARG,
          Arg("downmix", ArgType.BOOL, False, "average the channels into one (output (frames,))"),
          Arg("sample_rate", ArgType.FLOAT, optional=True, tensor=True,
              doc="resample to this rate (Hz; <= 0: no resampling); when given, it is the reported rate "
                  "(default: each file's own rate, reported)"),
          QUALITY_ARG, ON_ERROR_ARG],
    num_outputs=2, legacy_names=("AudioDecoder",))

_library_lock = threading.Lock()
_library_version: list[str] = []


def libsndfile_path() -> str | None:
    """The soundfile wheel's bundled libsndfile, else the system's."""
    spec = importlib.util.find_spec("_soundfile_data")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            found = sorted(glob.glob(os.path.join(folder, "libsndfile*")))
            if found:
                return found[0]
    return ctypes.util.find_library("sndfile")


def load_libsndfile(label: str) -> str:
    """Opens libsndfile in the engine once; returns its version."""
    with _library_lock:
        if not _library_version:
            path = libsndfile_path()
            if path is None:
                raise RuntimeError(f"{label}: decoding audio needs libsndfile: pip install soundfile "
                                   "(or penstock's 'audio' extra), or install the system's libsndfile")
            _library_version.append(_engine.audio_library(path))
        return _library_version[0]


def check_decoding_args(op: Operator, resamples: bool) -> None:
    """The output type, and the quality where resampling is asked for (as DALI checks it)."""
    a = op.args
    if a["dtype"] not in DECODED_TYPES:
        raise ArgumentValueError(f"{op.label}: dtype {a['dtype'].name} is not supported "
                                 f"({', '.join(t.name for t in DECODED_TYPES)})")
    if resamples and not 0 <= a["quality"] <= 100:
        raise ArgumentValueError(f"{op.label}: quality must lie in [0, 100], got {a['quality']}")
    load_libsndfile(op.label)


def decode_batch(ws, op: Operator, encoded: TensorListCPU, rates: np.ndarray, starts: np.ndarray | None = None,
                 durations: np.ndarray | None = None) -> tuple[TensorListCPU, np.ndarray]:
    """The decoded audio of a batch of encoded files (resampled where ``rates`` > 0), and the
    files' own sample rates."""
    a = op.args
    buf, shapes, offsets, file_rates = _engine.audio_decode(
        ws.pool, encoded._buf, encoded._shapes, encoded._offsets, int(a["dtype"]), a["downmix"],
        np.asarray(rates, np.float64), float(a["quality"]), starts, durations)
    return TensorListCPU._from_packed(buf, shapes, offsets, "", encoded._source_info), file_rates


def rate_batch(rates: np.ndarray, source_info: list) -> TensorListCPU:
    """Sample rates as a batch of float32 scalars."""
    return TensorListCPU._from_packed(np.asarray(rates, np.float32), np.zeros((len(rates), 0), np.int64), None, "",
                                      source_info)


@register(AUDIO)
class AudioDecoder(Operator):
    def setup(self) -> None:
        check_decoding_args(self, self.given("sample_rate"))

    def run(self, ws):
        from .._batch import contiguous
        src = contiguous(ws.inputs[0])
        if src._buf.dtype != np.uint8:
            raise TypeError(f"{self.label}: encoded audio must be uint8 bytes, got {src._buf.dtype}")
        if not ws.has_arg("sample_rate"):
            audio, file_rates = decode_batch(ws, self, src, np.zeros(len(src)))
            return [audio, rate_batch(file_rates, src._source_info)]
        rates = ws.per_sample("sample_rate", np.float32).astype(np.float64)  # a float32 argument, as in DALI
        audio, _ = decode_batch(ws, self, src, np.maximum(rates, 0))
        return [audio, rate_batch(rates, src._source_info)]  # as given, as DALI reports it
