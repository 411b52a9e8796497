"""The dynamic mode on the GPU: transfers, GPU operators (the pipeline's GPU kernels, on the
context's stream), GPU decoding, streams and exchange with CuPy and PyTorch. Needs CuPy and a
CUDA device."""
import io
import os
import sys

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cp.is_available(), reason="needs a CUDA device")]

import penstock.experimental.dynamic as ndd  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import photo_like  # noqa: E402


def _images(n=3):
    rng = np.random.default_rng(1)
    return [photo_like(rng, 48 + 4 * i, 64 + 6 * i) for i in range(n)]


def _samples(b):
    return [np.asarray(t.cpu()) for t in b.tensors]


def test_transfers_keep_the_data_and_report_the_device():
    b = ndd.batch(_images(), layout="HWC")
    g = b.gpu()
    assert g.device.device_type == "gpu" and g.device.device_id == 0 and g.layout == "HWC"
    for got, want in zip(_samples(g), _images()):
        np.testing.assert_array_equal(got, want)
    t = ndd.tensor(np.arange(6, dtype=np.int32)).gpu()
    assert t.__cuda_array_interface__["shape"] == (6,) and t.__dlpack_device__()[0] == 2
    assert cp.asarray(t).sum().item() == 15
    assert t.cpu().device.device_type == "cpu" and t.gpu() is t
    with pytest.raises(TypeError):
        np.asarray(t)


@pytest.mark.parametrize("op, kwargs, tol", [
    ("flip", {"horizontal": 1, "vertical": 1}, 0),
    ("resize", {"size": (20, 30)}, 1),
    ("crop_mirror_normalize", {"crop": (32, 32), "mean": [128.0], "std": [50.0], "mirror": 1}, 1e-4),
    ("gaussian_blur", {"sigma": 1.5}, 1),
    ("brightness_contrast", {"brightness": 1.2, "contrast": 0.8}, 1),
])
def test_gpu_operators_give_the_cpu_operators_values(op, kwargs, tol):
    b = ndd.batch(_images(), layout="HWC")
    f = getattr(ndd, op)
    on_cpu = f(b, **kwargs)
    on_gpu = f(b.gpu(), **kwargs)
    assert on_gpu.device.device_type == "gpu"
    explicit = f(b, device="gpu", **kwargs)
    assert explicit.device.device_type == "gpu"
    for got, again, want in zip(_samples(on_gpu), _samples(explicit), _samples(on_cpu)):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=tol, rtol=0)
        np.testing.assert_array_equal(got, again)


def test_speech_features_on_the_gpu_give_the_cpu_s_values():
    from _audio_data import signal
    signals = ndd.batch([signal(kind, n, 16000, 1, k)[:, 0] for k, (kind, n) in
                         enumerate([("speechlike", 16000), ("chirp", 731), ("tone", 4096)])])

    def chain(x):
        spec = ndd.spectrogram(ndd.preemphasis_filter(x), nfft=512, window_length=400, window_step=160)
        db = ndd.to_decibels(ndd.mel_filter_bank(spec, sample_rate=16000.0, nfilter=64), cutoff_db=-80.0)
        return db, ndd.mfcc(db, n_mfcc=13, normalize=True, lifter=22.0)

    for on_cpu, on_gpu in zip(chain(signals), chain(signals.gpu())):
        assert on_gpu.device.device_type == "gpu" and on_gpu.layout == on_cpu.layout
        for got, want in zip(_samples(on_gpu), _samples(on_cpu)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_arithmetic_and_chains_on_the_gpu_in_every_mode():
    b = ndd.batch(_images(), layout="HWC")
    want = [np.asarray(t) for t in (ndd.cast(ndd.flip(b, horizontal=1), dtype=ndd.float32) * 0.5 + 1).tensors]
    for mode in ndd.EvalMode:
        with mode:
            out = ndd.cast(ndd.flip(b.gpu(), horizontal=1), dtype=ndd.float32) * 0.5 + 1
            for got, w in zip(_samples(out), want):
                np.testing.assert_allclose(got, w, rtol=1e-6)


def test_gpu_decoding_with_device_gpu_or_mixed():
    from PIL import Image
    jpegs = []
    for img in _images():
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=92)
        jpegs.append(np.frombuffer(buf.getvalue(), np.uint8))
    data = ndd.batch(jpegs)
    on_cpu = ndd.decoders.image(data)
    for device in ("gpu", "mixed"):
        # chroma upsampled as the CPU does it (the mixed decoders' default, as DALI's, is not)
        on_gpu = ndd.decoders.image(data, device=device, jpeg_fancy_upsampling=True)
        assert on_gpu.device.device_type == "gpu"
        for got, want in zip(_samples(on_gpu), _samples(on_cpu)):
            assert got.shape == want.shape
            assert np.abs(got.astype(int) - want.astype(int)).mean() < 2


def test_cupy_and_torch_data_in_and_out():
    g = cp.arange(24, dtype=cp.float32).reshape(2, 3, 4)
    t = ndd.as_tensor(g)
    assert t.device.device_type == "gpu" and t.shape == (2, 3, 4)
    out = ndd.cast(t, dtype=ndd.int32)
    assert out.device.device_type == "gpu" and cp.asarray(out).sum().item() == 276
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    tt = torch.arange(12, device="cuda", dtype=torch.float32).reshape(3, 4)
    back = (ndd.as_tensor(tt) * 2).torch()
    assert back.is_cuda and torch.equal(back, tt * 2)
    b = ndd.batch([np.ones((2, 2), np.float32), np.ones((3, 1), np.float32)]).gpu()
    padded = b.torch(pad=True)
    assert padded.is_cuda and padded.shape == (2, 3, 2) and padded.sum().item() == 7


def test_operators_run_on_the_context_stream():
    s = ndd.stream()
    assert s.device_id == 0 and s.handle != 0
    with ndd.EvalContext(cuda_stream=s) as ctx:
        assert ctx.cuda_stream == s
        out = ndd.flip(ndd.batch(_images(), layout="HWC").gpu(), horizontal=1).evaluate()
    assert out._value().stream.ptr == s.handle
    ndd.set_current_stream(s)
    try:
        assert ndd.get_current_stream() == s and ndd.EvalContext.current().cuda_stream == s
    finally:
        ndd.set_current_stream(None)
    other = cp.cuda.Stream(non_blocking=True)
    wrapped = ndd.stream(stream=other)
    assert wrapped.handle == other.ptr and wrapped == other
    ndd.set_default_stream(wrapped)
    try:
        assert ndd.get_default_stream() == wrapped
    finally:
        ndd.set_default_stream(None)


def test_sync_full_waits_for_the_gpu():
    with ndd.EvalMode.sync_full:
        out = ndd.resize(ndd.batch(_images(), layout="HWC").gpu(), size=(16, 16))
        assert out._storage is not None and out._value().stream.done


def test_cpu_only_operators_take_gpu_inputs_back_to_the_host():
    boxes = ndd.tensor(np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)).gpu()
    anchor, shape, out_boxes = ndd.random_bbox_crop(boxes, bbox_layout="xyXY", rng=ndd.random.RNG(seed=1))
    assert anchor.device.device_type == "cpu" and out_boxes.device.device_type == "cpu"


def test_devices_and_contexts_of_the_gpu():
    d = ndd.Device("gpu")
    assert d.device_id == 0 and str(d) == "gpu:0" and ndd.device("cuda:0") == d
    assert ndd.Device.current().device_type == "gpu"
    ctx = ndd.EvalContext(device_id=0)
    assert ctx.device_id == 0 and ctx.cuda_stream is not None
    with pytest.raises(ValueError):
        ndd.Device("gpu", 10_000)
