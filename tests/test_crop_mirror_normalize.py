"""fn.crop_mirror_normalize in pipelines against numpy: (x - mean) / std * scale + shift after the
crop window, mirrored, transposed to CHW, converted with rounding/saturation ([verified] §5)."""
import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, types

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def constant_source(value):
    """A batch source (no parameters, so external_source calls it without the iteration)."""
    return lambda: value


def run(images, layout="HWC", op=None, **kw):
    arg_sources = {k[:-4]: v for k, v in kw.items() if k.endswith("_src")}
    kw = {k: v for k, v in kw.items() if not k.endswith("_src")}
    op = op or (lambda x, **a: fn.crop_mirror_normalize(x, **kw, **a))

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: images, layout=layout)
        args = {k: fn.external_source(source=constant_source(v)) for k, v in arg_sources.items()}
        return op(x, **args)

    p = pipe()
    p.build()
    out = p.run()[0]
    return [np.array(out.at(i)) for i in range(len(images))], out


def convert(x, dtype):
    if np.dtype(dtype).kind == "f":
        return x.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)


def reference(img, mean=(0,), std=(1,), scale=1.0, shift=0.0, window=None, mirror=False, dtype=np.float32,
              chw=True, pad=False):
    x = img.astype(np.float64)
    if window is not None:
        (y0, x0), (h, w) = window
        x = x[y0:y0 + h, x0:x0 + w]
    x = (x - np.asarray(mean, np.float64)) / np.asarray(std, np.float64) * scale + shift
    if mirror:
        x = x[:, ::-1]
    if pad:
        x = np.concatenate([x, np.zeros(x.shape[:-1] + (1,))], axis=-1)
    x = convert(x, dtype)
    return np.ascontiguousarray(np.moveaxis(x, -1, 0) if chw else x)


IMG = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)


def test_default_is_float_chw_verified():
    out, tl = run([IMG])
    assert tl.dtype == types.FLOAT and tl.layout() == "CHW" and out[0].shape == (3, 40, 50)
    np.testing.assert_allclose(out[0], reference(IMG), rtol=1e-6)


def test_imagenet_crop_and_mirror():
    out, _ = run([IMG], crop=(24, 32), mean=MEAN, std=STD, mirror=1)
    # anchors: round(0.5 * 16) = 8, round(0.5 * 18) = 9
    np.testing.assert_allclose(out[0], reference(IMG, MEAN, STD, window=((8, 9), (24, 32)), mirror=True),
                               rtol=1e-5, atol=1e-5)


def test_hwc_output_scale_shift_and_dtypes():
    out, tl = run([IMG], output_layout="HWC", mean=[100.0], std=[50.0], scale=64, shift=128, dtype=types.UINT8)
    assert tl.layout() == "HWC"
    np.testing.assert_array_equal(out[0], reference(IMG, [100], [50], 64, 128, dtype=np.uint8, chw=False))
    out, _ = run([IMG], output_layout=types.NCHW, mean=[10.0], dtype=types.INT8)  # saturates at 127
    np.testing.assert_array_equal(out[0], reference(IMG, [10], dtype=np.int8))
    assert out[0].max() == 127
    out, _ = run([IMG], mean=MEAN, std=STD, output_dtype=types.FLOAT16, image_type=types.RGB)
    np.testing.assert_allclose(out[0].astype(np.float32), reference(IMG, MEAN, STD), rtol=1e-3, atol=1e-3)


def test_pad_output_appends_zero_channel_verified():
    out, _ = run([IMG], mean=MEAN, std=STD, pad_output=True, fill_values=(5, 5, 5))
    assert out[0].shape == (4, 40, 50)
    assert (out[0][3] == 0).all()
    np.testing.assert_allclose(out[0], reference(IMG, MEAN, STD, pad=True), rtol=1e-5, atol=1e-5)


def test_mean_and_std_may_name_the_pad_output_channel_which_is_ignored():
    out, _ = run([IMG], mean=list(MEAN) + [50.0], std=list(STD) + [0.0], pad_output=True)
    np.testing.assert_allclose(out[0], reference(IMG, MEAN, STD, pad=True), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="'mean' has 4 values; the input has 3 channels"):
        run([IMG], mean=list(MEAN) + [50.0], std=STD)  # no pad_output: one value too many
    with pytest.raises(RuntimeError, match="'std' has 5 values; the input has 3 channels"):
        run([IMG], std=list(STD) + [1.0, 1.0], pad_output=True)


def test_out_of_bounds_pad_uses_fill_values():
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", fill_values=(1, 2, 3),
                 output_layout="HWC")
    # anchor y = round(0 * (40 - 44)) = 0: rows 40..43 are outside
    np.testing.assert_allclose(out[0][:40], IMG.astype(np.float32))
    np.testing.assert_array_equal(out[0][40:], np.broadcast_to(np.float32([1, 2, 3]), (4, 50, 3)))
    with pytest.raises(Exception, match="Slice can't be placed out of bounds with current policy"):
        run([IMG], crop=(44, 50))


def test_per_sample_mirror_mean_and_std():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (10, 12, 3), dtype=np.uint8) for _ in range(3)]
    mirrors = [np.int32(0), np.int32(1), np.int32(1)]
    means = [rng.uniform(0, 255, 3).astype(np.float32) for _ in range(3)]
    stds = [rng.uniform(1, 60, 3).astype(np.float32) for _ in range(3)]
    out, _ = run(imgs, mirror_src=mirrors, mean_src=means, std_src=stds)
    for img, m, mu, sd, o in zip(imgs, mirrors, means, stds, out):
        np.testing.assert_allclose(o, reference(img, mu, sd, mirror=bool(m)), rtol=1e-5, atol=1e-4)


def test_coin_flip_mirror_and_random_crop_position():
    imgs = [IMG] * 6

    @pipeline_def(batch_size=6, num_threads=2, device_id=None, seed=11)
    def pipe():
        x = fn.external_source(source=lambda: imgs, layout="HWC")
        coin = fn.random.coin_flip()
        px = fn.random.uniform(range=(0.0, 1.0))
        return fn.crop_mirror_normalize(x, crop=(20, 20), crop_pos_x=px, mirror=coin, mean=MEAN, std=STD), coin, px

    p = pipe()
    p.build()
    out, coins, pxs = p.run()
    for i in range(6):
        x0 = int(np.floor(float(np.array(pxs.at(i))) * 30 + 0.5))
        ref = reference(IMG, MEAN, STD, window=((10, x0), (20, 20)), mirror=bool(np.array(coins.at(i))))
        np.testing.assert_allclose(np.array(out.at(i)), ref, rtol=1e-5, atol=1e-5)


def test_sequences_and_legacy_ops():
    seq = np.random.default_rng(2).integers(0, 256, (3, 8, 9, 3), dtype=np.uint8)
    with pytest.raises(RuntimeError, match="The requested output layout is not a permutation of input layout"):
        run([seq], layout="FHWC", crop=(4, 5), mean=MEAN, std=STD)  # the default "CHW", as in DALI
    out, tl = run([seq], layout="FHWC", crop=(4, 5), mean=MEAN, std=STD, output_layout="FCHW")
    assert tl.layout() == "FCHW" and out[0].shape == (3, 3, 4, 5)
    for f in range(3):
        np.testing.assert_allclose(out[0][f], reference(seq[f], MEAN, STD, window=((2, 2), (4, 5))),
                                   rtol=1e-5, atol=1e-5)
    cmn = ops.CropMirrorNormalize(crop=(8, 8), mean=MEAN, std=STD, output_layout=types.NHWC)
    out, tl = run([IMG], op=lambda x: cmn(x))
    assert tl.layout() == "HWC"
    np.testing.assert_allclose(out[0], reference(IMG, MEAN, STD, window=((16, 21), (8, 8)), chw=False),
                               rtol=1e-5, atol=1e-5)


def test_float_input():
    img = np.random.default_rng(3).uniform(0, 1, (6, 7, 3)).astype(np.float32)
    out, _ = run([img], mean=[0.5], std=[0.25])
    np.testing.assert_allclose(out[0], reference(img, [0.5], [0.25]), rtol=1e-5, atol=1e-6)


def test_crop_window_sizes_and_argument_pairs():
    # crop (0.5, 1.5): 0 rows -> the whole height; 1 column at round(0.5 * (50 - 1)) = 25 (ties away from zero)
    out, _ = run([IMG], crop=(0.5, 1.5))
    np.testing.assert_allclose(out[0], reference(IMG, window=((0, 25), (40, 1))))
    for kwargs, message in (({"crop_h": 0.0}, "'crop_h' and 'crop_w' together"),
                            ({"crop_w": 8.0}, "'crop_h' and 'crop_w' together"),
                            ({"crop_d": 2.0}, "`crop_d` argument must be provided together with `crop_w` and")):
        with pytest.raises(RuntimeError, match=f"crop_mirror_normalize .*{message}"):
            run([IMG], **kwargs)


def test_int16_and_int32_outputs_are_refused():
    for dtype in (types.INT16, types.INT32):
        with pytest.raises(RuntimeError, match=f"output type {dtype.name} is not supported"):
            run([IMG], dtype=dtype)


def test_fill_values_count_only_with_the_pad_policy():
    for fill in ((0.5, 1.5), ()):  # no padding: not used
        out, _ = run([IMG], crop=(20, 30), fill_values=fill)
        np.testing.assert_allclose(out[0], reference(IMG, window=((10, 10), (20, 30))))
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", fill_values=(),
                 output_layout="HWC")  # none given: zeros
    np.testing.assert_array_equal(out[0][40:], 0)
    # with one mean and one std (DALI's rule): one fill value or one per output channel
    with pytest.raises(RuntimeError, match="'fill_values' has 2 values for 3 output channels"):
        run([IMG], crop=(20, 30), out_of_bounds_policy="pad", fill_values=(0.5, 1.5))
    # with pad_output the output has 4 channels: one value per input channel is not enough either
    for fill in ((1, 2), (1, 2, 3)):
        with pytest.raises(RuntimeError, match=f"'fill_values' has {len(fill)} values for 4 output channels"):
            run([IMG], crop=(20, 30), out_of_bounds_policy="pad", pad_output=True, fill_values=fill)
    # with a per-channel mean or std, fewer values may be given: the others are 0
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", pad_output=True,
                 fill_values=(1, 2, 3), mean=MEAN, output_layout="HWC")
    np.testing.assert_array_equal(out[0][40:], np.broadcast_to(np.float32([1, 2, 3, 0]), (4, 50, 4)))
    with pytest.raises(RuntimeError, match="'fill_values' has 5 values for 4 output channels"):
        run([IMG], crop=(20, 30), out_of_bounds_policy="pad", pad_output=True, fill_values=(1, 2, 3, 4, 5),
            mean=MEAN)
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", pad_output=True,
                 fill_values=(1, 2, 3, 0), output_layout="HWC")
    np.testing.assert_array_equal(out[0][40:], np.broadcast_to(np.float32([1, 2, 3, 0]), (4, 50, 4)))


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("fill, pad_value", [((7.5,), 7.5), ((1, 2, 3, 9.5), 9.5)])
def test_pad_output_channel_takes_its_fill_value_under_the_pad_policy(layout, fill, pad_value):
    # one fill value is every channel's, the extra one's too; of C + 1 values the last is the extra one's
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", pad_output=True,
                 fill_values=fill, output_layout=layout, mean=MEAN, std=STD)
    hwc = out[0] if layout == "HWC" else out[0].transpose(1, 2, 0)
    assert hwc.shape == (44, 50, 4)
    np.testing.assert_allclose(hwc[:40, :, :3], reference(IMG, MEAN, STD, chw=False), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(hwc[40:, :, :3], np.broadcast_to(np.float32(fill[:3]), (4, 50, 3)))
    np.testing.assert_array_equal(hwc[..., 3], np.float32(pad_value))  # inside the input too


def test_pad_output_channel_is_zero_under_the_other_policies():
    for policy in ("error", "trim_to_shape"):
        out, _ = run([IMG], crop=(20, 30), out_of_bounds_policy=policy, pad_output=True, fill_values=(1, 2, 3, 4))
        assert (out[0][3] == 0).all()


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT8])
def test_fill_values_are_cut_toward_zero_for_integer_outputs(dtype):
    fill = (1.5, 2.5, -0.7, 9.9)
    out, _ = run([IMG], crop=(44, 50), crop_pos_y=0.0, out_of_bounds_policy="pad", pad_output=True,
                 fill_values=fill, output_layout="HWC", dtype=dtype)
    info = np.iinfo(out[0].dtype)
    expected = np.clip(np.trunc(fill), info.min, info.max)
    np.testing.assert_array_equal(out[0][40:], np.broadcast_to(expected, (4, 50, 4)))
    np.testing.assert_array_equal(out[0][:40, :, 3], expected[3])


@pytest.mark.parametrize("output_layout", ["WHC", "CWH", "HCW", "HWC", "CHW"])
def test_any_permutation_of_the_input_layout_is_an_output_layout(output_layout):
    out, tl = run([IMG], crop=(8, 10), mean=MEAN, std=STD, mirror=1, output_layout=output_layout)
    hwc = reference(IMG, MEAN, STD, window=((16, 20), (8, 10)), mirror=True, chw=False)
    assert tl.layout() == output_layout
    np.testing.assert_allclose(out[0], np.transpose(hwc, ["HWC".index(c) for c in output_layout]), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("layout, output_layout", [("CHW", "HWC"), ("CHW", "CHW"), ("FCHW", "FHWC"),
                                                   ("CFHW", "FCHW")])
def test_planar_inputs(layout, output_layout):
    seq = np.random.default_rng(4).integers(0, 256, (2, 12, 14, 3), dtype=np.uint8)  # FHWC
    frames = seq if "F" in layout else seq[:1]
    data = np.transpose(frames, ["FHWC".index(c) for c in layout]) if "F" in layout else \
        np.transpose(frames[0], ["HWC".index(c) for c in layout])
    out, tl = run([np.ascontiguousarray(data)], layout=layout, crop=(5, 6), mean=MEAN, std=STD,
                  output_layout=output_layout)
    expected = np.stack([reference(f, MEAN, STD, window=((4, 4), (5, 6)), chw=False) for f in frames])
    source = "FHWC" if "F" in layout else "HWC"
    expected = expected if "F" in layout else expected[0]
    assert tl.layout() == output_layout
    np.testing.assert_allclose(out[0], np.transpose(expected, [source.index(c) for c in output_layout]),
                               rtol=1e-5, atol=1e-5)


def test_a_depth_crops_the_frames_of_a_sequence():
    seq = np.random.default_rng(5).integers(0, 256, (6, 12, 14, 3), dtype=np.uint8)
    out, tl = run([seq], layout="FHWC", crop_d=3, crop_h=5, crop_w=6, crop_pos_z=0.5, mean=MEAN, std=STD,
                  output_layout="FCHW")
    # frames: round(0.5 * (6 - 3)) = 2 (ties away from zero) -> frames 2..4
    expected = np.stack([reference(f, MEAN, STD, window=((4, 4), (5, 6))) for f in seq[2:5]])
    np.testing.assert_allclose(out[0], expected, rtol=1e-5, atol=1e-5)
