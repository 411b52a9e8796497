"""The audio operators on penstock and on DALI 2.4, on audio the tests make (tests/_audio_data.py):
every container, the decoder's and reader's arguments, and the feature chain's arguments one by
one and chained. Decoded PCM of lossless files must be equal; resampled and lossy-decoded audio
within 1 level or 1e-5 of full scale (integers; INT32 made from float arithmetic differs in the
float's last bits) or 1e-4 of full scale (floats); features within 1e-4 relative (plus 1e-5 of the
sample's largest value, for bins that cancel to almost nothing), decibels within 1e-3 dB where the
value is within that tolerance of the sample's largest (below it, DALI's float32 spectra carry
rounding noise of tenths of a dB that penstock's double-precision transforms do not: there the
values are compared as linear values, within the features' tolerance).

Not compared: mel_filter_bank with freq_high above sample_rate / 2, where DALI 2.4 reads past the
spectrum's last bin (its results change from run to run; penstock's filters weigh nothing there).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _audio_data import CONTAINERS, LOSSY, files, signal  # noqa: E402
from _harness import T, _const, compare, resolve, run, run_dali, settle  # noqa: E402

import soundfile  # noqa: E402 - the audio extra, installed wherever the tests run


@dataclasses.dataclass
class Step:
    op: str                       # fn path, "decoders.audio"
    kwargs: dict = dataclasses.field(default_factory=dict)
    arg_inputs: dict = dataclasses.field(default_factory=dict)  # argument -> index of an external source


@dataclasses.dataclass
class AudioCase:
    """External sources (arrays per sample, layout), then operators applied one after another to
    the first source (or, for a reader, to nothing); the last operator's outputs are compared."""
    id: str
    sources: list                 # [(samples, layout)]
    steps: list
    check: str = "features"       # "exact", "pcm", "features", "db", "structure"
    multiplier: float = 10.0      # of the decibels, for check "db"
    inputs: tuple = ()            # (the harness's input kinds: none, the case makes its own)

    @property
    def batch_size(self) -> int:
        return len(self.sources[0][0]) if self.sources else 4

    def graph(self, lib: Any) -> Any:
        nodes = [lib.fn.external_source(source=_const(samples), layout=layout) for samples, layout in self.sources]
        x = nodes[0] if nodes else None
        out = None
        for step in self.steps:
            f = lib.fn
            for part in step.op.split("."):
                f = getattr(f, part)
            kwargs = {k: resolve(lib, v) for k, v in step.kwargs.items()}
            kwargs.update({k: nodes[i] for k, i in step.arg_inputs.items()})
            out = f(x, **kwargs) if x is not None else f(**kwargs)
            x = out[0] if isinstance(out, (list, tuple)) else out
        return out


def _close(ours: np.ndarray, theirs: np.ndarray, check: str, multiplier: float) -> str | None:
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if check == "exact":
        bad = a != b
    elif check == "pcm" and ours.dtype.kind in "iu":
        bad = np.abs(a - b) > max(1.0, 1e-5 * np.iinfo(ours.dtype).max)
    elif check == "pcm":
        bad = np.abs(a - b) > 1e-4
    elif check == "db":
        top = b.max() if b.size else 0
        linear_a, linear_b = 10 ** ((a - top) / multiplier), 10 ** ((b - top) / multiplier)
        bad = (np.abs(a - b) > 1e-3) & (np.abs(linear_a - linear_b) > 1e-4 * linear_b + 1e-5)
    else:
        bad = np.abs(a - b) > 1e-4 * np.abs(b) + 1e-5 * (np.abs(b).max() if b.size else 0)
    if bad.any():
        return f"{int(bad.sum())} of {a.size} values differ (max {np.abs(a - b).max():.3g})"
    return None


def check_audio_case(case: AudioCase) -> None:
    import penstock
    ours = run(penstock, lambda lib: case.graph(lib), [], case.batch_size)
    theirs = run_dali(case)
    # the harness compares errors, dtypes, layouts and ranks (random=True: not the values); shapes and
    # values by this file's tolerances
    diff = compare(ours, theirs, random=True)
    if diff is None and ours.outputs is not None and case.check != "structure":
        for k, ((_, _, mine), (_, _, dali)) in enumerate(zip(ours.outputs, theirs.outputs)):
            for i, (x, y) in enumerate(zip(mine, dali)):
                problem = (f"shape {x.shape}, DALI {y.shape}" if x.shape != y.shape
                           else _close(x, y, case.check, case.multiplier))
                if problem:
                    diff = f"output {k} sample {i}: {problem}"
                    break
            if diff:
                break
    from known_differences import INTENDED, OPEN
    settle(case.id, INTENDED.get(case.id) or OPEN.get(case.id), diff)


# ---- the cases ---------------------------------------------------------------------------------

def _signals(lengths=(4000, 731, 16000, 97), seed=3) -> list[np.ndarray]:
    kinds = ("speechlike", "chirp", "noise", "tone")
    return [signal(kinds[k % 4], n, 16000, 1, seed + k)[:, 0] for k, n in enumerate(lengths)]


def _decoder_cases() -> list[AudioCase]:
    cases = []
    for container in CONTAINERS:
        data = files(container, 4, seed=len(container))
        exact = "pcm" if container in LOSSY else "exact"
        src = [(data, None)]
        variants = [("default", {}, exact), ("int16", {"dtype": T("INT16")}, exact),
                    ("int32", {"dtype": T("INT32")}, exact), ("downmix", {"downmix": True}, "pcm"),
                    ("downmix_int16", {"downmix": True, "dtype": T("INT16")}, "pcm"),
                    ("to16k", {"sample_rate": 16000.0}, "pcm"),
                    ("to44k_q100_int32", {"sample_rate": 44100.0, "quality": 100.0, "dtype": T("INT32")}, "pcm"),
                    ("to8k_q0_downmix_int16", {"sample_rate": 8000.0, "quality": 0.0, "downmix": True,
                                               "dtype": T("INT16")}, "pcm")]
        for name, kwargs, check in variants:
            cases.append(AudioCase(f"decoders.audio:{container}:{name}", src, [Step("decoders.audio", kwargs)], check))
    rates = [np.array(r, np.float32) for r in (16000, 0, 22050, 8000)]
    cases.append(AudioCase("decoders.audio:per_sample_rate", [(files("wav16"), None), (rates, None)],
                           [Step("decoders.audio", {}, {"sample_rate": 1})], "pcm"))
    cases.append(AudioCase("audio_decoder:deprecated_alias", [(files("flac16"), None)],
                           [Step("audio_decoder", {"downmix": True})], "pcm"))
    cases.append(AudioCase("decoders.audio:dtype_uint8", [(files("wav16"), None)],
                           [Step("decoders.audio", {"dtype": T("UINT8")})], "structure"))
    cases.append(AudioCase("decoders.audio:quality_101", [(files("wav16"), None)],
                           [Step("decoders.audio", {"sample_rate": 8000.0, "quality": 101.0})], "structure"))
    return cases


def _resample_cases() -> list[AudioCase]:
    mono = _signals()
    stereo = [signal("speechlike", n, 22050, 2, 9) for n in (3000, 211, 5000, 64)]
    ints = [np.round(x * 20000).astype(np.int16) for x in _signals(seed=11)]
    cases = []
    for name, src in (("mono", mono), ("stereo", stereo), ("int16", ints)):
        for label, kwargs in (("scale", {"scale": 1.37}), ("down", {"in_rate": 16000.0, "out_rate": 8000.0}),
                              ("up", {"in_rate": 22050.0, "out_rate": 44100.0}), ("out_length", {"out_length": 333}),
                              ("q0", {"scale": 0.61, "quality": 0.0}), ("q100", {"scale": 0.61, "quality": 100.0}),
                              ("q10_float", {"scale": 2.3, "quality": 10.0, "dtype": T("FLOAT")}),
                              ("to_int16", {"scale": 0.8, "dtype": T("INT16")}), ("same", {"scale": 1.0})):
            cases.append(AudioCase(f"audio_resample:{name}:{label}", [(src, None)],
                                   [Step("audio_resample", kwargs)], "pcm"))
    per_sample = [np.array(v, np.float32) for v in (0.5, 1.5, 2.0, 1.0)]
    cases.append(AudioCase("audio_resample:per_sample_scale", [(mono, None), (per_sample, None)],
                           [Step("audio_resample", {}, {"scale": 1})], "pcm"))
    cases.append(AudioCase("experimental.audio_resample:deprecated_alias", [(mono, None)],
                           [Step("experimental.audio_resample", {"scale": 0.5})], "pcm"))
    cases.append(AudioCase("audio_resample:error:empty_input", [([np.zeros(0, np.float32), mono[1]], None)],
                           [Step("audio_resample", {"out_length": 7})], "structure"))
    for label, kwargs in (("none", {}), ("scale_and_length", {"scale": 2.0, "out_length": 5}),
                          ("in_rate_only", {"in_rate": 2.0}), ("quality_101", {"scale": 2.0, "quality": 101.0})):
        cases.append(AudioCase(f"audio_resample:error:{label}", [(mono, None)], [Step("audio_resample", kwargs)],
                               "structure"))
    return cases


def _preemphasis_cases() -> list[AudioCase]:
    mono, stereo = _signals(), [signal("noise", n, 16000, 2, 4) for n in (300, 41, 1000, 2)]
    ints = [np.round(x * 20000).astype(np.int16) for x in _signals(seed=5)]
    coeffs = [np.array(v, np.float32) for v in (0.97, 0.5, 0.0, 1.0)]
    cases = []
    for name, src in (("mono", mono), ("stereo", stereo), ("int16", ints)):
        for label, kwargs in (("default", {}), ("zero", {"border": "zero"}), ("reflect", {"border": "reflect"}),
                              ("coeff", {"preemph_coeff": 0.5}), ("to_int16", {"dtype": T("INT16")})):
            cases.append(AudioCase(f"preemphasis_filter:{name}:{label}", [(src, None)],
                                   [Step("preemphasis_filter", kwargs)], "pcm"))
    cases.append(AudioCase("preemphasis_filter:per_sample_coeff", [(mono, None), (coeffs, None)],
                           [Step("preemphasis_filter", {}, {"preemph_coeff": 1})], "pcm"))
    cases.append(AudioCase("preemphasis_filter:error:border", [(mono, None)],
                           [Step("preemphasis_filter", {"border": "bogus"})], "structure"))
    return cases


_SPECTROGRAM_VARIANTS = (
    ("default", {}), ("nfft", {"nfft": 1024}), ("asr", {"nfft": 512, "window_length": 400, "window_step": 160}),
    ("odd", {"nfft": 100, "window_length": 81, "window_step": 33}), ("window_fn", {
        "window_length": 16, "window_step": 5, "window_fn": [float(v) for v in np.linspace(0, 1, 16)]}),
    ("magnitude", {"power": 1}), ("not_centered", {"center_windows": False, "window_length": 64, "window_step": 32}),
    ("zero_padding", {"reflect_padding": False}), ("tf", {"layout": "tf"}),
    ("short_reflect", {"window_length": 256, "window_step": 64}),
)


def _feature_cases() -> list[AudioCase]:
    sig = _signals()
    cases = [AudioCase(f"spectrogram:{label}", [(sig, None)], [Step("spectrogram", kw)])
             for label, kw in _SPECTROGRAM_VARIANTS]
    for label, kw in (("nfft_short", {"nfft": 256}), ("power3", {"power": 3}), ("window_fn_length", {"window_fn": [1.0]}),
                      ("not_centered_too_short", {"center_windows": False})):
        cases.append(AudioCase(f"spectrogram:error:{label}", [(sig, None)], [Step("spectrogram", kw)], "structure"))
    column = [x[:, None] for x in sig]
    cases.append(AudioCase("spectrogram:column_input", [(column, None)], [Step("spectrogram", {})]))
    spec = Step("spectrogram", {"nfft": 512, "window_length": 400, "window_step": 160})
    for label, kw in (("default", {}), ("asr", {"nfilter": 64, "sample_rate": 16000.0}),
                      ("htk", {"nfilter": 40, "sample_rate": 16000.0, "mel_formula": "htk"}),
                      ("band", {"nfilter": 20, "sample_rate": 16000.0, "freq_low": 300.0, "freq_high": 5000.0}),
                      ("not_normalized", {"nfilter": 40, "sample_rate": 16000.0, "normalize": False})):
        cases.append(AudioCase(f"mel_filter_bank:{label}", [(sig, None)], [spec, Step("mel_filter_bank", kw)]))
    cases.append(AudioCase("mel_filter_bank:tf", [(sig, None)], [
        Step("spectrogram", {"layout": "tf"}), Step("mel_filter_bank", {"nfilter": 30, "sample_rate": 16000.0})]))
    mel = [spec, Step("mel_filter_bank", {"nfilter": 64, "sample_rate": 16000.0})]
    for label, kw in (("default", {}), ("magnitude", {"multiplier": 20.0}), ("reference", {"reference": 1e-3}),
                      ("cutoff", {"cutoff_db": -80.0})):
        cases.append(AudioCase(f"to_decibels:{label}", [(sig, None)], mel + [Step("to_decibels", kw)], "db",
                               multiplier=kw.get("multiplier", 10.0)))
    silent = [np.zeros(500, np.float32), sig[1]]
    cases.append(AudioCase("to_decibels:silent_sample", [(silent, None)],
                           [Step("spectrogram", {}), Step("to_decibels", {})], "db"))
    log_mel = mel + [Step("to_decibels", {"cutoff_db": -80.0})]  # above DALI's float rounding noise
    for label, kw in (("default", {}), ("n13_ortho", {"n_mfcc": 13, "normalize": True}), ("dct1", {"dct_type": 1}),
                      ("dct3", {"dct_type": 3}), ("dct3_ortho", {"dct_type": 3, "normalize": True}),
                      ("dct4", {"dct_type": 4}), ("dct4_ortho", {"dct_type": 4, "normalize": True}),
                      ("lifter", {"lifter": 22.0}), ("axis1", {"axis": 1, "n_mfcc": 5})):
        cases.append(AudioCase(f"mfcc:{label}", [(sig, None)], log_mel + [Step("mfcc", kw)]))
    cases.append(AudioCase("mfcc:error:dct1_ortho", [(sig, None)], log_mel + [Step("mfcc", {"dct_type": 1,
                                                                                        "normalize": True})],
                           "structure"))
    rng = np.random.default_rng(7)
    planes = [np.abs(rng.standard_normal((2, 129, n))).astype(np.float32) for n in (5, 1, 9, 3)]
    cases.append(AudioCase("mel_filter_bank:3d_cft", [(planes, "cft")], [Step("mel_filter_bank", {
        "nfilter": 12, "sample_rate": 8000.0})]))
    cases.append(AudioCase("power_spectrum:3d_axis1", [(planes, None)], [Step("power_spectrum", {"axis": 1})]))
    lines = [rng.standard_normal((4, n)).astype(np.float32) for n in (30, 17, 64, 5)]
    for label, kw in (("default", {}), ("nfft_short", {"nfft": 16}), ("nfft_long", {"nfft": 100}),
                      ("axis0", {"axis": 0}), ("magnitude", {"power": 1}), ("axis0_nfft", {"axis": 0, "nfft": 6})):
        src = lines if "nfft" in kw or kw.get("axis") == 0 else [x[:, :17] for x in lines]
        cases.append(AudioCase(f"power_spectrum:{label}", [(src, None)], [Step("power_spectrum", kw)]))
    return cases


def _nonsilent_cases() -> list[AudioCase]:
    rng = np.random.default_rng(8)
    # quiet parts well away from the thresholds (a power within rounding of one decides by DALI's float sums)
    speech = [np.concatenate([np.zeros(5000), rng.standard_normal(3000) * 0.5, np.zeros(4000)]).astype(np.float32),
              np.zeros(3000, np.float32), rng.standard_normal(100).astype(np.float32),
              np.concatenate([1e-5 * rng.standard_normal(2000), signal("speechlike", 6000, 16000, 1)[:, 0],
                              1e-5 * rng.standard_normal(3000)]).astype(np.float32)]
    ints = [np.round(x * 20000).astype(np.int16) for x in speech]
    cases = []
    for name, src in (("float", speech), ("int16", ints)):
        for label, kw in (("default", {}), ("cutoff", {"cutoff_db": -20.0}),
                          ("window", {"window_length": 100, "reset_interval": 200}),
                          ("reference", {"reference_power": 0.01}), ("no_reset", {"window_length": 5000,
                                                                                   "reset_interval": -1})):
            cases.append(AudioCase(f"nonsilent_region:{name}:{label}", [(src, None)],
                                   [Step("nonsilent_region", kw)], "exact"))
    cases.append(AudioCase("nonsilent_region:error:reset_interval", [(speech, None)],
                           [Step("nonsilent_region", {"window_length": 100, "reset_interval": 50})], "structure"))
    return cases


def _front_end_cases() -> list[AudioCase]:
    steps = [Step("decoders.audio", {"sample_rate": 16000.0, "downmix": True}),
             Step("preemphasis_filter", {}),
             Step("spectrogram", {"nfft": 512, "window_length": 320, "window_step": 160}),
             Step("mel_filter_bank", {"nfilter": 64, "sample_rate": 16000.0}),
             Step("to_decibels", {"multiplier": 10.0, "reference": 1.0, "cutoff_db": -80.0})]
    return [AudioCase(f"front_end:{container}", [(files(container, 4, seed=2), None)], steps, "db")
            for container in ("wav16", "flac24", "vorbis")]


# ---- readers.nemo_asr: manifests over files written once per session -----------------------------

_NEMO_DIR = os.path.join(tempfile.gettempdir(), f"penstock_nemo_differential_{os.getuid()}")


def _nemo_manifest() -> str:
    manifest = os.path.join(_NEMO_DIR, "manifest.json")
    if os.path.exists(manifest):
        return manifest
    os.makedirs(_NEMO_DIR, exist_ok=True)
    lines = []
    for k, container in enumerate(["wav16", "flac16", "vorbis", "wav24", "wavfloat", "flac24", "wav16", "opus"]):
        path = os.path.join(_NEMO_DIR, f"{k}.{container}")
        data = files(container, 1, seed=k)[0]
        data.tofile(path)
        info = soundfile.info(path)
        entry = {"audio_filepath": path, "duration": round(info.duration * (0.5 if k % 3 == 1 else 1), 4),
                 "text": ["hello world", "Zürich  two", "", "three four five"][k % 4]}
        if k % 3 == 1:
            entry["offset"] = round(info.duration * 0.25, 4)
        lines.append(json.dumps(entry, ensure_ascii=False))
    with open(manifest + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(manifest + ".tmp", manifest)
    return manifest


def _nemo_cases() -> list[AudioCase]:
    manifest = _nemo_manifest()
    base = {"manifest_filepaths": [manifest]}
    variants = [("default", {}), ("int16_stereo", {"dtype": T("INT16"), "downmix": False}),
                ("resampled", {"sample_rate": 16000.0}), ("quality", {"sample_rate": 8000.0, "quality": 10.0}),
                ("idxs", {"read_idxs": True, "read_text": False, "read_sample_rate": False}),
                ("durations", {"min_duration": 0.06, "max_duration": 0.15, "read_idxs": True}),
                ("shard1of3", {"shard_id": 1, "num_shards": 3, "read_idxs": True}),
                ("shuffled", {"random_shuffle": True, "initial_fill": 3, "seed": 5, "read_idxs": True}),
                ("after_epoch", {"shuffle_after_epoch": True, "read_idxs": True}),
                ("after_epoch_seed", {"shuffle_after_epoch": True, "shuffle_after_epoch_seed": 77, "read_idxs": True})]
    cases = [AudioCase(f"readers.nemo_asr:{label}", [], [Step("readers.nemo_asr", dict(base, **kw))], "pcm")
             for label, kw in variants]
    cases.append(AudioCase("readers.nemo_asr:two_manifests", [], [Step("readers.nemo_asr", {
        "manifest_filepaths": [manifest, manifest], "read_idxs": True, "shard_id": 1, "num_shards": 2})], "pcm"))
    cases.append(AudioCase("nemo_asr_reader:deprecated_alias", [], [Step("nemo_asr_reader", dict(base))], "pcm"))
    return cases


CASES = (_decoder_cases() + _resample_cases() + _preemphasis_cases() + _feature_cases() + _nonsilent_cases()
         + _front_end_cases() + _nemo_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_audio_case(case):
    check_audio_case(case)
