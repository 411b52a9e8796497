"""GPU kernels of one_hot, erase, grid_mask, paste, gaussian_blur and jpeg_compression_distortion
against their CPU siblings: the same graph run on both devices (data moved to the GPU, per-sample
argument inputs left on the CPU) must agree. Needs CuPy and a CUDA device.

Tolerances: one_hot, erase, grid_mask and paste copy or select values, so they must match exactly;
gaussian_blur sums the same taps in the same order without fused multiply-adds, with the CPU
kernel's own weights (the engine's gaussian_windows; they came from numpy's float32 exp before), so
the tolerances (an integer result 1 level apart, a float one 1e-5) are a bound, not the expected
difference; jpeg_compression_distortion: see its test."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, pipeline_def, types  # noqa: E402
from penstock.tensors import TensorListGPU  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(11)


def _const(d):
    return lambda: d


def run_on(device, graph, data, layout=None, args=()):
    """Outputs of ``graph(data, *args)`` as host numpy: ``data`` moved to ``device``, the
    argument inputs ``args`` (lists of per-sample arrays) fed from the CPU."""
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=0 if device == "gpu" else None, seed=5)
    def pipe():
        x = fn.external_source(source=_const(data), layout=layout)
        extra = [fn.external_source(source=_const(a)) for a in args]
        out = graph(x.gpu() if device == "gpu" else x, *extra)
        return out if isinstance(out, tuple) else (out,)

    outs = pipe().run()
    if device == "gpu":
        assert all(isinstance(o, TensorListGPU) for o in outs)
    return [[o.as_cpu().at(i) for i in range(len(o))] for o in outs]


def assert_same(graph, data, layout=None, args=(), atol=0.0):
    cpu, gpu = run_on("cpu", graph, data, layout, args), run_on("gpu", graph, data, layout, args)
    for co, go in zip(cpu, gpu):
        for c, g in zip(co, go):
            assert c.shape == g.shape and c.dtype == g.dtype
            if c.dtype.kind == "f":
                np.testing.assert_allclose(g, c, rtol=atol, atol=atol)
            else:
                assert np.abs(g.astype(np.int64) - c.astype(np.int64)).max(initial=0) <= atol


SIZES = ((37, 53), (1, 1), (16, 16), (21, 90), (5, 6), (64, 48))
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in SIZES]
FLOATS = [im.astype(np.float32) / 255 for im in IMAGES]
INT16 = [(im.astype(np.int16) - 128) * 100 for im in IMAGES]
GRAY = [rng.integers(0, 256, (h, w, 1), dtype=np.uint8) for h, w in SIZES]


def per_sample(values, dtype=np.float32):
    return [np.array(v, dtype) for v in values]


# ---- one_hot -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [types.FLOAT, types.UINT8, types.INT32, types.INT64, types.FLOAT16, types.BOOL])
def test_one_hot_scalars(dtype):
    labels = per_sample([3, 0, 9, -1, 12, 4], np.int32)  # out of range: all off_value
    assert_same(lambda x: fn.one_hot(x, num_classes=10, dtype=dtype, on_value=2.6, off_value=-1.5), labels)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("label_type", [np.int64, np.uint8, np.float32, np.float64, np.int16])
def test_one_hot_arrays_and_axes(axis, label_type):
    labels = [rng.integers(-2, 9, s).astype(label_type) for s in ((3, 4), (1, 5), (2, 2), (0, 3))]
    if np.dtype(label_type).kind == "f":
        labels = [lab + np.float32(0.7) for lab in labels]  # truncated toward zero
    assert_same(lambda x: fn.one_hot(x, num_classes=7, axis=axis, dtype=types.FLOAT), labels)
    assert_same(lambda x: fn.one_hot(x, num_classes=7, axis=axis, dtype=types.INT16, on_value=-3), labels)


def test_one_hot_degenerate():
    labels = per_sample([1, 2], np.int32)
    assert_same(lambda x: fn.one_hot(x, num_classes=0), labels)
    assert_same(lambda x: fn.one_hot(x, num_classes=1), labels)
    assert_same(lambda x: fn.one_hot(x, num_classes=4), [np.zeros(0, np.int32), np.zeros(0, np.int32)])


# ---- erase -------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [IMAGES, FLOATS, INT16], ids=["u8", "f32", "i16"])
def test_erase_constant_regions(data):
    assert_same(lambda x: fn.erase(x, anchor=[2, 3, 5, 0], shape=[3, 4, 10, 2], fill_value=[1, 2, 3]), data, "HWC")
    assert_same(lambda x: fn.erase(x, anchor=[0.5, 0.5], shape=[0.2, 0.5], normalized=True, centered_anchor=True,
                                   fill_value=300), data, "HWC")
    assert_same(lambda x: fn.erase(x, anchor=[4], shape=[2], axes=[1], fill_value=9.6), data, "HWC")
    assert_same(lambda x: fn.erase(x, anchor=[-5, -5], shape=[100, 7]), data, "HWC")  # clipped


def test_erase_per_sample_regions():
    n = len(IMAGES)
    anchors = [rng.integers(-3, 30, 2 * (i % 3)).astype(np.float32) for i in range(n)]  # 0, 1 or 2 boxes
    shapes = [rng.integers(0, 20, 2 * (i % 3)).astype(np.float32) for i in range(n)]
    for data in (IMAGES, FLOATS):
        assert_same(lambda x, a, s: fn.erase(x, anchor=a, shape=s, fill_value=[7, 8, 9]), data, "HWC",
                    (anchors, shapes))
        assert_same(lambda x, a, s: fn.erase(x, anchor=a, shape=s, axis_names="WH"), data, "HWC", (anchors, shapes))


def test_erase_and_pad_per_sample_arguments():
    n = len(IMAGES)
    fills = [rng.uniform(-10, 300, 3).astype(np.float32) for _ in range(n)]  # a row of fill values each
    for data in (IMAGES, FLOATS):
        assert_same(lambda x, f: fn.erase(x, anchor=[2, 3], shape=[9, 8], fill_value=f), data, "HWC", (fills,))
    axes = [np.array([i % 2], np.int32) for i in range(n)]  # each sample pads its own dim
    assert_same(lambda x, a: fn.pad(x, axes=a, fill_value=7), IMAGES, "HWC", (axes,))


def test_erase_sequences_and_empty():
    frames = [rng.integers(0, 256, (3, 9, 11, 3), dtype=np.uint8), np.zeros((0, 9, 11, 3), np.uint8)]
    assert_same(lambda x: fn.erase(x, anchor=[1, 2, 3], shape=[1, 5, 5], axes=[0, 1, 2]), frames, "FHWC")


# ---- grid_mask ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(), dict(tile=10, ratio=0.3, angle=0.7, shift_x=3.5, shift_y=-2.25),
                                    dict(tile=7, ratio=0.9, angle=-2.0), dict(tile=1, ratio=0.5)])
@pytest.mark.parametrize("data", [IMAGES, FLOATS, INT16], ids=["u8", "f32", "i16"])
def test_grid_mask(kwargs, data):
    assert_same(lambda x: fn.grid_mask(x, **kwargs), data, "HWC")


def test_grid_mask_per_sample_arguments():
    n = len(IMAGES)
    args = (per_sample(rng.integers(3, 20, n), np.int32), per_sample(rng.uniform(0, 1, n)),
            per_sample(rng.uniform(-3, 3, n)), per_sample(rng.uniform(-9, 9, n)))
    assert_same(lambda x, t, r, a, s: fn.grid_mask(x, tile=t, ratio=r, angle=a, shift_x=s, shift_y=s),
                IMAGES, "HWC", args)
    assert_same(lambda x: fn.grid_mask(x, tile=5), GRAY + [np.zeros((0, 4, 1), np.uint8)], "HWC")


# ---- paste -------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [IMAGES, FLOATS, INT16], ids=["u8", "f32", "i16"])
def test_paste(data):
    assert_same(lambda x: fn.paste(x, ratio=2.0, fill_value=[10, 20, 30]), data, "HWC")
    assert_same(lambda x: fn.paste(x, ratio=1.0, paste_x=0.0, paste_y=1.0, fill_value=5), data, "HWC")
    assert_same(lambda x: fn.paste(x, ratio=1.3, paste_x=1.0, paste_y=0.3, fill_value=300,
                                   min_canvas_size=70), data, "HWC")


def test_paste_per_sample_and_gray():
    n = len(IMAGES)
    args = (per_sample(rng.uniform(1, 3, n)), per_sample(rng.uniform(0, 1, n)), per_sample(rng.uniform(0, 1, n)),
            per_sample(rng.uniform(0, 40, n)))
    assert_same(lambda x, r, px, py, m: fn.paste(x, ratio=r, paste_x=px, paste_y=py, min_canvas_size=m,
                                                 fill_value=[1, 2, 3]), IMAGES, "HWC", args)
    assert_same(lambda x: fn.paste(x, ratio=1.5, n_channels=1, fill_value=200), GRAY, "HWC")


# ---- gaussian_blur -----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(sigma=1.5), dict(window_size=5), dict(sigma=[0.8, 3.0]),
                                    dict(sigma=2.0, window_size=3), dict(window_size=[1, 7]),
                                    dict(sigma=4.0, dtype=types.FLOAT)])
@pytest.mark.parametrize("data", [IMAGES, FLOATS, INT16], ids=["u8", "f32", "i16"])
def test_gaussian_blur(kwargs, data):
    assert_same(lambda x: fn.gaussian_blur(x, **kwargs), data, "HWC", atol=1 if data is not FLOATS else 1e-5)


def test_gaussian_blur_per_sample_layouts_and_degenerate():
    n = len(IMAGES)
    sig = per_sample(rng.uniform(0.3, 5, n))
    win = per_sample(2 * rng.integers(0, 6, (n, 2)) + 1, np.int32)
    assert_same(lambda x, s: fn.gaussian_blur(x, sigma=s), IMAGES, "HWC", (sig,), atol=1)
    assert_same(lambda x, w: fn.gaussian_blur(x, window_size=w, dtype=types.FLOAT), IMAGES, "HWC", (win,),
                atol=1e-4)
    planes = [im[..., 0] for im in IMAGES]  # HW, no channel axis
    assert_same(lambda x: fn.gaussian_blur(x, sigma=2.5), planes, "HW", atol=1)
    seq = [rng.integers(0, 256, (4, 13, 17, 3), dtype=np.uint8), np.zeros((0, 5, 5, 3), np.uint8)]
    assert_same(lambda x: fn.gaussian_blur(x, sigma=1.2), seq, "FHWC", atol=1)
    vol = [rng.uniform(0, 1, (6, 9, 7, 2)).astype(np.float32), rng.uniform(0, 1, (3, 1, 5, 2)).astype(np.float32)]
    assert_same(lambda x: fn.gaussian_blur(x, sigma=[0.7, 1.0, 2.0]), vol, "DHWC", atol=1e-5)
    assert_same(lambda x: fn.gaussian_blur(x, window_size=15), [np.zeros((0, 4, 3), np.uint8)] + IMAGES[1:3],
                "HWC", atol=1)  # windows wider than the image reflect more than once


# ---- jpeg_compression_distortion ---------------------------------------------------------

@pytest.mark.parametrize("quality", [1, 10, 50, 75, 95, 100])
def test_jpeg_compression_distortion_exact(quality):
    """Tolerance 0: the CPU operator is a libjpeg-turbo encode/decode round trip with its defaults,
    and the GPU kernel performs the same integer steps (fixed-point RGB->YCbCr, 4:2:0 averaging
    with alternating bias, edge replication, islow forward DCT, reciprocal quantization with the
    quality-scaled standard tables, dequantization, islow inverse DCT with saturation, fancy
    upsampling, fixed-point YCbCr->RGB); the entropy coding it skips is lossless. It must then give
    the same bytes (it does on the host: tests/test_jpeg_compression_distortion_emulated.py). A CPU build
    against another libjpeg (IJG libjpeg 7+ downsamples differently) would not."""
    smooth = []
    for h, w in SIZES + ((3, 4), (17, 2), (9, 3)):
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([128 + 100 * np.sin(x / 7.0 + k) * np.cos(y / 5.0 - k) for k in range(3)], -1)
        smooth.append(np.clip(base + rng.normal(0, 15, (h, w, 3)), 0, 255).astype(np.uint8))
    assert_same(lambda x: fn.jpeg_compression_distortion(x, quality=quality), IMAGES + smooth, "HWC")
    assert_same(lambda x: fn.jpeg_compression_distortion(x, quality=quality), GRAY, "HWC")


def test_jpeg_compression_distortion_per_sample_sequences_and_empty():
    q = per_sample(rng.integers(1, 101, len(IMAGES)), np.int32)
    assert_same(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), IMAGES, "HWC", (q,))
    seq = [rng.integers(0, 256, (3, 19, 23, 3), dtype=np.uint8), np.zeros((2, 0, 8, 3), np.uint8),
           rng.integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)]
    assert_same(lambda x: fn.jpeg_compression_distortion(x, quality=30), seq, "FHWC")


# ---- errors name the operator and the sample on both devices -------------------------------

@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_bad_channels_are_sample_errors(device):
    two = [np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 2), np.uint8)]
    with pytest.raises(RuntimeError, match="sample 1|channels"):
        run_on(device, lambda x: fn.jpeg_compression_distortion(x), two, "HWC")
    with pytest.raises(RuntimeError, match="fill values"):
        run_on(device, lambda x: fn.erase(x, anchor=[0, 0], shape=[2, 2], fill_value=[1, 2, 3]), two, "HWC")
