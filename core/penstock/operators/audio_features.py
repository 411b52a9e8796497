"""The speech feature chain, as DALI 2.4 computes it: ``audio_resample``, ``preemphasis_filter``,
``spectrogram``, ``power_spectrum``, ``mel_filter_bank``, ``to_decibels``, ``mfcc`` and
``nonsilent_region``. The planning (output shapes, matrices, per-sample values) is here, once for
both devices; every operator's arithmetic is one native call per batch on the CPU
(``csrc/kernels/audio_features.cpp``) and one launch per step on the GPU
(``_cuda/kernels/audio_features.py``, ``csrc/cuda/audio_features.cu``: spectrogram, power_spectrum,
mel_filter_bank, mfcc, to_decibels, preemphasis_filter; audio_resample and nonsilent_region run on
the CPU only).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _engine
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, to_dali_type, to_numpy_type
from .._batch import contiguous, empty_batch
from .reductions import _KIND_CODES

# ---- audio_resample ----------------------------------------------------------------------------

AUDIO_RESAMPLE = OpSchema(
    "AudioResample", "Resamples signals (time, or time x channels) with a windowed sinc.",
    args=[Arg("in_rate", ArgType.FLOAT, optional=True, tensor=True, doc="input sample rate (with out_rate)"),
          Arg("out_rate", ArgType.FLOAT, optional=True, tensor=True, doc="output sample rate (with in_rate)"),
          Arg("scale", ArgType.FLOAT, optional=True, tensor=True, doc="output length / input length"),
          Arg("out_length", ArgType.INT, optional=True, tensor=True, doc="output length in samples"),
          Arg("quality", ArgType.FLOAT, 50.0, doc="0..100: the sinc's zero crossings per side grow from 3 to 64"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type (default: the input's); integers are "
                                                         "read and written as fractions of full scale")])

EXPERIMENTAL_AUDIO_RESAMPLE = OpSchema(
    "experimental.AudioResample", "Deprecated name of audio_resample.", args=AUDIO_RESAMPLE.args, deprecated=True,
    replaced_by="audio_resample", deprecation_note="The operator left the experimental module.", hidden=True)

_RESAMPLED_TYPES = (DALIDataType.UINT8, DALIDataType.UINT16, DALIDataType.UINT32, DALIDataType.UINT64,
                    DALIDataType.INT8, DALIDataType.INT16, DALIDataType.INT32, DALIDataType.INT64,
                    DALIDataType.FLOAT)



def _float_input(op: Operator, batch) -> None:
    if batch._buf.dtype != np.float32:
        raise TypeError(f"{op.label}: the input must be FLOAT, got {to_dali_type(batch._buf.dtype).name}")


class _AudioResample(Operator):
    def setup(self) -> None:
        rates = [self.given(k) for k in ("in_rate", "out_rate")]
        if rates[0] != rates[1]:
            raise ArgumentValueError(f"{self.label}: in_rate and out_rate must be given together")
        ways = sum([rates[0], self.given("scale"), self.given("out_length")])
        if ways == 0:
            raise ArgumentValueError(f"{self.label}: give the resampling as in_rate and out_rate, scale or "
                                     "out_length")
        if ways > 1:
            raise ArgumentValueError(f"{self.label}: in_rate/out_rate, scale and out_length exclude each other")
        if not 0 <= self.args["quality"] <= 100:
            raise ArgumentValueError(f"{self.label}: quality must lie in [0, 100], got {self.args['quality']}")
        dtype = self.args["dtype"]
        if dtype is not None and dtype not in _RESAMPLED_TYPES:
            raise ArgumentValueError(f"{self.label}: dtype {dtype.name} is not supported")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.ndim() not in (1, 2):
            raise ValueError(f"{self.label}: the input must be 1-D (time) or 2-D (time x channels), "
                             f"got {src.ndim()}-D")
        n = len(src)
        lengths = src._shapes[:, 0].astype(np.float64)
        # rates and scales are float32 arguments, as in DALI: a scale of 1.37 is 1.37000000477
        if ws.has_arg("in_rate"):
            in_rates = ws.per_sample("in_rate", np.float32).astype(np.float64)
            out_rates = ws.per_sample("out_rate", np.float32).astype(np.float64)
        elif ws.has_arg("scale"):
            in_rates, out_rates = np.ones(n), ws.per_sample("scale", np.float32).astype(np.float64)
        else:  # a rate ratio that gives exactly out_length
            in_rates, out_rates = np.maximum(lengths, 1), ws.per_sample("out_length", np.float64)
        if (in_rates <= 0).any() or (out_rates < 0).any():
            raise ValueError(f"{self.label}: in_rate must be positive; out_rate, scale and out_length must not be "
                             "negative")
        out_len = out_rates if ws.has_arg("out_length") else np.ceil(lengths * out_rates / in_rates)
        empty = np.nonzero((lengths == 0) & (out_len > 0))[0]
        if len(empty):
            raise SampleError(int(empty[0]), f"{self.label}: cannot make a non-empty signal from an empty one")
        shapes = src._shapes.copy()
        shapes[:, 0] = out_len.astype(np.int64)
        dtype = self.args["dtype"]
        out_type = to_numpy_type(dtype) if dtype is not None else src._buf.dtype
        out = ws.new_batch(shapes, out_type, src._layout, src._source_info)
        ws.kernels.audio_resample(ws.pool, src._buf, int(to_dali_type(src._buf.dtype)), src._shapes, src._offsets,
                                  out._buf, int(to_dali_type(out_type)), out._shapes, out._offsets,
                                  in_rates, out_rates, float(self.args["quality"]))
        return [out]


@register(AUDIO_RESAMPLE)
class AudioResample(_AudioResample):
    pass


@register(EXPERIMENTAL_AUDIO_RESAMPLE)
class ExperimentalAudioResample(_AudioResample):
    pass


# ---- preemphasis_filter ------------------------------------------------------------------------

PREEMPHASIS = OpSchema(
    "PreemphasisFilter", "y[t] = x[t] - coeff * x[t-1] over each sample's elements in order.",
    args=[Arg("preemph_coeff", ArgType.FLOAT, 0.97, tensor=True, doc="the filter's coefficient"),
          Arg("border", ArgType.STR, "clamp", doc="x[-1]: 'zero', 'clamp' (x[0]) or 'reflect' (x[1])"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT,
              doc="output type (on the GPU: FLOAT, from INT16, INT32 or FLOAT input)")],
    devices=("cpu", "gpu"))
_BORDERS = {"zero": 0, "clamp": 1, "reflect": 2}


@register(PREEMPHASIS, device=("cpu", "gpu"))
class PreemphasisFilter(Operator):
    def setup(self) -> None:
        if self.args["border"] not in _BORDERS:
            raise ArgumentValueError(f"{self.label}: border mode {self.args['border']!r} is not supported "
                                     "('zero', 'clamp', 'reflect')")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        out_type = to_numpy_type(self.args["dtype"])
        out = ws.new_batch(src._shapes, out_type, src._layout, src._source_info)
        ws.kernels.preemphasis(ws.pool, src._buf, int(to_dali_type(src._buf.dtype)), src._shapes, src._offsets,
                               out._buf, int(self.args["dtype"]), out._offsets,
                               ws.per_sample("preemph_coeff", np.float32), _BORDERS[self.args["border"]])
        return [out]


# ---- spectrogram -------------------------------------------------------------------------------

SPECTROGRAM = OpSchema(
    "Spectrogram", "Short-time power (or magnitude) spectra of 1-D signals.",
    args=[Arg("nfft", ArgType.INT, optional=True, doc="FFT size (default: window_length); bins = nfft // 2 + 1"),
          Arg("window_length", ArgType.INT, 512, doc="samples per window"),
          Arg("window_step", ArgType.INT, 256, doc="samples between window starts"),
          Arg("window_fn", ArgType.FLOAT_LIST, optional=True,
              doc="window_length weights (default: Hann, 0.5 * (1 - cos(2 pi (t + 0.5) / window_length)))"),
          Arg("power", ArgType.INT, 2, doc="2: power spectrum, 1: magnitude"),
          Arg("center_windows", ArgType.BOOL, True, doc="centre window t on sample t * window_step (padding the "
                                                        "signal) instead of starting it there"),
          Arg("reflect_padding", ArgType.BOOL, True, doc="pad by reflection (else zeros) when centred"),
          Arg("layout", ArgType.LAYOUT, "ft", doc="'ft' (frequency x time) or 'tf'")],
    devices=("cpu", "gpu"))


def hann_window(length: int) -> np.ndarray:
    """DALI's Hann window: sampled at the middle of each of ``length`` equal steps."""
    return 0.5 * (1 - np.cos(2 * np.pi * (np.arange(length) + 0.5) / length))


def signal_lengths(op: Operator, src) -> np.ndarray:
    """[N, 1] lengths of 1-D signals: every axis but one must have extent 1."""
    shapes = src._shapes
    long_axes = (shapes != 1).sum(axis=1)
    if (long_axes > 1).any():
        bad = int(np.nonzero(long_axes > 1)[0][0])
        raise ValueError(f"{op.label}: the input must be 1-D, or have extent 1 on all axes but one; sample {bad} "
                         f"has shape {tuple(shapes[bad])}")
    return shapes.prod(axis=1).reshape(-1, 1).astype(np.int64)


@register(SPECTROGRAM, device=("cpu", "gpu"))
class Spectrogram(Operator):
    def setup(self) -> None:
        a = self.args
        self._nfft = a["window_length"] if a["nfft"] is None else a["nfft"]
        if a["window_length"] < 1 or a["window_step"] < 1:
            raise ArgumentValueError(f"{self.label}: window_length and window_step must be positive")
        if self._nfft < a["window_length"]:
            raise ArgumentValueError(f"{self.label}: window_length ({a['window_length']}) cannot exceed nfft "
                                     f"({self._nfft})")
        if a["power"] not in (1, 2):
            raise ArgumentValueError(f"{self.label}: power must be 1 (magnitude) or 2 (power), got {a['power']}")
        if a["layout"] not in ("ft", "tf"):
            raise ArgumentValueError(f"{self.label}: layout must be 'ft' or 'tf', got {a['layout']!r}")
        if a["window_fn"] is not None and len(a["window_fn"]) != a["window_length"]:
            raise ArgumentValueError(f"{self.label}: window_fn has {len(a['window_fn'])} values, window_length "
                                     f"is {a['window_length']}")
        self._window = (hann_window(a["window_length"]) if a["window_fn"] is None
                        else np.asarray(a["window_fn"], np.float64))

    def run(self, ws):
        a = self.args
        src = contiguous(ws.inputs[0])
        _float_input(self, src)
        lengths = signal_lengths(self, src)
        empty = np.nonzero(lengths[:, 0] == 0)[0]
        if len(empty):  # nothing to frame (or to reflect), as DALI refuses them
            raise SampleError(int(empty[0]), f"{self.label}: the signal is empty (0 values)")
        wlen, step = a["window_length"], a["window_step"]
        if a["center_windows"]:
            frames = lengths[:, 0] // step + 1
        else:
            frames = np.where(lengths[:, 0] >= wlen, (lengths[:, 0] - wlen) // step + 1, 0)
            if (frames <= 0).any():
                bad = int(np.nonzero(frames <= 0)[0][0])
                raise ValueError(f"{self.label}: sample {bad} ({int(lengths[bad, 0])} values) is shorter than a "
                                 f"window ({wlen})")
        bins = np.full(len(src), self._nfft // 2 + 1, np.int64)
        freq_major = a["layout"] == "ft"
        shapes = np.stack([bins, frames] if freq_major else [frames, bins], axis=1).astype(np.int64)
        out = ws.new_batch(shapes, np.float32, a["layout"], src._source_info)
        ws.kernels.spectrogram(ws.pool, src._buf, lengths, src._offsets, out._buf, out._shapes, out._offsets,
                               self._window, self._nfft, step, a["center_windows"], a["reflect_padding"],
                               a["power"], freq_major)
        return [out]


# ---- power_spectrum ----------------------------------------------------------------------------

POWER_SPECTRUM = OpSchema(
    "PowerSpectrum", "Power (or magnitude) spectrum along one axis: nfft // 2 + 1 bins.",
    args=[Arg("axis", ArgType.INT, -1, doc="the transformed axis (negative: from the end)"),
          Arg("nfft", ArgType.INT, optional=True, doc="FFT size (default, or <= 0: each sample's extent along the "
                                                     "axis); the signal is cut or zero-padded to it"),
          Arg("power", ArgType.INT, 2, doc="2: power spectrum, 1: magnitude")],
    devices=("cpu", "gpu"))


def outer_inner(shapes: np.ndarray, axis: int) -> np.ndarray:
    """Per-sample [outer, extent, inner] around ``axis``: the view the kernels take."""
    return np.stack([shapes[:, :axis].prod(axis=1), shapes[:, axis], shapes[:, axis + 1:].prod(axis=1)],
                    axis=1).astype(np.int64)


def resolve_axis(op: Operator, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op.label}: axis {axis} is out of range for {ndim}-D input")
    return axis % ndim


@register(POWER_SPECTRUM, device=("cpu", "gpu"))
class PowerSpectrum(Operator):
    def setup(self) -> None:
        if self.args["power"] not in (1, 2):
            raise ArgumentValueError(f"{self.label}: power must be 1 (magnitude) or 2 (power)")

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        _float_input(self, src)
        axis = resolve_axis(self, self.args["axis"], src.ndim())
        nfft = self.args["nfft"]
        nffts = (np.maximum(src._shapes[:, axis], 1) if nfft is None or nfft <= 0
                 else np.full(len(src), nfft)).astype(np.int64)
        shapes = src._shapes.copy()
        shapes[:, axis] = nffts // 2 + 1
        out = ws.new_batch(shapes, np.float32, src._layout, src._source_info)
        ws.kernels.power_spectrum(ws.pool, src._buf, outer_inner(src._shapes, axis), src._offsets, out._buf,
                                  out._offsets, nffts, self.args["power"])
        return [out]


# ---- mel_filter_bank ---------------------------------------------------------------------------

MEL_FILTER_BANK = OpSchema(
    "MelFilterBank", "Triangular mel-scale filters over the frequency axis of a spectrogram.",
    args=[Arg("nfilter", ArgType.INT, 128, doc="number of filters (mel bands)"),
          Arg("sample_rate", ArgType.FLOAT, 44100.0, doc="sample rate of the signal (Hz)"),
          Arg("freq_low", ArgType.FLOAT, 0.0, doc="lowest frequency (Hz)"),
          Arg("freq_high", ArgType.FLOAT, 0.0, doc="highest frequency (Hz); 0: sample_rate / 2"),
          Arg("mel_formula", ArgType.STR, "slaney", doc="'slaney' or 'htk'"),
          Arg("normalize", ArgType.BOOL, True, doc="divide each filter by its width in Hz / 2 (equal area)")],
    devices=("cpu", "gpu"))


def hz_to_mel(hz: np.ndarray, htk: bool) -> np.ndarray:
    hz = np.asarray(hz, np.float64)
    if htk:
        return 2595.0 * np.log10(1 + hz / 700.0)
    # Slaney: linear below 1 kHz (200/3 Hz per mel), logarithmic above
    linear = hz * 3 / 200
    return np.where(hz >= 1000, 15 + np.log(np.maximum(hz, 1e-10) / 1000) * 27 / np.log(6.4), linear)


def mel_to_hz(mel: np.ndarray, htk: bool) -> np.ndarray:
    mel = np.asarray(mel, np.float64)
    if htk:
        return 700.0 * (10 ** (mel / 2595.0) - 1)
    return np.where(mel >= 15, 1000 * np.exp(np.log(6.4) / 27 * (mel - 15)), mel * 200 / 3)


@functools.lru_cache(maxsize=32)
def mel_matrix(bins: int, nfilter: int, sample_rate: float, low: float, high: float, htk: bool,
               normalize: bool) -> np.ndarray:
    """[nfilter, bins] triangles, linear in Hz between mel-spaced corners."""
    nfft = 2 * (bins - 1)
    corners = mel_to_hz(np.linspace(hz_to_mel(low, htk), hz_to_mel(high, htk), nfilter + 2), htk)
    freqs = np.arange(bins) * sample_rate / max(nfft, 1)
    lo, mid, hi = corners[:-2, None], corners[1:-1, None], corners[2:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.maximum(0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
        if normalize:
            weights *= 2 / (hi - lo)
    return np.nan_to_num(weights, nan=0.0, posinf=0.0, neginf=0.0)


def frequency_axis(layout: str, ndim: int) -> int:
    """Where 'f' is in the layout; without one, the second axis from the end (DALI's 'ft')."""
    return layout.index("f") if "f" in layout else max(ndim - 2, 0)


@register(MEL_FILTER_BANK, device=("cpu", "gpu"))
class MelFilterBank(Operator):
    def setup(self) -> None:
        a = self.args
        if a["mel_formula"] not in ("slaney", "htk"):
            raise ArgumentValueError(f"{self.label}: mel_formula must be 'slaney' or 'htk', got {a['mel_formula']!r}")
        if a["nfilter"] < 1:
            raise ArgumentValueError(f"{self.label}: nfilter must be positive, got {a['nfilter']}")
        if a["sample_rate"] <= 0:
            raise ArgumentValueError(f"{self.label}: sample_rate must be positive, got {a['sample_rate']}")
        self._high = a["freq_high"] if a["freq_high"] > 0 else a["sample_rate"] / 2
        if not 0 <= a["freq_low"] < self._high:
            raise ArgumentValueError(f"{self.label}: freq_low ({a['freq_low']}) must lie in [0, freq_high) "
                                     f"({self._high})")

    def run(self, ws):
        a = self.args
        src = contiguous(ws.inputs[0])
        _float_input(self, src)
        axis = frequency_axis(src._layout, src.ndim())
        bins = set(src._shapes[:, axis].tolist())
        if len(bins) > 1:
            raise ValueError(f"{self.label}: every sample needs the same number of frequency bins, got {sorted(bins)}")
        matrix = mel_matrix(bins.pop() if bins else 1, a["nfilter"], a["sample_rate"], a["freq_low"], self._high,
                            a["mel_formula"] == "htk", a["normalize"])
        return [apply_matrices(ws, src, axis, [matrix], np.zeros(len(src), np.int64))]


def apply_matrices(ws, src, axis: int, matrices: list, which: np.ndarray) -> Any:
    """``matrices[which[i]]`` [rows, extent] applied along ``axis`` of sample i (one native call)."""
    shapes = src._shapes.copy()
    shapes[:, axis] = [matrices[k].shape[0] for k in which]
    out = ws.new_batch(shapes, np.float32, src._layout, src._source_info)
    ws.kernels.matrix_along_axis(ws.pool, src._buf, outer_inner(src._shapes, axis), src._offsets, out._buf,
                                 out._offsets, matrices, np.asarray(which, np.int64))
    return out


# ---- mfcc --------------------------------------------------------------------------------------

MFCC = OpSchema(
    "MFCC", "Mel-frequency cepstral coefficients: a DCT of (log) mel spectra along one axis.",
    args=[Arg("n_mfcc", ArgType.INT, 20, doc="number of coefficients"),
          Arg("dct_type", ArgType.INT, 2, doc="DCT type: 1, 2, 3 or 4"),
          Arg("normalize", ArgType.BOOL, False, doc="orthonormal DCT (not for type 1)"),
          Arg("lifter", ArgType.FLOAT, 0.0, doc="cepstral liftering: coefficient k times "
                                               "1 + lifter / 2 * sin(pi (k + 1) / lifter); 0: none"),
          Arg("axis", ArgType.INT, 0, doc="the axis the DCT runs along")],
    devices=("cpu", "gpu"))


@functools.lru_cache(maxsize=32)
def dct_matrix(n_out: int, n: int, dct_type: int, normalize: bool, lifter: float) -> np.ndarray:
    """[n_out, n]: half of the unnormalized DCT (DALI's scale), or the orthonormal one; then liftered."""
    k = np.arange(n_out, dtype=np.float64)[:, None]
    i = np.arange(n, dtype=np.float64)[None, :]
    if dct_type == 1:
        m = np.cos(np.pi * k * i / max(n - 1, 1))
        m[:, [0, -1]] *= 0.5
    elif dct_type == 2:
        m = np.cos(np.pi * k * (2 * i + 1) / (2 * n))
        if normalize:
            m *= np.where(k == 0, np.sqrt(1 / n), np.sqrt(2 / n))
    elif dct_type == 3:
        m = np.cos(np.pi * (2 * k + 1) * i / (2 * n))
        if normalize:
            m *= np.sqrt(2 / n)
            m[:, 0] = np.sqrt(1 / n)
        else:
            m[:, 0] = 0.5
    else:
        m = np.cos(np.pi * (2 * k + 1) * (2 * i + 1) / (4 * n))
        if normalize:
            m *= np.sqrt(2 / n)
    if lifter:
        m *= (1 + lifter / 2 * np.sin(np.pi * (np.arange(n_out) + 1) / lifter))[:, None]
    return m


@register(MFCC, device=("cpu", "gpu"))
class Mfcc(Operator):
    def setup(self) -> None:
        a = self.args
        if a["dct_type"] not in (1, 2, 3, 4):
            raise ArgumentValueError(f"{self.label}: dct_type must be 1, 2, 3 or 4, got {a['dct_type']}")
        if a["dct_type"] == 1 and a["normalize"]:
            raise ArgumentValueError(f"{self.label}: the DCT of type 1 has no orthonormal form (normalize=True)")
        if a["n_mfcc"] < 1:
            raise ArgumentValueError(f"{self.label}: n_mfcc must be positive, got {a['n_mfcc']}")

    def run(self, ws):
        a = self.args
        src = contiguous(ws.inputs[0])
        _float_input(self, src)
        axis = a["axis"]
        if not 0 <= axis < src.ndim():
            raise ValueError(f"{self.label}: axis {axis} is out of range for {src.ndim()}-D input")
        extents, which = np.unique(src._shapes[:, axis], return_inverse=True)  # a DCT per distinct length
        if a["dct_type"] == 1 and (extents < 2).any():
            raise ValueError(f"{self.label}: the DCT of type 1 needs at least 2 values along axis {axis}")
        # as DALI: at most as many coefficients as values
        matrices = [dct_matrix(min(a["n_mfcc"], int(e)), int(e), a["dct_type"], a["normalize"], a["lifter"])
                    for e in extents]
        return [apply_matrices(ws, src, axis, matrices, which.reshape(-1))]


# ---- to_decibels -------------------------------------------------------------------------------

TO_DECIBELS = OpSchema(
    "ToDecibels", "multiplier * log10(max(x / reference, 10 ** (cutoff_db / multiplier))).",
    args=[Arg("multiplier", ArgType.FLOAT, 10.0, doc="10 for power, 20 for magnitude"),
          Arg("reference", ArgType.FLOAT, optional=True, doc="reference value (positive; default: each sample's "
                                                              "maximum)"),
          Arg("cutoff_db", ArgType.FLOAT, -200.0, doc="the lowest result (dB)")],
    devices=("cpu", "gpu"))


@register(TO_DECIBELS, device=("cpu", "gpu"))
class ToDecibels(Operator):
    def setup(self) -> None:
        if self.args["reference"] is not None and self.args["reference"] == 0:
            raise ArgumentValueError(f"{self.label}: reference must not be 0 (leave it out for each sample's maximum)")

    def run(self, ws):
        a = self.args
        src = contiguous(ws.inputs[0])
        _float_input(self, src)
        out = ws.new_batch(src._shapes, np.float32, src._layout, src._source_info)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # float32 holds the floor as DALI does
            floor_ratio = float(np.float32(np.power(10.0, np.divide(a["cutoff_db"], a["multiplier"]))))
        ws.kernels.to_decibels(ws.pool, src._buf, src._shapes, src._offsets, out._buf, out._offsets,
                                 a["multiplier"], self._references(ws, src), floor_ratio)
        return [out]

    def _references(self, ws, src) -> Any:
        """float32 [N] on the operator's device: the given reference, or each sample's maximum
        (the reduction kernel; an empty sample keeps 1, it has nothing to divide)."""
        n = len(src)
        if self.args["reference"] is not None:
            return ws.device_array(np.full(n, self.args["reference"], np.float32))
        refs = ws.device_array(np.ones(n, np.float32))
        filled = np.nonzero(src._shapes.prod(axis=1) > 0)[0] if src._shapes.shape[1] else np.arange(n)
        if len(filled):
            ws.kernels.reduce(ws.pool, _KIND_CODES["max"], src._buf, src._shapes[filled], src._offsets[filled],
                              tuple(range(src.ndim())), refs, filled.astype(np.int64))
        return refs


# ---- nonsilent_region --------------------------------------------------------------------------

NONSILENT_REGION = OpSchema(
    "NonsilentRegion", "(begin, length) of the part of a 1-D signal louder than cutoff_db.",
    args=[Arg("cutoff_db", ArgType.FLOAT, -60.0, doc="threshold (dB) of the windowed power against the reference"),
          Arg("window_length", ArgType.INT, 2048, doc="samples averaged for the power"),
          Arg("reference_power", ArgType.FLOAT, optional=True,
              doc="reference power (positive; default: the sample's largest windowed power)"),
          Arg("reset_interval", ArgType.INT, 8192,
              doc="DALI recomputes its float running sum this often (a multiple of window_length, or -1: never); "
                  "penstock sums in double and needs no reset, but checks the value as DALI does")],
    num_outputs=2)


@register(NONSILENT_REGION)
class NonsilentRegion(Operator):
    def setup(self) -> None:
        a = self.args
        if a["window_length"] < 1:
            raise ArgumentValueError(f"{self.label}: window_length must be positive, got {a['window_length']}")
        if a["reference_power"] is not None and a["reference_power"] <= 0:
            raise ArgumentValueError(f"{self.label}: reference_power must be positive, got {a['reference_power']}")
        if a["reset_interval"] != -1 and (a["reset_interval"] < 1 or a["reset_interval"] % a["window_length"]):
            raise ArgumentValueError(f"{self.label}: reset_interval ({a['reset_interval']}) must be -1 or a multiple "
                                     f"of window_length ({a['window_length']})")

    def run(self, ws):
        a = self.args
        src = contiguous(ws.inputs[0])
        if src.ndim() != 1:
            raise ValueError(f"{self.label}: the input must be 1-D, got {src.ndim()}-D")
        begin, length = _engine.nonsilent_region(ws.pool, src._buf, int(to_dali_type(src._buf.dtype)), src._shapes,
                                                 src._offsets, a["cutoff_db"], a["window_length"],
                                                 a["reference_power"] or 0.0)
        scalar = np.zeros((len(src), 0), np.int64)
        outs = []
        for values in (begin, length):
            out = empty_batch(scalar, np.int32, "", src._source_info)
            out._buf[:len(src)] = values
            outs.append(out)
        return outs
