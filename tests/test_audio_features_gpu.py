"""The speech feature operators' GPU kernels (csrc/cuda/audio_features.cu, cuFFT through CuPy) against the
CPU: the same graph run on both devices must agree within float rounding, and the example's front
end runs with its features on the GPU. Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, types  # noqa: E402

from _audio_data import signal  # noqa: E402
from test_gpu_breadth import run_mixed  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

SIGNALS = [signal(kind, n, 16000, 1, k)[:, 0] for k, (kind, n) in
           enumerate([("speechlike", 16000), ("chirp", 731), ("noise", 97), ("tone", 4096)])]


def _agree(graph, data, layouts=None, rtol=2e-5):
    cpu = run_mixed("cpu", graph, data, layouts=layouts)
    gpu = run_mixed("gpu", graph, data, layouts=layouts)
    for (c_samples, c_layout), (g_samples, g_layout) in zip(cpu, gpu):
        assert c_layout == g_layout
        for c, g in zip(c_samples, g_samples):
            c, g = np.asarray(c), np.asarray(g)
            assert c.shape == g.shape and c.dtype == g.dtype
            np.testing.assert_allclose(g, c, rtol=rtol, atol=rtol * max(float(np.abs(c).max(initial=0)), 1e-30))


@pytest.mark.parametrize("kw", [{}, {"nfft": 512, "window_length": 400, "window_step": 160, "layout": "tf"},
                                {"nfft": 100, "window_length": 81, "window_step": 33, "power": 1},
                                {"reflect_padding": False, "center_windows": False, "window_length": 64}])
def test_spectrogram(kw):
    _agree(lambda x: fn.spectrogram(x, **kw), [SIGNALS])


@pytest.mark.parametrize("kw", [{}, {"nfft": 100, "axis": 0}])
def test_power_spectrum(kw):
    rng = np.random.default_rng(1)
    _agree(lambda x: fn.power_spectrum(x, **kw), [[rng.standard_normal((5, 33)).astype(np.float32)] * 3])


def test_the_feature_chain():
    def chain(x):
        x = fn.preemphasis_filter(x)
        spec = fn.spectrogram(x, nfft=512, window_length=400, window_step=160)
        mel = fn.mel_filter_bank(spec, sample_rate=16000.0, nfilter=64)
        db = fn.to_decibels(mel, cutoff_db=-80.0)
        return mel, db, fn.mfcc(db, n_mfcc=13, normalize=True, lifter=22.0)
    _agree(chain, [SIGNALS], rtol=1e-4)


def test_preemphasis_of_integers():
    ints = [(x * 20000).astype(np.int16) for x in SIGNALS]
    _agree(lambda x: fn.preemphasis_filter(x, border="reflect", dtype=types.FLOAT), [ints], rtol=1e-6)


def test_speech_example_with_features_on_the_gpu(tmp_path):
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "audio"))
    import speech_features as example
    import penstock
    manifest = example.make_manifest(str(tmp_path), count=6)
    cpu = example.speech_pipeline(penstock, manifest, 6, seed=3)
    gpu = example.speech_pipeline(penstock, manifest, 6, seed=3, device="gpu")
    for c, g in zip(cpu.run(), gpu.run()):
        g = g.as_cpu()
        for i in range(len(c)):
            np.testing.assert_allclose(np.asarray(g.at(i)), np.asarray(c.at(i)), rtol=1e-3, atol=1e-3)
