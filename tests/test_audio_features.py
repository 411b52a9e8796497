"""The speech feature operators against numpy/scipy references written from their definitions:
spectrogram, power_spectrum, mel_filter_bank (librosa-style triangles), mfcc (scipy's DCTs at
DALI's scale), to_decibels, preemphasis_filter, nonsilent_region and audio_resample."""
import numpy as np
import pytest
import scipy.fft

from _audio_data import signal
from penstock import fn, pipeline_def, types
from penstock.operators.audio_features import hann_window, mel_matrix


def _run(data, graph, layout=None):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def p():
        out = graph(fn.external_source(source=lambda: data, layout=layout))
        return tuple(out) if isinstance(out, (list, tuple)) else out
    pipe = p()
    pipe.build()
    outs = pipe.run()
    return [[np.array(o.at(i)) for i in range(len(o))] for o in outs], [o.layout() for o in outs]


def _signals():
    return [signal(kind, n, 16000, 1, k)[:, 0] for k, (kind, n) in
            enumerate([("speechlike", 4000), ("chirp", 731), ("noise", 97), ("tone", 2048)])]


def _spectrogram_reference(x, nfft=None, window_length=512, window_step=256, window_fn=None, power=2,
                           center_windows=True, reflect_padding=True):
    x = x.astype(np.float64)
    n = len(x)
    nfft = nfft or window_length
    w = hann_window(window_length) if window_fn is None else np.asarray(window_fn)
    frames = n // window_step + 1 if center_windows else (n - window_length) // window_step + 1
    shift = window_length // 2 if center_windows else 0
    out = []
    for f in range(frames):
        idx = f * window_step - shift + np.arange(window_length)
        if reflect_padding:
            period = 2 * (n - 1)
            idx = np.abs(idx) % period
            idx = np.where(idx >= n, period - idx, idx)
            values = x[idx]
        else:
            values = np.where((idx >= 0) & (idx < n), x[np.clip(idx, 0, n - 1)], 0)
        out.append(np.abs(np.fft.rfft(values * w, nfft)) ** power)
    return np.array(out).T


def _assert_close(got, want, rtol=1e-5):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("kw", [
    {}, {"nfft": 1024}, {"nfft": 512, "window_length": 400, "window_step": 160},
    {"nfft": 100, "window_length": 81, "window_step": 33}, {"power": 1}, {"reflect_padding": False},
    {"center_windows": False, "window_length": 64, "window_step": 16},
    {"window_length": 8, "window_step": 3, "window_fn": [0.1, 0.5, 1, 2, 2, 1, 0.5, 0.1]},
])
def test_spectrogram(kw):
    data = [x for x in _signals() if kw.get("center_windows", True) or len(x) >= kw["window_length"]]
    (out,), (layout,) = _run(data, lambda x: fn.spectrogram(x, **kw))
    assert layout == "ft"
    for x, s in zip(data, out):
        _assert_close(s, _spectrogram_reference(x, **kw))


def test_spectrogram_time_major_layout():
    data = _signals()
    (ft,), _ = _run(data, lambda x: fn.spectrogram(x))
    (tf,), (layout,) = _run(data, lambda x: fn.spectrogram(x, layout="tf"))
    assert layout == "tf"
    for a, b in zip(ft, tf):
        np.testing.assert_array_equal(a.T, b)


@pytest.mark.parametrize("kw", [{}, {"nfft": 16}, {"nfft": 100}, {"axis": 0}, {"power": 1}, {"axis": 0, "nfft": 7}])
def test_power_spectrum(kw):
    rng = np.random.default_rng(1)
    data = [rng.standard_normal((5, 33)).astype(np.float32), rng.standard_normal((5, 33)).astype(np.float32)]
    (out,), _ = _run(data, lambda x: fn.power_spectrum(x, **kw))
    axis = kw.get("axis", -1)
    for x, s in zip(data, out):
        want = np.abs(np.fft.rfft(x.astype(np.float64), kw.get("nfft", x.shape[axis]), axis=axis)) ** kw.get("power", 2)
        _assert_close(s, want)


def _hz_to_mel(f, htk):
    if htk:
        return 2595 * np.log10(1 + f / 700)
    return np.where(f < 1000, f * 3 / 200, 15 + np.log(np.maximum(f, 1e-9) / 1000) / (np.log(6.4) / 27))


def _mel_reference(bins, nfilter, sr, low, high, htk, normalize):
    """Triangles between mel-spaced corners, as librosa builds them (independent of the operator's code)."""
    mels = np.linspace(_hz_to_mel(np.float64(low), htk), _hz_to_mel(np.float64(high), htk), nfilter + 2)
    if htk:
        hz = 700 * (10 ** (mels / 2595) - 1)
    else:
        hz = np.where(mels < 15, mels * 200 / 3, 1000 * np.exp((mels - 15) * np.log(6.4) / 27))
    freqs = np.linspace(0, sr / 2, bins)
    m = np.zeros((nfilter, bins))
    for k in range(nfilter):
        up = (freqs - hz[k]) / (hz[k + 1] - hz[k])
        down = (hz[k + 2] - freqs) / (hz[k + 2] - hz[k + 1])
        m[k] = np.maximum(0, np.minimum(up, down)) * (2 / (hz[k + 2] - hz[k]) if normalize else 1)
    return m


@pytest.mark.parametrize("kw", [
    {"nfilter": 40, "sample_rate": 16000.0}, {"nfilter": 40, "sample_rate": 16000.0, "mel_formula": "htk"},
    {"nfilter": 20, "sample_rate": 16000.0, "freq_low": 300.0, "freq_high": 5000.0},
    {"nfilter": 64, "sample_rate": 22050.0, "normalize": False}, {},
])
def test_mel_filter_bank(kw):
    rng = np.random.default_rng(2)
    data = [np.abs(rng.standard_normal((257, 9))).astype(np.float32), np.abs(rng.standard_normal((257, 3))).astype(np.float32)]
    (out,), (layout,) = _run(data, lambda x: fn.mel_filter_bank(x, **kw), layout="ft")
    sr = kw.get("sample_rate", 44100.0)
    matrix = _mel_reference(257, kw.get("nfilter", 128), sr, kw.get("freq_low", 0.0), kw.get("freq_high", sr / 2),
                            kw.get("mel_formula") == "htk", kw.get("normalize", True))
    np.testing.assert_allclose(mel_matrix(257, kw.get("nfilter", 128), sr, kw.get("freq_low", 0.0),
                                          kw.get("freq_high", sr / 2), kw.get("mel_formula") == "htk",
                                          kw.get("normalize", True)), matrix, rtol=1e-9, atol=1e-12)
    assert layout == "ft"
    for x, m in zip(data, out):
        _assert_close(m, matrix @ x.astype(np.float64))


def test_mel_filter_bank_time_major():
    rng = np.random.default_rng(3)
    data = [np.abs(rng.standard_normal((6, 129))).astype(np.float32)]
    (out,), _ = _run(data, lambda x: fn.mel_filter_bank(x, nfilter=10, sample_rate=8000.0), layout="tf")
    _assert_close(out[0], data[0].astype(np.float64) @ _mel_reference(129, 10, 8000.0, 0, 4000.0, False, True).T)


@pytest.mark.parametrize("kw", [{}, {"n_mfcc": 13, "normalize": True}, {"dct_type": 1}, {"dct_type": 3},
                                {"dct_type": 3, "normalize": True}, {"dct_type": 4}, {"dct_type": 4, "normalize": True},
                                {"lifter": 22.0}, {"axis": 1, "n_mfcc": 4}])
def test_mfcc(kw):
    rng = np.random.default_rng(4)
    data = [rng.standard_normal((40, 7)).astype(np.float32), rng.standard_normal((40, 3)).astype(np.float32)]
    (out,), _ = _run(data, lambda x: fn.mfcc(x, **kw), layout="ft")
    axis = kw.get("axis", 0)
    for x, c in zip(data, out):
        n_mfcc = min(kw.get("n_mfcc", 20), x.shape[axis])  # at most as many as values, as in DALI
        norm = "ortho" if kw.get("normalize") else None
        want = scipy.fft.dct(x.astype(np.float64), type=kw.get("dct_type", 2), axis=axis, norm=norm)
        if norm is None:
            want = want / 2  # DALI's unnormalized DCTs are half of scipy's
        want = np.take(want, np.arange(n_mfcc), axis=axis)
        if kw.get("lifter"):
            lift = 1 + kw["lifter"] / 2 * np.sin(np.pi * (np.arange(n_mfcc) + 1) / kw["lifter"])
            want = want * (lift[:, None] if axis == 0 else lift[None, :])
        _assert_close(c, want)


@pytest.mark.parametrize("kw", [{}, {"multiplier": 20.0}, {"reference": 0.5}, {"cutoff_db": -30.0}])
def test_to_decibels(kw):
    rng = np.random.default_rng(5)
    data = [np.abs(rng.standard_normal((6, 5))).astype(np.float32) * 1e-3, np.zeros((2, 2), np.float32)]
    (out,), _ = _run(data, lambda x: fn.to_decibels(x, **kw))
    m, cutoff = kw.get("multiplier", 10.0), kw.get("cutoff_db", -200.0)
    ref = kw.get("reference") or data[0].max()
    np.testing.assert_allclose(out[0], m * np.log10(np.maximum(data[0] / ref, 10 ** (cutoff / m))), atol=1e-4)
    np.testing.assert_allclose(out[1], cutoff, atol=1e-3)  # a silent sample against its own maximum: the cutoff


@pytest.mark.parametrize("border", ["zero", "clamp", "reflect"])
def test_preemphasis_filter(border):
    data = [x.astype(np.float32) for x in _signals()] + [np.arange(12, dtype=np.float32).reshape(6, 2)]
    data = data[:4]
    (out,), _ = _run(data, lambda x: fn.preemphasis_filter(x, border=border, preemph_coeff=0.9))
    for x, y in zip(data, out):
        flat = x.reshape(-1).astype(np.float64)
        before = {"zero": 0.0, "clamp": flat[0], "reflect": flat[1]}[border]
        want = flat - 0.9 * np.concatenate([[before], flat[:-1]])
        np.testing.assert_allclose(y.reshape(-1), want, rtol=1e-6, atol=1e-6)


def test_preemphasis_of_integers_to_integers():
    data = [np.array([100, -200, 300, 32767, -32768], np.int16)]
    (out,), _ = _run(data, lambda x: fn.preemphasis_filter(x, dtype=types.INT16, preemph_coeff=0.5))
    np.testing.assert_array_equal(out[0], [50, -250, 400, 32617, -32768])


def test_nonsilent_region():
    rng = np.random.default_rng(6)
    loud = np.concatenate([np.zeros(5000), rng.standard_normal(3000), np.zeros(4000)]).astype(np.float32)
    data = [loud, np.zeros(300, np.float32), rng.standard_normal(50).astype(np.float32)]
    (begin, length), _ = _run(data, lambda x: fn.nonsilent_region(x, window_length=256, reset_interval=1024))
    assert begin[0].dtype == np.int32 and begin[0].shape == ()
    # the windows end at each position: the first loud one begins window_length - 1 before the loud part,
    # the last one to reach it ends window_length - 1 after it
    assert (int(begin[0]), int(length[0])) == (5000 - 255, (7999 + 255) - (5000 - 255) + 1)
    assert (int(begin[1]), int(length[1])) == (0, 300)  # silence against its own maximum counts as loud (DALI)
    assert (int(begin[2]), int(length[2])) == (0, 50)


def test_audio_resample_lengths_and_a_tone():
    t = np.arange(4410) / 44100
    tone = (0.5 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    (mono,), _ = _run([tone], lambda x: fn.audio_resample(x, in_rate=44100.0, out_rate=16000.0))
    (stereo,), _ = _run([np.stack([tone, -tone], axis=1)],
                        lambda x: fn.audio_resample(x, in_rate=44100.0, out_rate=16000.0))
    n = int(np.ceil(4410 * 16000 / 44100))
    want = 0.5 * np.sin(2 * np.pi * 300 * np.arange(n) / 16000)
    assert mono[0].shape == (n,) and stereo[0].shape == (n, 2)
    np.testing.assert_allclose(mono[0][100:-100], want[100:-100], atol=2e-3)
    np.testing.assert_allclose(stereo[0][:, 0], mono[0], atol=1e-7)
    np.testing.assert_allclose(stereo[0][:, 1], -mono[0], atol=1e-7)
    (lengths,), _ = _run([tone], lambda x: fn.audio_resample(x, out_length=1234))
    assert lengths[0].shape == (1234,)


def test_audio_resample_at_equal_rates_gives_the_samples():
    # every output lies on an input sample, where the windowed sinc weighs 1 and its zeros (< 1e-16)
    x = (np.sin(np.arange(700) / 5) * 0.7).astype(np.float32)
    ints = (x * 30000).astype(np.int16)
    (f,), _ = _run([x], lambda s: fn.audio_resample(s, in_rate=16000.0, out_rate=16000.0))
    (same,), _ = _run([x], lambda s: fn.audio_resample(s, scale=1.0))
    (i,), _ = _run([ints], lambda s: fn.audio_resample(s, scale=1.0))
    np.testing.assert_array_equal(f[0], x)
    np.testing.assert_array_equal(same[0], x)
    np.testing.assert_array_equal(i[0], ints)


def test_audio_resample_integers_as_fractions_of_full_scale():
    x = (np.sin(np.arange(500) / 7) * 20000).astype(np.int16)
    (f,), _ = _run([x], lambda s: fn.audio_resample(s, scale=1.5, dtype=types.FLOAT))
    (i,), _ = _run([x], lambda s: fn.audio_resample(s, scale=1.5))
    assert i[0].dtype == np.int16 and f[0].dtype == np.float32
    scaled = (f[0] * np.float32(32767)).astype(np.float64)  # in float, then rounded half away from zero
    np.testing.assert_array_equal(i[0], np.trunc(scaled + np.copysign(0.5, scaled)).astype(np.int16))
    assert abs(float(np.abs(f[0]).max()) - 20000 / 32767) < 0.02  # the peaks between the samples too


def test_spectrogram_of_an_empty_signal_names_the_sample():
    with pytest.raises(RuntimeError, match=r"(?s)sample 1.*empty"):
        _run([np.ones(50, np.float32), np.zeros(0, np.float32)], lambda x: fn.spectrogram(x, window_length=8))


@pytest.mark.parametrize("graph, message", [
    (lambda x: fn.spectrogram(x, nfft=100), "nfft"),
    (lambda x: fn.spectrogram(x, power=3), "power"),
    (lambda x: fn.mfcc(x, dct_type=1, normalize=True), "type 1"),
    (lambda x: fn.audio_resample(x), "in_rate"),
    (lambda x: fn.audio_resample(x, scale=2.0, out_length=3), "exclude"),
    (lambda x: fn.preemphasis_filter(x, border="wrap"), "border"),
    (lambda x: fn.nonsilent_region(x, window_length=100, reset_interval=150), "multiple"),
])
def test_argument_errors(graph, message):
    with pytest.raises(RuntimeError, match=message):
        _run([np.ones((40, 3), np.float32)], graph)
