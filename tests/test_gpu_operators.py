"""Every GPU kernel against its CPU sibling: the same graph run on both devices must agree
(within 1 on integer pixels, 1e-5 relative on floats). Needs CuPy and a CUDA device."""
import io
import re

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, pipeline_def, types  # noqa: E402
from penstock import math as dmath  # noqa: E402
from penstock.tensors import TensorListCPU, TensorListGPU  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]


def _const(d):
    return lambda: d


def run_on(device, graph, inputs, layouts=None, seed=1234, **kw):
    """Outputs of ``graph(*sources)`` with the sources moved to ``device`` first, as host numpy."""
    layouts = layouts or [None] * len(inputs)

    @pipeline_def(batch_size=len(inputs[0]), num_threads=2, device_id=0 if device == "gpu" else None, seed=seed,
                  **kw)
    def pipe():
        srcs = [fn.external_source(source=_const(d), layout=lay) for d, lay in zip(inputs, layouts)]
        if device == "gpu":
            srcs = [s.gpu() for s in srcs]
        out = graph(*srcs)
        return out if isinstance(out, tuple) else (out,)

    outs = pipe().run()
    if device == "gpu":
        assert all(isinstance(o, TensorListGPU) for o in outs)
    return [[o.as_cpu().at(i) for i in range(len(o))] for o in outs]


def assert_same(graph, inputs, layouts=None, atol_int=1, rtol_float=1e-5, atol_float=None, **kw):
    cpu = run_on("cpu", graph, inputs, layouts, **kw)
    gpu = run_on("gpu", graph, inputs, layouts, **kw)
    for co, go in zip(cpu, gpu):
        for c, g in zip(co, go):
            assert c.shape == g.shape and c.dtype == g.dtype
            if c.dtype.kind == "f":
                np.testing.assert_allclose(g, c, rtol=rtol_float, atol=rtol_float if atol_float is None else atol_float)
            elif c.dtype == bool:
                np.testing.assert_array_equal(g, c)
            else:
                assert np.abs(g.astype(np.int64) - c.astype(np.int64)).max(initial=0) <= atol_int


rng = np.random.default_rng(7)
IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((37, 53), (64, 48), (21, 90), (50, 50))]
FLOATS = [im.astype(np.float32) / 255 for im in IMAGES]


@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC,
                                    types.INTERP_LANCZOS3, types.INTERP_TRIANGULAR])
@pytest.mark.parametrize("size", [(24, 31), (80, 96)])
def test_resize_matches_cpu(interp, size):
    assert_same(lambda x: fn.resize(x, resize_y=size[0], resize_x=size[1], interp_type=interp), [IMAGES], ["HWC"])


@pytest.mark.parametrize("budget", [1, 3000])  # floats of the vertical pass's intermediate at a time
def test_resize_with_its_intermediate_in_runs_matches_cpu(monkeypatch, budget):
    from penstock._cuda.kernels import resize as resize_kernels
    monkeypatch.setattr(resize_kernels, "_RESIZE_TMP_ELEMENTS", budget)  # one frame per run / a few frames
    frames = [rng.integers(0, 256, (3, 20, 30, 3), dtype=np.uint8) for _ in range(2)]
    assert_same(lambda x: fn.resize(x, resize_y=24, resize_x=31), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.resize(x, resize_x=17, resize_y=11), [frames], ["FHWC"])


def test_resize_float_roi_flip_and_modes():
    assert_same(lambda x: fn.resize(x, size=[30, -40], roi_start=[3, 4], roi_end=[30, 40]), [FLOATS], ["HWC"])
    assert_same(lambda x: fn.resize(x, resize_shorter=33, max_size=60), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.resize(x, resize_x=20, antialias=False, dtype=types.FLOAT), [IMAGES], ["HWC"])


def test_resize_sequences_per_frame():
    frames = [rng.integers(0, 256, (3, 20, 30, 3), dtype=np.uint8) for _ in range(2)]
    assert_same(lambda x: fn.resize(x, resize_x=17, resize_y=11), [frames], ["FHWC"])


@pytest.mark.parametrize("dtype", [types.FLOAT, types.FLOAT16, types.UINT8, types.INT8])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_crop_mirror_normalize_matches_cpu(dtype, layout):
    mirror = [np.array(v, np.int32) for v in (0, 1, 1, 0)]

    def graph(x, m):
        return fn.crop_mirror_normalize(x, crop=(20, 30), crop_pos_x=0.3, crop_pos_y=0.7, mirror=m, dtype=dtype,
                                        output_layout=layout, mean=[100.0, 120.0, 90.0], std=[50.0, 60.0, 70.0],
                                        scale=1.5 if dtype != types.FLOAT else 1.0,
                                        shift=10.0 if dtype in (types.UINT8, types.INT8) else 0.0)

    cpu = run_on("cpu", graph, [IMAGES, mirror], ["HWC", ""])
    gpu = _run_mixed_inputs(graph, [IMAGES, mirror], ["HWC", ""])
    for c, g in zip(cpu[0], gpu[0]):
        if c.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float32), c.astype(np.float32), rtol=1e-3 if dtype == types.FLOAT16 else 1e-5)
        else:
            assert np.abs(g.astype(np.int64) - c.astype(np.int64)).max() <= 1


def _run_mixed_inputs(graph, inputs, layouts):
    """First input on the GPU, the others (argument inputs) stay on the CPU."""
    @pipeline_def(batch_size=len(inputs[0]), num_threads=2, device_id=0, seed=1234)
    def pipe():
        srcs = [fn.external_source(source=_const(d), layout=lay) for d, lay in zip(inputs, layouts)]
        out = graph(srcs[0].gpu(), *srcs[1:])
        return out if isinstance(out, tuple) else (out,)
    outs = pipe().run()
    return [[o.as_cpu().at(i) for i in range(len(o))] for o in outs]


@pytest.mark.parametrize("fill", [[7.5], [1.0, 2.0, 3.0, 4.5]])  # the pad channel takes 7.5 / 4.5
@pytest.mark.parametrize("dtype", [types.FLOAT, types.UINT8])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_crop_mirror_normalize_pad_output_and_out_of_bounds_fill(fill, dtype, layout):
    assert_same(lambda x: fn.crop_mirror_normalize(x, crop=(60, 60), out_of_bounds_policy="pad", fill_values=fill,
                                                   pad_output=True, dtype=dtype, output_layout=layout),
                [IMAGES], ["HWC"])


@pytest.mark.parametrize("ftype", [np.float16, np.float32, np.float64])
def test_crop_and_slice_cut_float_data_to_uint8_as_the_cpu_does(ftype):
    row = np.array([-300.7, -1.7, -0.5, 0.5, 1.5, 2.5, 3.5, 127.6, 254.9, 255.99, 300.2, np.nan], ftype)
    values = [np.tile(row.reshape(1, -1, 1), (3, 1, 2)) * k for k in (1, 0.5)]
    assert_same(lambda x: fn.crop(x, crop=(2, 12), dtype=types.UINT8), [values], ["HWC"], atol_int=0)
    assert_same(lambda x: fn.slice(x, start=(0, 0), shape=(4, 12), axes=(0, 1), out_of_bounds_policy="pad",
                                   fill_values=[2.7, -0.7], dtype=types.UINT8), [values], ["HWC"], atol_int=0)


@pytest.mark.parametrize("stype", [np.float32, np.float64, np.int32])
def test_crop_and_slice_saturate_float16_as_the_cpu_does(stype):
    row = np.array([1e6, -1e6, 7e4, 65519, 65520, 5, -3] + ([np.nan, np.inf] if stype != np.int32 else []), stype)
    values = [np.tile(row.reshape(1, -1, 1), (3, 1, 2)) * k for k in (1, 2)]
    assert_same(lambda x: fn.crop(x, crop=(2, len(row)), dtype=types.FLOAT16), [values], ["HWC"], atol_int=0)
    assert_same(lambda x: fn.slice(x, start=(0, 0), shape=(4, len(row)), axes=(0, 1), out_of_bounds_policy="pad",
                                   fill_values=[1e6, 0.5], dtype=types.FLOAT16), [values], ["HWC"], atol_int=0)


def test_window_operators_match_cpu():
    assert_same(lambda x: fn.crop(x, crop=(15, 17), crop_pos_x=0.2), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.crop(x, crop=(70, 70), out_of_bounds_policy="pad", fill_values=[5, 6, 7]),
                [IMAGES], ["HWC"])
    assert_same(lambda x: fn.flip(x, horizontal=1, vertical=1), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.pad(x, fill_value=3), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.slice(x, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5)), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.transpose(x, perm=[2, 0, 1]), [IMAGES], ["HWC"])
    assert_same(lambda x: fn.copy(x), [FLOATS], ["HWC"])


def test_slice_with_per_sample_axes_and_windows_matches_cpu():
    # axes, start and shape as argument inputs (on the CPU); the window is planned on the host
    axes = [np.array(a, np.int32) for a in ([0, 1], [1], [], [-1])]
    start = [np.array(s, np.int32) for s in ([3, 5], [4], [1, 2, 0], [1])]
    shape = [np.array(s, np.int32) for s in ([9, 11], [30], [6, 7, 2], [2])]

    def graph(x):
        a, s, h = (fn.external_source(source=_const(d)) for d in (axes, start, shape))  # stay on the CPU
        return fn.slice(x, axes=a, start=s, shape=h)
    assert_same(graph, [IMAGES], ["HWC"])


def test_random_resized_crop_draws_the_same_windows_on_both_devices():
    assert_same(lambda x: fn.random_resized_crop(x, size=(24, 24), seed=42), [IMAGES], ["HWC"])


@pytest.mark.parametrize("graph", [
    lambda x: fn.brightness_contrast(x, brightness=1.2, contrast=0.8),
    lambda x: fn.hsv(x, hue=30.0, saturation=0.7, value=1.1),
    lambda x: fn.color_twist(x, hue=-20.0, saturation=1.3, contrast=1.1, brightness=0.9),
    lambda x: fn.color_space_conversion(x, image_type=types.RGB, output_type=types.GRAY),
    lambda x: fn.rotate(x, angle=17.0, fill_value=0),
    lambda x: fn.rotate(x, angle=-33.0, interp_type=types.INTERP_NN, keep_size=True),
    lambda x: fn.warp_affine(x, matrix=[0.9, 0.1, 2.0, -0.1, 1.1, -3.0], fill_value=7),
    lambda x: fn.rotate(fn.cast(x, dtype=types.FLOAT) * 1.3, angle=21.0, dtype=types.UINT8),
])
def test_image_operators_match_cpu(graph):
    assert_same(graph, [IMAGES], ["HWC"])


def test_warp_to_float_matches_cpu_to_float_rounding():
    # the source coordinates are computed in float32 on both sides, in another order on the GPU (fused
    # multiply-adds): interpolated values of 0-255 then differ in their last bits (H100: at most
    # 8.6e-4, relative 4.3e-5), which a uint8 output rounds away and a float output keeps
    assert_same(lambda x: fn.warp_affine(x, matrix=[0.9, 0.1, 2.0, -0.1, 1.1, -3.0], fill_value=7, dtype=types.FLOAT),
                [IMAGES], ["HWC"], atol_float=2e-3)


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT8, types.INT32, types.FLOAT16, types.FLOAT64, types.BOOL])
def test_cast_matches_cpu(dtype):
    values = [np.array([-300.7, -1.5, -0.5, 0.5, 1.5, 2.5, 254.6, 70000.0], np.float32) * k for k in (1, -1)]
    assert_same(lambda x: fn.cast(x, dtype=dtype), [values], atol_int=0)


def test_arithmetic_matches_cpu():
    a = [rng.integers(-50, 50, (3, 4), dtype=np.int32) for _ in range(3)]
    # no zero divisor: the CPU refuses integer division by zero, as DALI's CPU operator does
    b = [rng.choice(np.r_[-5:0, 1:5], 4).astype(np.int32) for _ in range(3)]
    f = [rng.standard_normal((2, 5)).astype(np.float32) for _ in range(3)]
    assert_same(lambda x, y: (x + y, x - 3, x * y, x // y, x % y, x / y, x ** 2, x < y, x == y, -x, x & y),
                [a, b], atol_int=0)
    assert_same(lambda x: (dmath.sqrt(dmath.abs(x)), dmath.exp(x), dmath.atan2(x, 2.0),
                           dmath.clamp(x, -0.5, 0.5), x * 2.5 + 1), [f])


@pytest.mark.parametrize("graph, words", [
    (lambda x, y: (x > 0) + (y > 0), "Inputs to arithmetic operator `+` cannot be booleans"),
    (lambda x, y: dmath.sqrt(x > 0), "Input to arithmetic operator `sqrt` cannot be a boolean"),
    (lambda x, y: x[:, :2] + y[:3], "Can't broadcast shapes:")])
def test_arithmetic_errors_on_the_gpu_carry_dalis_words(graph, words):
    a = [rng.integers(-50, 50, (3, 4), dtype=np.int32) for _ in range(3)]
    b = [rng.integers(-5, 5, (4,), dtype=np.int32) for _ in range(3)]
    with pytest.raises(RuntimeError, match=re.escape(words)):
        run_on("gpu", graph, [a, b])

@pytest.mark.parametrize("layout, output_layout, crop", [
    ("HWC", "WHC", {"crop": (8, 10)}), ("CHW", "HWC", {"crop": (8, 10)}),
    ("FHWC", "FCHW", {"crop_d": 2, "crop_h": 8, "crop_w": 10}), ("FHWC", "CFHW", {"crop": (8, 10)})])
def test_crop_mirror_normalize_of_planar_inputs_sequences_and_permuted_outputs_matches_cpu(layout, output_layout,
                                                                                           crop):
    frames = [rng.integers(0, 256, (3, h, w, 3), dtype=np.uint8) for h, w in ((20, 24), (17, 30))]
    data = [np.ascontiguousarray(f[0].transpose(2, 0, 1)) if layout == "CHW" else f[0] if layout == "HWC" else f
            for f in frames]
    assert_same(lambda x: fn.crop_mirror_normalize(x, mean=[10.0, 20.0, 30.0], std=[2.0, 3.0, 4.0], mirror=1,
                                                   output_layout=output_layout, **crop),
                [data], layouts=[layout], rtol_float=1e-5)

@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_integer_power_with_negative_exponents_matches_cpu(dtype):
    # 0 whatever the base, 1 and -1 included (DALI 2.4)
    bases = [np.array([-3, -2, -1, 0, 1, 2, 3], dtype)] * 3
    exponents = [np.full(7, e, dtype) for e in (-1, -2, -3)]
    assert_same(lambda x, y: (x ** y, dmath.pow(x, y), x ** -1), [bases, exponents], atol_int=0)


def test_data_made_in_staging_uploads_without_a_host_copy_and_the_block_goes_back():
    ctx = _cuda.DeviceContext(0)
    staged = ctx.staging(1000)
    assert staged.view.nbytes == 1000
    staged.view[:] = np.arange(1000) % 251  # made in place, as the host's decoding does
    made = staged.view[:600]
    assert staged.holds(made) and not staged.holds(np.zeros(600, np.uint8))
    dev = staged.upload(made)
    ctx.stream.synchronize()
    np.testing.assert_array_equal(dev.get(), np.arange(600) % 251)
    assert not staged.holds(made)  # the block went back with the copy's event
    with pytest.raises(ValueError, match="not at the start of its staging block"):
        staged.upload(made)
    unused = ctx.staging(64)
    unused.give_back()
    assert not unused.holds(unused.view)
    unused.give_back()  # once only
    sized = ctx.staging(64, block_bytes=1 << 20)  # a block of one size for copies of any (the mixed decoders')
    assert sized.view.nbytes == 64 and sized.holds(sized.view)
    assert sized._block.size >= 1 << 20
    sized.give_back()


def test_ranges_of_staging_are_copied_to_their_device_places_in_one_call():
    ctx = _cuda.DeviceContext(0)
    staged = ctx.staging(100)
    staged.view[:] = np.arange(100) + 1
    dev = ctx.cp.zeros(64, ctx.cp.uint8)
    after = ctx.record()
    dsts = np.uint64(dev.data.ptr) + np.array([40, 0, 10], np.uint64)
    staged.copy_into(dsts, np.array([0, 30, 90]), np.array([20, 10, 0]), after=after)
    ctx.stream.synchronize()
    want = np.zeros(64, np.uint8)
    want[40:60], want[0:10] = np.arange(20) + 1, np.arange(30, 40) + 1
    np.testing.assert_array_equal(dev.get(), want)
    assert not staged.holds(staged.view)  # the block went back with the copies' event
    outside = ctx.staging(16)
    with pytest.raises(ValueError, match="outside the staging"):
        outside.copy_into(dsts[:1], np.array([outside._block.size - 4]), np.array([8]))


def test_transfers_round_trip_and_keep_metadata():
    data = [np.arange(12, dtype=np.int16).reshape(3, 4) * (k + 1) for k in range(3)]

    @pipeline_def(batch_size=3, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=_const(data), layout="HW")
        g = x.gpu()
        return g, g.cpu()

    g, h = pipe().run()
    assert isinstance(g, TensorListGPU) and isinstance(h, TensorListCPU)
    assert g.layout() == "HW" and g.shape() == [(3, 4)] * 3
    for i in range(3):
        np.testing.assert_array_equal(h.at(i), data[i])
        np.testing.assert_array_equal(cp.asnumpy(g[i]._array), data[i])


def test_outputs_carry_the_producer_stream_and_its_event():
    data = [np.full((256, 256, 3), k, np.uint8) for k in range(4)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=0)
    def pipe():
        return fn.resize(fn.external_source(source=_const(data), layout="HWC").gpu(), resize_x=512, resize_y=512)

    (out,) = pipe().run()
    assert out.stream is not None and out._event is not None
    t = out.as_tensor()
    assert t.__cuda_array_interface__["stream"] == out.stream.ptr
    consumer = cp.cuda.Stream(non_blocking=True)
    with consumer:
        arr = cp.from_dlpack(out)  # the consumer's stream waits on the pipeline's event
        total = int(arr.sum())
    assert arr.shape == (4, 512, 512, 3)
    assert total == sum(k * 512 * 512 * 3 for k in range(4))


def test_separate_queue_depths_run_every_iteration_in_order():
    batches = [[np.full((2, 2), i * 10 + k, np.float32) for k in range(2)] for i in range(6)]
    it = iter(batches)

    @pipeline_def(batch_size=2, num_threads=1, device_id=0, prefetch_queue_depth={"cpu_size": 3, "gpu_size": 1})
    def pipe():
        return fn.external_source(source=lambda: next(it)).gpu() * 2

    p = pipe()
    for i in range(4):
        (out,) = p.run()
        np.testing.assert_array_equal(out.as_cpu().at(1), batches[i][1] * 2)


# ---- mixed decoding ------------------------------------------------------------------------

def _jpegs(count=6):
    from PIL import Image
    out = []
    for k in range(count):
        h, w = 120 + 13 * k, 160 - 7 * k
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 3 % 256)], -1).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=92)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    png = io.BytesIO()
    Image.fromarray(np.full((30, 40, 3), 200, np.uint8)).save(png, format="PNG")
    out.append(np.frombuffer(png.getvalue(), np.uint8))
    return out


def _decoded_on_both(source, graph, iterations=1, **pipe_kw):
    """Per device ("cpu", "mixed"): per iteration, per output of ``graph(encoded, on)`` over the
    encoded batches ``source`` gives, its samples on the host. ``on``: the decoders' arguments for
    that device (mixed ones upsample chroma as the CPU does)."""
    outs = {}
    for device in ("cpu", "mixed"):
        on = {"device": device, **({"jpeg_fancy_upsampling": True} if device == "mixed" else {})}

        @pipeline_def(num_threads=2, device_id=0, **pipe_kw)
        def pipe():
            return graph(fn.external_source(source=source, batch_info=True), on)

        p = pipe()
        outs[device] = [[[o.as_cpu().at(i) for i in range(len(o))] for o in p.run()] for _ in range(iterations)]
    return outs


def _assert_decoded_alike(outs):
    for c_it, g_it in zip(outs["cpu"], outs["mixed"]):
        for c_out, g_out in zip(c_it, g_it):
            for c, g in zip(c_out, g_out):
                assert c.shape == g.shape and c.dtype == g.dtype
                diff = np.abs(c.astype(np.float64) - g.astype(np.float64)) * (255 if c.dtype.kind == "f" else 1)
                assert diff.mean() < 1.0 and diff.max() <= 12  # GPU and host IDCT/upsampling differ slightly


@pytest.mark.parametrize("make", [
    lambda x, **kw: fn.decoders.image(x, **kw),
    lambda x, **kw: fn.decoders.image(x, output_type=types.BGR, dtype=types.FLOAT, **kw),
    lambda x, **kw: fn.decoders.image(x, output_type=types.GRAY, **kw),
    lambda x, **kw: fn.decoders.image_random_crop(x, seed=5, **kw),
    lambda x, **kw: fn.decoders.image_crop(x, crop=(20, 30), crop_pos_x=0.25, **kw),
    lambda x, **kw: fn.decoders.image_slice(x, rel_start=(0.1, 0.2), rel_end=(0.8, 0.9), **kw),
])
@pytest.mark.parametrize("hw_load", [0.0, 0.65, 1.0])
def test_mixed_decoders_match_the_cpu_decoder(make, hw_load):
    data = _jpegs()
    _assert_decoded_alike(_decoded_on_both(
        lambda info: data,
        lambda x, on: make(x, **on, **({} if on["device"] == "cpu" else {"hw_decoder_load": hw_load})),
        batch_size=len(data), seed=99))


def _three_windows():
    """Three JPEGs packed, their shapes, three windows, and the output offsets of those windows (uint8 HWC)."""
    from PIL import Image
    data = _jpegs(3)[:3]
    encoded = np.concatenate(data)
    shapes = np.array([np.asarray(Image.open(io.BytesIO(d.tobytes()))).shape for d in data], np.int64)
    windows = np.array([[10, 20, 40, 50], [0, 0, 60, 30], [33, 7, 21, 90]], np.int64)
    sizes = windows[:, 2] * windows[:, 3] * 3
    out_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    lengths = np.array([len(d) for d in data], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return encoded, starts, lengths, shapes, windows, out_offsets, int(sizes.sum())


def _windows_on_the_host(encoded, starts, lengths, windows) -> np.ndarray:
    from penstock import _engine
    return _engine.decode_images(_engine.ThreadPool(2), encoded, lengths.reshape(-1, 1), starts, 0, True, windows,
                                 fancy_upsampling=False)[0]


def _hardware_decoder(set_up_reverse: bool | None = None):
    """A decoder of the hardware engines alone; unless ``set_up_reverse`` is None, its first call
    made on the three windows, channels reversed as it says (nvImageCodec's set-up and, reversed,
    the scratch memory: allocations that synchronize the device, which a held stream would hold)."""
    from penstock._cuda._nvimgcodec import DeviceDecoder, decoder_options
    decoder = DeviceDecoder(_cuda.DeviceContext(0), decoder_options(False, 3), 2, 1.0, adaptive=False)
    if set_up_reverse is not None:
        encoded, starts, lengths, shapes, windows, out_offsets, total = _three_windows()
        decoder.decode(encoded, starts, lengths, shapes, windows, set_up_reverse, cp.empty(total, cp.uint8),
                       out_offsets, cp.cuda.Stream(non_blocking=True).record(), True)
        decoder.own.stream.synchronize()
    return decoder


def _assert_windows(out, windows, reverse: bool) -> None:
    """``out`` holds the three JPEGs' ``windows`` as the host decodes them, channels reversed if ``reverse``."""
    encoded, starts, lengths, *_ = _three_windows()
    host = _windows_on_the_host(encoded, starts, lengths, windows)
    if reverse:
        host = host.reshape(-1, 3)[:, ::-1].reshape(-1)
    diff = np.abs(out.get().astype(int) - host)
    assert diff.mean() < 1.0 and diff.max() <= 12


def _held_stream(held=None):
    """A stream (``held``, else a new one) held by a kernel spinning until the returned ``let_go()``,
    and ``let_go`` (also called by a watchdog after 20 s: a test never hangs)."""
    import threading
    release = cp.cuda.alloc_pinned_memory(4)
    flag = np.frombuffer(release, np.int32, 1)
    flag[0] = 0
    spin = cp.RawKernel(r'''extern "C" __global__ void spin(volatile int* go) { while (*go == 0) {} }''', "spin")
    held = cp.cuda.Stream(non_blocking=True) if held is None else held
    with held:
        spin((1,), (1,), (release.ptr,))
    watchdog = threading.Timer(20.0, flag.__setitem__, (0, 1))
    watchdog.start()

    def let_go():
        flag[0] = 1
        watchdog.cancel()
    return held, let_go


def _decoding_in_a_thread(decoder, *args):
    """``decoder.decode(*args)`` on a thread of its own (it may wait on the host): the thread, and a list
    that gets its result or exception."""
    import threading
    result = []

    def decode():
        try:
            result.append(decoder.decode(*args))
        except BaseException as exc:  # noqa: BLE001 - raised by the test
            result.append(exc)
    thread = threading.Thread(target=decode, daemon=True)
    thread.start()
    return thread, result


def test_a_batch_of_rgb_windows_decodes_straight_into_the_output():
    # a uint8 RGB window is its output sample as it stands: no scratch memory, no gather
    encoded, starts, lengths, shapes, windows, out_offsets, total = _three_windows()
    out = cp.zeros(total, cp.uint8)
    decoder = _hardware_decoder()
    decoded, _ = decoder.decode(encoded, starts, lengths, shapes, windows, False, out, out_offsets,
                                cp.cuda.Stream(non_blocking=True).record(), True)
    assert decoded.all() and decoder._scratch is None
    decoder.own.stream.synchronize()
    _assert_windows(out, windows, reverse=False)
    decoder.close()


def test_a_batch_of_converted_windows_decodes_without_waiting_for_the_pipelines_stream():
    # BGR windows go through scratch memory at once; only the gather into the output waits for the
    # output's `ready` event, here held back by a kernel spinning until the host lets it go
    import time
    encoded, starts, lengths, shapes, windows, out_offsets, total = _three_windows()
    out = cp.zeros(total, cp.uint8)
    decoder = _hardware_decoder(set_up_reverse=True)
    held, let_go = _held_stream()
    try:
        began = time.perf_counter()
        decoded, _ = decoder.decode(encoded, starts, lengths, shapes, windows, True, out, out_offsets,
                                    held.record(), True)
        assert decoded.all() and time.perf_counter() - began < 10  # returned with the stream still blocked
        assert not out.get().any()  # not gathered yet (read on the null stream, which does not wait for it)
    finally:
        let_go()
    decoder.own.stream.synchronize()
    _assert_windows(out, windows, reverse=True)
    decoder.close()


def test_the_hardware_decoder_writes_the_output_only_after_the_work_queued_before_it():
    # The output's memory is reused in stream order (an arena block, freed while the pipeline's
    # kernels queued before may still read it), and nvJPEG's hardware engine has been seen to write
    # before the work queued ahead of it on its stream has run (an H100: torchcodec #1634). While
    # the `ready` event has not passed, the output must stay as it is.
    import time
    encoded, starts, lengths, shapes, windows, out_offsets, total = _three_windows()
    decoder = _hardware_decoder(set_up_reverse=False)
    out = cp.zeros(total, cp.uint8)
    held, let_go = _held_stream()
    try:
        thread, result = _decoding_in_a_thread(decoder, encoded, starts, lengths, shapes, windows, False, out,
                                               out_offsets, held.record(), True)
        time.sleep(0.5)  # long past a batch's decoding
        untouched = not out.get().any()  # read on the null stream, which does not wait for the held one
    finally:
        let_go()
    thread.join(30)
    assert untouched, "the decoder wrote the output before the work queued ahead of it ran"
    assert not isinstance(result[0], BaseException) and result[0][0].all()
    decoder.own.stream.synchronize()
    _assert_windows(out, windows, reverse=False)
    decoder.close()


def test_the_hardware_decoder_leaves_the_scratch_to_the_last_batchs_gather():
    # BGR windows are decoded into scratch memory, then gathered into the output once `ready`
    # passes; the next batch decodes into the same scratch, which it must not overwrite before that
    # gather has read it, even if the engine writes ahead of its stream
    import time
    encoded, starts, lengths, shapes, windows, out_offsets, total = _three_windows()
    others = windows.copy()
    others[:, :2] = [[0, 0], [5, 3], [0, 0]]  # other pixels, the same sizes: the same scratch layout
    decoder = _hardware_decoder(set_up_reverse=True)
    first, second = cp.zeros(total, cp.uint8), cp.zeros(total, cp.uint8)
    held, let_go = _held_stream()
    try:
        decoded, _ = decoder.decode(encoded, starts, lengths, shapes, windows, True, first, out_offsets,
                                    held.record(), True)  # its gather waits for the held stream
        thread, result = _decoding_in_a_thread(decoder, encoded, starts, lengths, shapes, others, True, second,
                                               out_offsets, cp.cuda.Stream(non_blocking=True).record(), True)
        time.sleep(0.5)
    finally:
        let_go()
    thread.join(30)
    assert decoded.all() and not isinstance(result[0], BaseException) and result[0][0].all()
    decoder.own.stream.synchronize()
    _assert_windows(first, windows, reverse=True)
    _assert_windows(second, others, reverse=True)
    decoder.close()


def _whole_images(count: int):
    """``count`` JPEGs of twelve sizes packed, their starts, lengths and shapes, their windows (each
    whole image), the output offsets of those windows (uint8 HWC) and their total size."""
    from PIL import Image
    data = _jpegs(12)[:12]
    picked = [data[k % 12] for k in range(count)]
    shapes = np.array([np.asarray(Image.open(io.BytesIO(d.tobytes()))).shape for d in picked], np.int64)
    lengths = np.array([len(d) for d in picked], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    windows = np.concatenate([np.zeros((count, 2), np.int64), shapes[:, :2]], 1)
    sizes = np.prod(shapes, axis=1)
    out_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.concatenate(picked), starts, lengths, shapes, windows, out_offsets, int(sizes.sum())


@pytest.mark.parametrize("held_stream", ["another", "legacy default"])
def test_the_hardware_decoder_is_not_held_by_the_gpus_other_work(held_stream):
    # Beside a training model the GPU has a whole step queued, on the legacy default stream (PyTorch's)
    # or another: a decoding call, of whatever size, must not wait for it (a free of memory, or work on
    # a stream that waits for the legacy one, would). The codecs allocate from memory the decoder
    # keeps (codec_memory.h), none of it taken or freed once the sizes were seen. Here the queued work
    # is a kernel spinning until the host lets it go.
    import time
    decoder = _hardware_decoder()
    counts = [3, 12, 1, 24, 7, 48, 2]
    batches = {count: _whole_images(count) for count in counts}
    outs = {count: cp.zeros(batches[count][-1], cp.uint8) for count in counts}

    def decode(count: int) -> tuple:
        encoded, starts, lengths, shapes, windows, out_offsets, _ = batches[count]
        began = time.perf_counter()
        decoded, _ = decoder.decode(encoded, starts, lengths, shapes, windows, False, outs[count], out_offsets,
                                    None, True)
        return bool(decoded.all()), time.perf_counter() - began

    for count in counts:  # the memory for these batches, taken once
        decode(count)
    cp.cuda.Device().synchronize()
    kept = decoder.native.memory()
    held, let_go = _held_stream() if held_stream == "another" else _held_stream(cp.cuda.Stream.null)
    try:
        calls = [decode(count) for count in counts]
    finally:
        let_go()
    assert all(ok for ok, _ in calls) and max(seconds for _, seconds in calls) < 5, calls
    assert {kind: counts["blocks"] for kind, counts in decoder.native.memory().items()} == \
        {kind: counts["blocks"] for kind, counts in kept.items()}
    cp.cuda.Device().synchronize()
    encoded, starts, lengths, _, windows, _, _ = batches[48]
    diff = np.abs(outs[48].get().astype(int) - _windows_on_the_host(encoded, starts, lengths, windows))
    assert diff.mean() < 1.0 and diff.max() <= 12
    decoder.close()


def test_the_host_share_of_mixed_decoding_upsamples_chroma_as_the_gpu_does(monkeypatch):
    # windows the host decodes beside the GPU (default hw_decoder_load) repeat each chroma sample
    # too, so the batch comes out as if the GPU had decoded all of it
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    monkeypatch.setattr(_mixed_decode, "_HOST_RATE_PER_THREAD", 1e12)  # the host takes every window it may
    on_host = []
    decode_images_later = _engine.decode_images_later

    def spy(background, pool, data, shapes, offsets, output_type, orient, crop, fast_idct, fancy_upsampling, *rest):
        on_host.append((len(shapes), fancy_upsampling))
        return decode_images_later(background, pool, data, shapes, offsets, output_type, orient, crop, fast_idct,
                                   fancy_upsampling, *rest)

    monkeypatch.setattr(_engine, "decode_images_later", spy)
    data = _jpegs()[:6]
    outs = {}
    for hw_load in (0.65, 1.0):  # with a host share, on the GPU alone
        @pipeline_def(batch_size=6, num_threads=2, device_id=0)
        def pipe():
            return fn.decoders.image_crop(fn.external_source(source=lambda: data), device="mixed", crop=(20, 30),
                                          hw_decoder_load=hw_load)

        out = pipe().run()[0].as_cpu()
        outs[hw_load] = [out.at(i) for i in range(len(out))]
    assert sum(n for n, _ in on_host) >= 3 and all(fancy is False for _, fancy in on_host), on_host
    _assert_decoded_alike({"cpu": [[outs[1.0]]], "mixed": [[outs[0.65]]]})


@pytest.mark.parametrize("dtype", [types.UINT8, types.FLOAT])
def test_the_host_share_staged_in_several_blocks_matches_the_cpu_decoder(monkeypatch, dtype):
    # the host's pixels reach the batch from pinned staging blocks of one size (uint8: copied into
    # their places; float: uploaded, then gathered): a part over several blocks (4 KB: two 20x30
    # windows each), larger samples (the PNG, whole) in blocks of their own
    from penstock.operators import _image_decode_mixed as _mixed_decode, _image_decode_staging
    from _util import staging_blocks_a_part
    monkeypatch.setattr(_mixed_decode, "_HOST_RATE_PER_THREAD", 1e12)  # the host takes every window it may
    monkeypatch.setattr(_image_decode_staging, "BLOCK_BYTES", 4096)
    blocks_a_part = staging_blocks_a_part(monkeypatch)
    data = _jpegs()
    _assert_decoded_alike(_decoded_on_both(
        lambda info: data,
        lambda x, on: (fn.decoders.image_crop(x, **on, crop=(20, 30), dtype=dtype),
                       fn.decoders.image(x, **on, dtype=dtype)),
        batch_size=len(data), seed=99))
    assert max(blocks_a_part) >= 2, blocks_a_part


@pytest.mark.parametrize("hw_load", [0.0, 1.0])  # nvImageCodec's CUDA decoder, its hardware decoder
def test_mixed_decoders_upsample_chroma_as_asked(hw_load):
    # a 4:2:0 JPEG of mid-range colour cells with edges inside the 2x2 blocks: without
    # jpeg_fancy_upsampling each block shares one chroma sample (as in DALI's mixed decoders),
    # with it the chroma is interpolated (as on the CPU)
    from PIL import Image
    from _util import chroma_spread_per_block
    cells = np.random.default_rng(4).integers(64, 192, (20, 26, 3))
    buf = io.BytesIO()
    Image.fromarray(np.repeat(np.repeat(cells, 5, 0), 5, 1)[:96, :128].astype(np.uint8)).save(
        buf, "JPEG", quality=95, subsampling=2)
    data = [np.frombuffer(buf.getvalue(), np.uint8)] * 2
    shared = {}
    for fancy in (False, True):
        @pipeline_def(batch_size=2, num_threads=2, device_id=0)
        def pipe():
            return fn.decoders.image(fn.external_source(source=lambda: data), device="mixed",
                                     hw_decoder_load=hw_load, jpeg_fancy_upsampling=fancy)

        shared[fancy] = (chroma_spread_per_block(pipe().run()[0].as_cpu().at(0)) <= 3).mean()
    assert shared[False] > 0.99 and shared[True] < 0.5, shared


@pytest.mark.parametrize("then_resize", [False, True])
def test_a_corrupt_jpeg_in_mixed_decoding_is_the_decoders_error_naming_its_file(tmp_path, then_resize):
    # the sample fails on the GPU, then on the host, in the background: the error still names the
    # decoder, the sample's place in the batch and its file, whether the batch is a pipeline output
    # or a GPU operator's input
    folder = tmp_path / "a"
    folder.mkdir()
    for k, data in enumerate(_jpegs(4)[:4]):
        (folder / f"img_{k}.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg at all" * 8 if k == 2 else data.tobytes())

    @pipeline_def(batch_size=4, num_threads=2, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        images = fn.decoders.image(jpegs, device="mixed")
        return fn.resize(images, resize_x=32, resize_y=32) if then_resize else images

    with pytest.raises(RuntimeError, match=r"(?s)MIXED operator `penstock.fn.decoders.image`.*sample 2.*img_2.jpg"):
        pipe().run()


@pytest.mark.parametrize("decoder, kw", [(fn.decoders.image, {}), (fn.decoders.image_random_crop, {}),
                                         (fn.decoders.image_crop, {"crop": (64, 512), "crop_pos_y": 0.0})])
@pytest.mark.parametrize("hw_load", [0.0, 0.9])
def test_mixed_decoders_refuse_a_photograph_whose_scan_flipped_bytes_put_out_of_step(tmp_path, decoder, kw, hw_load):
    # the CPU decoders refuse it (libjpeg-turbo notices at the end marker: tests/test_decode_guards.py);
    # the mixed backend must too, whichever side decodes it: nvImageCodec's GPU decoders decode it
    # without an error (H200, 2026-12-02), so the host reads the GPU's files through beside them
    from test_decode_guards import DAMAGED
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "astronaut_damaged.jpg").write_bytes(DAMAGED)

    @pipeline_def(batch_size=1, num_threads=2, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        return decoder(jpegs, device="mixed", hw_decoder_load=hw_load, **kw)

    with pytest.raises(RuntimeError, match=r"(?s)astronaut_damaged.jpg"):
        pipe().run()


@pytest.mark.parametrize("device", ["cpu", "mixed"])
def test_a_crop_window_larger_than_its_image_is_refused_on_both_backends(tmp_path, device):
    # the GPU decoders gather windows from whole decoded images: one past an edge would read outside
    # the image's device memory, so the mixed backend refuses it as the CPU does, naming the file
    folder = tmp_path / "a"
    folder.mkdir()
    for k, data in enumerate(_jpegs(3)[:3]):  # the second is 133 x 153
        (folder / f"img_{k}.jpg").write_bytes(data.tobytes())

    @pipeline_def(batch_size=3, num_threads=2, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        return fn.decoders.image_crop(jpegs, device=device, crop=(125, 155))

    with pytest.raises(RuntimeError, match=r"(?s)sample [01].*img_[01].jpg.*crop window.*lies outside"):
        pipe().run()


def test_mixed_decoding_with_batches_in_flight_matches_the_cpu_decoder():
    # several batches decode at once on the GPU decoder's stream while earlier ones are consumed:
    # each must land in its own output, whole images and windows alike
    data = _jpegs(6)[:6]
    batches = [[data[(i + k) % 6] for k in range(5)] for i in range(6)]
    _assert_decoded_alike(_decoded_on_both(
        lambda info: batches[info.iteration % 6],
        lambda x, on: (fn.decoders.image(x, **on), fn.decoders.image_random_crop(x, **on, seed=3)),
        iterations=6, batch_size=5, seed=7, prefetch_queue_depth=3))


def test_the_cuda_decoder_beside_the_hardware_engines_decodes_its_part_alike(monkeypatch):
    from penstock.operators import _image_decode_mixed
    monkeypatch.setenv(_image_decode_mixed.CUDA_WAY_ENV, "on")
    before = _image_decode_mixed.split_counts()
    data = _jpegs(6)[:6]
    batches = [[data[(i + k) % 6] for k in range(5)] for i in range(6)]

    def decoders(x, on):
        large = {} if on["device"] == "cpu" else {"hybrid_huffman_threshold": 0}  # every image large enough for it
        return (fn.decoders.image(x, **on, **large), fn.decoders.image_random_crop(x, **on, **large, seed=3),
                fn.decoders.image(x, **on, **large, output_type=types.BGR, dtype=types.FLOAT))
    _assert_decoded_alike(_decoded_on_both(lambda info: batches[info.iteration % 6], decoders,
                                           iterations=6, batch_size=5, seed=7, prefetch_queue_depth=3))
    after = _image_decode_mixed.split_counts()
    assert after["cuda_samples"] > before["cuda_samples"]  # it took JPEGs of the batches


@pytest.mark.parametrize("scratch", [1, 60_000])  # bytes: one image per run / a few
def test_mixed_crops_decoded_through_scratch_in_runs_match_the_cpu_decoder(monkeypatch, scratch):
    from penstock._cuda import _nvimgcodec
    monkeypatch.setattr(_nvimgcodec, "SCRATCH_BYTES", scratch)
    data = _jpegs()
    _assert_decoded_alike(_decoded_on_both(
        lambda info: data,
        # (BGR windows: uint8 RGB ones decode straight into the output)
        lambda x, on: (fn.decoders.image_random_crop(x, **on, seed=5, output_type=types.BGR, hw_decoder_load=1.0),
                           fn.decoders.image(x, **on, output_type=types.BGR, hw_decoder_load=1.0)),
        batch_size=len(data), seed=99))


def test_mixed_decoders_leave_exif_oriented_jpegs_to_the_host():
    # the GPU decoder's parse leaves them out (a backend may write them unturned); the host turns them
    from PIL import Image
    data = _jpegs(4)[:4]
    img = Image.open(io.BytesIO(data[1].tobytes()))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees
    turned = io.BytesIO()
    img.save(turned, "JPEG", quality=92, exif=exif.tobytes())
    data[1] = np.frombuffer(turned.getvalue(), np.uint8)
    outs = _decoded_on_both(
        lambda info: data,
        lambda x, on: (fn.decoders.image(x, **on, hw_decoder_load=1.0),
                           fn.decoders.image_random_crop(x, **on, seed=5, hw_decoder_load=1.0)),
        batch_size=len(data), seed=99)
    assert outs["cpu"][0][0][1].shape[:2] == (img.width, img.height)  # turned
    _assert_decoded_alike(outs)


def test_mixed_decoders_take_gray_progressive_and_subsampled_jpegs():
    # whichever of them nvImageCodec's backends refuse go to the host; all come out as the CPU's
    from PIL import Image
    yy, xx = np.mgrid[0:90, 0:130]
    base = Image.fromarray(np.stack([xx * 255 // 130, yy * 255 // 90, (xx + 2 * yy) % 256], -1).astype(np.uint8))
    variants = [dict(mode="L"), dict(progressive=True), dict(subsampling=0), dict(subsampling=1)]
    data = []
    for kw in variants:
        mode = kw.pop("mode", "RGB")
        buf = io.BytesIO()
        base.convert(mode).save(buf, "JPEG", quality=90, **kw)
        data.append(np.frombuffer(buf.getvalue(), np.uint8))
    _assert_decoded_alike(_decoded_on_both(
        lambda info: data,
        lambda x, on: (fn.decoders.image(x, **on), fn.decoders.image_random_crop(x, **on, seed=2)),
        batch_size=len(data), seed=99))


def test_layout_and_join_operators_match_cpu():
    a = [rng.integers(0, 100, (4, 6), dtype=np.int16) for _ in range(3)]
    b = [rng.integers(0, 100, (4, 2), dtype=np.int16) for _ in range(3)]
    assert_same(lambda x, y: (fn.cat(x, y, axis=1), fn.stack(x, x, axis=0), fn.reshape(x, shape=[6, 4]),
                              fn.expand_dims(x, axes=[0]), fn.squeeze(fn.expand_dims(x, axes=[2]), axes=[2]),
                              fn.reinterpret(x, dtype=types.UINT8), x[1:3, ::2], x[-1]), [a, b], atol_int=0)


def test_subscripts_of_ragged_batches_with_per_sample_indices_match_cpu():
    from penstock import newaxis
    data = [rng.integers(0, 100, (5 + i, 4 + i, 3), dtype=np.int16) for i in range(4)]

    def graph(x):
        k = fn.external_source(source=_const([np.int64(i - 2) for i in range(4)]))  # on the host
        return x[1:-1, k], x[3:1], x[newaxis, -2:, :, 1], x[k:, 2:], x[::-1, 0]

    assert_same(graph, [data], ["HWC"], atol_int=0)


def test_host_computed_operators_give_the_same_values_on_the_gpu():
    data = [np.zeros((k + 1, 3), np.float32) for k in range(4)]
    assert_same(lambda x: (fn.shapes(x), x + types.Constant(np.float32(2.5)),
                           fn.cat(x, types.Constant(np.ones((1, 3), np.float32), device=x.device), axis=0)),
                [data], atol_int=0)
    assert_same(lambda x: (fn.random.uniform(x, range=[-2.0, 3.0], seed=3), fn.random.normal(x, seed=4),
                           fn.random.coin_flip(x, seed=5)), [data])


def test_external_source_on_the_gpu_takes_device_and_host_data():
    import torch
    host = [np.arange(6, dtype=np.float32).reshape(2, 3) + k for k in range(3)]
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        dev = cp.asarray(np.stack(host))
    batches = {"cupy": lambda: dev, "torch": lambda: torch.as_tensor(np.stack(host), device="cuda"),
               "list": lambda: [cp.asarray(h) for h in host], "host": lambda: host}
    for kind, src in batches.items():
        @pipeline_def(batch_size=3, num_threads=1, device_id=0)
        def pipe():
            return fn.external_source(source=src, device="gpu", cuda_stream=stream if kind == "cupy" else None) * 2

        (out,) = pipe().run()
        assert isinstance(out, TensorListGPU)
        for i in range(3):
            np.testing.assert_array_equal(out.as_cpu().at(i), host[i] * 2)


def test_feed_input_copies_device_data_before_returning():
    @pipeline_def(batch_size=2, num_threads=1, device_id=0, prefetch_queue_depth=1)
    def pipe():
        return fn.external_source(name="x", device="gpu") + 0

    p = pipe()
    p.build()
    buf = cp.ones((2, 4), cp.int32)
    p.feed_input("x", buf, use_copy_kernel=True)
    buf[...] = 7  # the fed batch was copied: this does not reach the pipeline
    (out,) = p.run()
    np.testing.assert_array_equal(out.as_cpu().as_array(), np.ones((2, 4), np.int32))


def test_resize_of_extreme_downscaling_plans_wide_filters_on_the_host():
    wide = [rng.integers(0, 256, (40, 1500, 3), dtype=np.uint8) for _ in range(2)]
    assert_same(lambda x: fn.resize(x, resize_x=7, resize_y=8), [wide], ["HWC"])
    assert_same(lambda x: fn.resize(x, resize_x=7, resize_y=8, interp_type=types.INTERP_LANCZOS3), [wide], ["HWC"])


def test_host_data_given_to_a_gpu_operator_is_moved_to_the_gpu():
    a = [np.arange(6, dtype=np.float32).reshape(2, 3) + k for k in range(2)]

    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=_const(a))
        # slice's anchor and shape are (x, y) by default (axes=(1, 0)): all columns, the first row
        return fn.cat(x.gpu(), x, axis=0), fn.slice(x.gpu(), np.array([0.0, 0.0], np.float32),
                                                    np.array([1.0, 0.5], np.float32))

    joined, window = pipe().run()
    for i in range(2):
        np.testing.assert_array_equal(joined.as_cpu().at(i), np.concatenate([a[i], a[i]]))
        np.testing.assert_array_equal(window.as_cpu().at(i), a[i][:1])


def _branches(probability):
    def graph(x):
        if fn.random.coin_flip(probability=probability):
            x = fn.flip(x, horizontal=1)
            if fn.random.coin_flip():
                x = fn.brightness(x, brightness=1.5)
        else:
            x = fn.rotate(x, angle=90)  # the branches' shapes differ
        return x
    return graph


@pytest.mark.parametrize("probability", [0.0, 0.4, 1.0])
def test_conditionals_split_and_merge_on_the_gpu(probability):
    """Per-sample if/else on GPU data (a CPU predicate): the same samples take the same branch
    on both devices, and the merge restores sample order; a branch no sample takes is fine."""
    assert_same(_branches(probability), [IMAGES + IMAGES[::-1]], ["HWC"], enable_conditionals=True)


@pytest.mark.parametrize("kw", [
    {},
    {"axes": (0, 1)},
    {"axis_names": "HW", "scale": 64.0, "shift": 128.0, "dtype": types.UINT8},
    {"axes": (0, 1), "ddof": 1, "epsilon": 0.5},
    {"batch": True, "axes": (0, 1)},
    {"mean": 100.0},
    {"mean": 100.0, "stddev": 40.0, "axes": (0, 1)},
    {"stddev": 30.0, "axes": (0,)},
])
def test_normalize_on_the_gpu_matches_the_cpu(kw):
    same_hw = [im[:21, :37] for im in IMAGES]  # batch=True needs equal kept extents
    assert_same(lambda x: fn.normalize(x, **kw), [same_hw], ["HWC"], rtol_float=1e-4)
    assert_same(lambda x: fn.normalize(x, **kw), [[f[:21, :37] for f in FLOATS]], ["HWC"], rtol_float=1e-4)


def test_normalize_on_the_gpu_with_per_sample_statistics():
    means = [np.array([10.0 * k, 20.0, 30.0], np.float32) for k in range(len(IMAGES))]
    stds = [np.array([2.0 + k], np.float32) for k in range(len(IMAGES))]

    def graph(x):  # argument inputs stay on the host
        m, s = fn.external_source(source=_const(means)), fn.external_source(source=_const(stds))
        return fn.normalize(x, mean=m, stddev=s), fn.normalize(x, mean=m, axes=(0, 1))

    assert_same(graph, [IMAGES], ["HWC"], rtol_float=1e-4)


def test_ops_compose_moves_data_to_the_gpu_operator():
    from penstock import ops
    chain = ops.Compose([ops.Cast(dtype=types.FLOAT), ops.Normalize(device="gpu", mean=1.0, stddev=2.0)])

    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(lambda: [np.arange(4, dtype=np.uint8), np.full(4, 5, np.uint8)], batch=True)
        return chain(x)
    out, = pipe().run()
    assert isinstance(out, TensorListGPU)
    np.testing.assert_allclose(out.as_cpu().at(1), np.full(4, 2.0, np.float32))


def test_output_stream_is_the_stream_outputs_are_produced_on():
    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        return fn.external_source(lambda: [np.ones(3, np.float32)] * 2, batch=True).gpu() * 2

    p = pipe()
    stream = p.output_stream()
    assert isinstance(stream, cp.cuda.Stream)
    out, = p.run()
    assert out.stream is stream
    stream.synchronize()
    np.testing.assert_array_equal(out.as_cpu().at(0), [2, 2, 2])


def test_pipeline_streams_take_the_priority_asked_for(monkeypatch):
    from penstock import _engine
    from penstock._cuda import _context
    least, greatest = _engine.stream_priority_range(0)
    assert greatest < least <= 0  # the driver's numbers: a greater priority is a smaller one
    monkeypatch.delenv(_context.STREAM_PRIORITY_ENV, raising=False)
    assert _cuda.DeviceContext(0).stream.priority == greatest
    monkeypatch.setenv(_context.STREAM_PRIORITY_ENV, "normal")
    assert _cuda.DeviceContext(0).stream.priority == 0


def test_iterations_paired_through_the_gpu_stages_are_the_cpu_pipelines_batches(monkeypatch, tmp_path):
    """A training pipeline taken as the framework iterators take it runs its GPU stages on pairs of
    iterations (penstock._pairs); each batch is the CPU pipeline's: its reader's samples, its own
    random windows and mirrors."""
    from penstock._executor import Executor

    from _util import write_smooth_jpegs
    root = write_smooth_jpegs(tmp_path, 9, lambda i, c: (90 + 11 * i, 120 + 7 * i + 5 * c))
    made = []
    paired = Executor._paired
    monkeypatch.setattr(Executor, "_paired", lambda self, a, b: made.append(paired(self, a, b)) or made[-1])

    def batches(device_id):
        decoder = {"device": "cpu"} if device_id is None else {"device": "mixed", "jpeg_fancy_upsampling": True}

        @pipeline_def(batch_size=5, num_threads=2, device_id=device_id, seed=17)
        def pipe():
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, initial_fill=8, name="Reader")
            images = fn.decoders.image_random_crop(jpegs, random_area=[0.3, 1.0], **decoder)
            images = fn.resize(images, resize_x=40, resize_y=32)
            images = fn.crop_mirror_normalize(images, dtype=types.UINT8, output_layout="HWC",
                                              mirror=fn.random.coin_flip())
            return images, labels
        p = pipe()
        p.schedule_run()
        got = []
        for _ in range(9):  # across two epoch ends (18 files)
            images, labels = p.share_outputs()
            got.append([[o.as_cpu().at(i) for i in range(len(o))] for o in (images, labels)])
            p.release_outputs()
            p.schedule_run()
        return got
    outs = {"mixed": batches(0), "cpu": batches(None)}
    assert sum(pair is not None for pair in made) >= 3
    for c_it, g_it in zip(outs["cpu"], outs["mixed"]):
        assert [s.tolist() for s in c_it[1]] == [s.tolist() for s in g_it[1]]
    _assert_decoded_alike({device: [[it[0]] for it in got] for device, got in outs.items()})
