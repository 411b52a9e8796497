"""fn.crop / fn.slice / fn.pad / fn.flip in pipelines, against numpy slicing and np.pad."""
import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, types


def constant_source(value):
    """A batch source (no parameters, so external_source calls it without the iteration)."""
    return lambda: value


def run(op, inputs, layout="HWC", extra_inputs=(), **kw):
    """Runs `op(x, *extra_inputs, **kw)`; kw values ending in `_src` become per-sample inputs."""
    arg_sources = {k[:-4]: v for k, v in kw.items() if k.endswith("_src")}
    kw = {k: v for k, v in kw.items() if not k.endswith("_src")}

    @pipeline_def(batch_size=len(inputs), num_threads=2, device_id=None, seed=7)
    def pipe():
        x = fn.external_source(source=lambda: inputs, layout=layout)
        extra = [fn.external_source(source=constant_source(v)) for v in extra_inputs]
        args = {k: fn.external_source(source=constant_source(v)) for k, v in arg_sources.items()}
        return op(x, *extra, **kw, **args)

    p = pipe()
    p.build()
    out = p.run()[0]
    return [np.array(out.at(i)) for i in range(len(inputs))], out


def padded_window(img, anchor, shape, fill):
    """numpy reference: window [anchor, anchor+shape) with outside = fill (per last-dim channel)."""
    pad = [(max(0, -a), max(0, a + s - e)) for a, s, e in zip(anchor, shape, img.shape)]
    out = np.stack([np.pad(img[..., c], pad[:-1], constant_values=np.asarray(fill).reshape(-1)[c % np.size(fill)])
                    for c in range(img.shape[-1])], axis=-1) if img.ndim == 3 else \
        np.pad(img, pad, constant_values=np.asarray(fill).reshape(-1)[0])
    start = [a + p[0] for a, p in zip(anchor, pad)]
    return out[tuple(slice(s, s + n) for s, n in zip(start, shape))]


IMG = np.random.default_rng(0).integers(0, 256, (10, 12, 3), dtype=np.uint8)


# ---- crop ----------------------------------------------------------------------------------

def test_crop_anchor_rounding_verified():
    img = np.arange(10, dtype=np.uint8).reshape(1, 10, 1) * np.ones((4, 1, 1), np.uint8)
    out, _ = run(fn.crop, [img], crop=(4, 3), crop_pos_x=0.5)  # 0.5 * 7 = 3.5 -> 4
    np.testing.assert_array_equal(out[0][0, :, 0], [4, 5, 6])
    out, _ = run(fn.crop, [img], crop=(4, 4), crop_pos_x=0.25)  # 0.25 * 6 = 1.5 -> 2
    np.testing.assert_array_equal(out[0][0, :, 0], [2, 3, 4, 5])
    out, _ = run(fn.crop, [img], crop=(4, 4), crop_pos_x=0.25, rounding="truncate")
    np.testing.assert_array_equal(out[0][0, :, 0], [1, 2, 3, 4])


def test_crop_pad_policy_and_fill():
    out, tl = run(fn.crop, [IMG], crop=(12, 14), out_of_bounds_policy="pad", fill_values=(1, 2, 3))
    np.testing.assert_array_equal(out[0], padded_window(IMG, (-1, -1, 0), (12, 14, 3), (1, 2, 3)))
    assert tl.layout() == "HWC"


def test_crop_error_and_trim_policies():
    with pytest.raises(Exception, match="Slice can't be placed out of bounds with current policy"):
        run(fn.crop, [IMG], crop=(12, 4))
    out, _ = run(fn.crop, [IMG], crop=(12, 4), crop_pos_y=0.0, crop_pos_x=1.0, out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(out[0], IMG[:, 8:12])


def test_crop_per_sample_positions_and_sizes():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (20, 30, 3), dtype=np.uint8), rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)]
    pos = [np.float32(0.0), np.float32(1.0)]
    out, _ = run(fn.crop, imgs, crop_h=8, crop_w_src=[np.float32(5), np.float32(7)], crop_pos_x_src=pos)
    np.testing.assert_array_equal(out[0], imgs[0][6:14, 0:5])
    np.testing.assert_array_equal(out[1], imgs[1][4:12, 9:16])


def test_crop_dtype_sequences_and_legacy_ops():
    seq = np.random.default_rng(2).integers(0, 256, (3, 8, 9, 3), dtype=np.uint8)
    out, tl = run(fn.crop, [seq], layout="FHWC", crop=(4, 5), dtype=types.FLOAT)
    np.testing.assert_array_equal(out[0], seq[:, 2:6, 2:7].astype(np.float32))
    assert tl.dtype == types.FLOAT
    out, _ = run(ops.Crop(crop=(4, 5), output_dtype=types.FLOAT16), [IMG])
    np.testing.assert_array_equal(out[0], IMG[3:7, 4:9].astype(np.float16))


def test_crop_fill_survives_dtype_conversion():
    out, _ = run(fn.crop, [IMG], crop=(10, 14), out_of_bounds_policy="pad", fill_values=(0.5,), dtype=types.FLOAT)
    np.testing.assert_array_equal(out[0], padded_window(IMG.astype(np.float32), (0, -1, 0), (10, 14, 3), (0.5,)))
    out, _ = run(fn.crop, [IMG], crop=(10, 14), out_of_bounds_policy="pad", fill_values=(7,), dtype=types.FLOAT)
    np.testing.assert_array_equal(out[0], padded_window(IMG.astype(np.float32), (0, -1, 0), (10, 14, 3), (7,)))


def test_crop_volume():
    vol = np.arange(6 * 7 * 8, dtype=np.int16).reshape(6, 7, 8, 1)
    out, _ = run(fn.crop, [vol], layout="DHWC", crop=(2, 3, 4), crop_pos_z=0.0)
    np.testing.assert_array_equal(out[0], vol[0:2, 2:5, 2:6])


def test_crop_sizes_are_cut_to_whole_numbers_and_nonpositive_keeps_the_extent():
    # 0.5 -> 0: the whole height; 1.5 -> 1 column at round(0.5 * (12 - 1)) = 6
    out, _ = run(fn.crop, [IMG], crop=(0.5, 1.5))
    np.testing.assert_array_equal(out[0], IMG[:, 6:7])
    # -1: the whole height; 4.9 -> 4 columns at round(0.5 * (12 - 4)) = 4
    out, _ = run(fn.crop, [IMG], crop_h=-1.0, crop_w=4.9)
    np.testing.assert_array_equal(out[0], IMG[:, 4:8])
    # a depth given with crop_h / crop_w does not apply to images
    out, _ = run(fn.crop, [IMG], crop_h=4, crop_w=6, crop_d=2)
    np.testing.assert_array_equal(out[0], IMG[3:7, 3:9])

    # no size at all: the whole input, wherever the window is placed and whatever the output type
    out, tl = run(fn.crop, [IMG, IMG[:5, :4]], crop_pos_x=0.2, crop_pos_y=0.9)
    np.testing.assert_array_equal(out[0], IMG)
    np.testing.assert_array_equal(out[1], IMG[:5, :4])
    assert tl.layout() == "HWC"
    out, _ = run(fn.crop, [IMG], out_of_bounds_policy="pad", dtype=types.FLOAT)
    np.testing.assert_array_equal(out[0], IMG.astype(np.float32))


@pytest.mark.parametrize("kwargs, message", [
    ({"crop": (4, 6), "crop_h": 0.0}, "'crop_h' and 'crop_w' together"),
    ({"crop_w": 6.0}, "'crop_h' and 'crop_w' together"),
    ({"crop": (4, 6), "crop_d": 0.0}, "`crop_d` argument must be provided together with `crop_w` and `crop_h`"),
    ({"crop": (4, 6), "crop_h": 4.0, "crop_w": 0.0}, "either 'crop' or"),
    ({"crop": (4,)}, "'crop' needs 2 values"),
])
def test_crop_window_arguments_that_do_not_go_together(kwargs, message):
    with pytest.raises(RuntimeError, match=message) as e:
        run(fn.crop, [IMG], **kwargs)
    assert "crop" in str(e.value)


def test_crop_output_types():
    vol = np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6, 1)
    out, tl = run(fn.crop, [vol], layout="DHWC", crop=(2, 3, 4), dtype=types.INT16)  # the input's own type
    assert tl.dtype == types.INT16
    np.testing.assert_array_equal(out[0], vol[1:3, 1:4, 1:5])
    for dtype in (types.INT16, types.INT32):  # other than the input's: UINT8, FLOAT16 or FLOAT only
        with pytest.raises(RuntimeError, match=f"crop .*output type {dtype.name} is not supported"):
            run(fn.crop, [IMG], crop=(4, 6), dtype=dtype)


def test_crop_fill_values_only_count_with_the_pad_policy():
    # no padding possible: the fill values are not used, whatever their number
    for fill in ((0.5, 1.5), ()):
        out, _ = run(fn.crop, [IMG], crop=(4, 6), fill_values=fill)
        np.testing.assert_array_equal(out[0], IMG[3:7, 3:9])
        out, _ = run(fn.crop, [IMG], crop=(4, 14), out_of_bounds_policy="trim_to_shape", fill_values=fill)
        np.testing.assert_array_equal(out[0], IMG[3:7])
    # padding: one value per output channel, or one for all; none fills with zeros
    out, _ = run(fn.crop, [IMG], crop=(12, 14), out_of_bounds_policy="pad", fill_values=())
    np.testing.assert_array_equal(out[0], padded_window(IMG, (-1, -1, 0), (12, 14, 3), (0,)))
    with pytest.raises(RuntimeError, match="crop .*'fill_values' has 2 values for 3 output channels"):
        run(fn.crop, [IMG], crop=(4, 6), out_of_bounds_policy="pad", fill_values=(0.5, 1.5))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16])
@pytest.mark.parametrize("fill", [2.7, 2.5, 0.99, -0.99, -2.7, 300.0, -300.0])
def test_crop_integer_fill_values_are_cut_toward_zero_and_clamped(dtype, fill):
    img = np.ones((2, 2, 1), dtype)
    info = np.iinfo(dtype)
    expected = np.clip(np.trunc(fill), info.min, info.max)
    out, _ = run(fn.crop, [img], crop=(3, 3), crop_pos_x=0.0, crop_pos_y=0.0, out_of_bounds_policy="pad",
                 fill_values=(fill,))
    np.testing.assert_array_equal(out[0], padded_window(img, (0, 0, 0), (3, 3, 1), (expected,)))


def test_crop_fill_values_for_a_converted_integer_output_are_cut_toward_zero():
    # uint8 output of float or int16 data: 2.7 -> 2 and -0.7 -> 0 (not rounded by the conversion)
    for data in (np.full((2, 2, 1), 5, np.float32), np.full((2, 2, 1), 5, np.int16)):
        for fill, expected in ((2.7, 2), (-0.7, 0), (300.0, 255)):
            out, tl = run(fn.crop, [data], crop=(3, 3), crop_pos_x=0.0, crop_pos_y=0.0,
                          out_of_bounds_policy="pad", fill_values=(fill,), dtype=types.UINT8)
            assert tl.dtype == types.UINT8
            np.testing.assert_array_equal(out[0], padded_window(np.full((2, 2, 1), 5, np.uint8), (0, 0, 0),
                                                                (3, 3, 1), (expected,)))


def truncated_uint8(x):
    """float data converted as DALI's crop and slice do: cut toward zero, clamped, NaN -> 0."""
    return np.clip(np.trunc(np.nan_to_num(np.asarray(x, np.float64), nan=0.0)), 0, 255).astype(np.uint8)


WINDOW_VALUES = [-300.7, -1.7, -0.99, -0.5, 0.5, 0.99, 1.5, 2.5, 3.5, 127.6, 254.9, 255.99, 300.2, 7e4,
                 np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("ftype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op, kw", [(fn.crop, {"crop": (2, 17)}),
                                    (fn.slice, {"start": (0, 0), "shape": (2, 17), "axes": (0, 1)})])
def test_float_data_converted_to_an_integer_output_is_cut_toward_zero(ftype, op, kw):
    with np.errstate(over="ignore"):  # 7e4 is inf in float16
        img = np.tile(np.array(WINDOW_VALUES, ftype).reshape(1, -1, 1), (2, 1, 1))
    out, tl = run(op, [img], dtype=types.UINT8, **kw)
    assert tl.dtype == types.UINT8
    np.testing.assert_array_equal(out[0], truncated_uint8(img))


@pytest.mark.parametrize("stype", [np.float32, np.int32])
@pytest.mark.parametrize("op, kw", [(fn.crop, {"crop": (1, 9), "crop_pos_x": 0.0}),
                                    (fn.slice, {"start": (0, 0), "shape": (1, 9), "axes": (0, 1)})])
def test_data_converted_to_float16_saturates_and_large_fill_values_overflow(stype, op, kw):
    # DALI 2.4: the data saturates at +-65504; the fill values convert plainly, to inf when too large
    row = np.array([1e6, -1e6, 7e4, 65519, 65520, 5, -3], stype)
    img = row.reshape(1, -1, 1)
    expected_data = np.clip(row.astype(np.float64), -65504, 65504).astype(np.float16)
    for fill, expected_fill in ((1e6, np.inf), (-7e4, -np.inf), (0.5, 0.5), (2.0, 2.0)):
        out, tl = run(op, [img], dtype=types.FLOAT16, out_of_bounds_policy="pad", fill_values=(fill,), **kw)
        assert tl.dtype == types.FLOAT16
        np.testing.assert_array_equal(out[0].ravel(), np.concatenate([expected_data, [expected_fill] * 2]))


def test_padded_float_window_converted_to_uint8_cuts_data_and_fill():
    img = np.array([[2.5, 3.7], [254.9, -1.5]], np.float32).reshape(2, 2, 1)
    out, _ = run(fn.crop, [img], crop=(3, 3), crop_pos_x=0.0, crop_pos_y=0.0, out_of_bounds_policy="pad",
                 fill_values=(9.9,), dtype=types.UINT8)
    np.testing.assert_array_equal(out[0], padded_window(truncated_uint8(img), (0, 0, 0), (3, 3, 1), (9,)))


# ---- slice ---------------------------------------------------------------------------------

def test_slice_relative_inputs_default_axes():
    anchor = [np.array([0.25, 0.1], np.float32)]  # axes [1, 0]: x then y
    shape = [np.array([0.5, 0.5], np.float32)]
    out, _ = run(fn.slice, [IMG], extra_inputs=(anchor, shape))
    # x: round(0.25*12)=3 .. round(0.75*12)=9; y: round(0.1*10)=1 .. round(0.6*10)=6
    np.testing.assert_array_equal(out[0], IMG[1:6, 3:9])


def test_slice_absolute_inputs_axis_names_and_pad():
    anchor = [np.array([-2, 3], np.int32)]
    shape = [np.array([5, 4], np.int32)]
    out, _ = run(fn.slice, [IMG], extra_inputs=(anchor, shape), axis_names="HW", normalized_anchor=False,
                 normalized_shape=False, out_of_bounds_policy="pad", fill_values=(9, 8, 7))
    np.testing.assert_array_equal(out[0], padded_window(IMG, (-2, 3, 0), (5, 4, 3), (9, 8, 7)))


def test_slice_arguments():
    out, _ = run(fn.slice, [IMG], start=(2, 1), end=(7, 4))  # x 2..7, y 1..4
    np.testing.assert_array_equal(out[0], IMG[1:4, 2:7])
    out, _ = run(fn.slice, [IMG], rel_start=(0.5, 0.5), rel_shape=(0.5, 0.5))
    np.testing.assert_array_equal(out[0], IMG[5:10, 6:12])
    out, _ = run(fn.slice, [IMG], start=(1,), shape=(2,), axes=(2,))
    np.testing.assert_array_equal(out[0], IMG[:, :, 1:3])
    with pytest.raises(Exception, match="Slice can't be placed out of bounds with current policy"):
        run(fn.slice, [IMG], start=(0, 0), end=(20, 5))
    out, _ = run(fn.slice, [IMG], start=(0, 0), end=(20, 5), out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(out[0], IMG[0:5, :])


def test_slice_1d_and_legacy_ops():
    x = np.arange(10, dtype=np.float32)
    out, _ = run(fn.slice, [x], layout="", start=(-2,), shape=(5,), axes=(0,), out_of_bounds_policy="pad",
                 fill_values=(-1,))
    np.testing.assert_array_equal(out[0], [-1, -1, 0, 1, 2])
    out, _ = run(ops.Slice(rel_start=(0.2,), rel_end=(0.5,), axes=(0,)), [x], layout="")
    np.testing.assert_array_equal(out[0], [2, 3, 4])


# ---- pad -----------------------------------------------------------------------------------

def test_pad_to_batch_max_and_align_verified():
    xs = [np.arange(n, dtype=np.float32) + 1 for n in (2, 5, 3)]
    out, tl = run(fn.pad, xs, layout="", fill_value=-1)
    for x, o in zip(xs, out):
        np.testing.assert_array_equal(o, np.pad(x, (0, 5 - len(x)), constant_values=-1))
    out, _ = run(fn.pad, xs, layout="", align=4)
    assert all(o.shape == (8,) for o in out)
    out, _ = run(fn.pad, xs, layout="", shape=(5,))
    assert all(o.shape == (5,) for o in out)


def test_pad_axis_names_and_per_sample_fill():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(4, 5), (6, 3)]]
    out, _ = run(fn.pad, imgs, axis_names="W", fill_value_src=[np.float32(7), np.float32(9)])
    for img, o, f in zip(imgs, out, (7, 9)):
        np.testing.assert_array_equal(o, np.pad(img, ((0, 0), (0, 5 - img.shape[1]), (0, 0)), constant_values=f))
    out, _ = run(ops.Pad(axes=(0, 1), shape=(8, -1)), imgs)
    assert [o.shape for o in out] == [(8, 5, 3), (8, 5, 3)]


def test_pad_axes_per_sample():
    # each sample pads its own dims, each to the batch's largest extent of that dim (as DALI)
    imgs = [np.arange(18, dtype=np.uint8).reshape(2, 3, 3), np.arange(24, dtype=np.uint8).reshape(4, 2, 3)]
    out, tl = run(fn.pad, imgs, fill_value=9, axes_src=[np.array([0], np.int32), np.array([1], np.int32)])
    np.testing.assert_array_equal(out[0], np.pad(imgs[0], ((0, 2), (0, 0), (0, 0)), constant_values=9))
    np.testing.assert_array_equal(out[1], np.pad(imgs[1], ((0, 0), (0, 1), (0, 0)), constant_values=9))
    out, _ = run(fn.pad, imgs, fill_value=9, align=[4], axes_src=[np.array([0], np.int32), np.array([0, 1], np.int32)])
    assert [o.shape for o in out] == [(4, 3, 3), (4, 4, 3)]
    assert tl.layout() == "HWC"


def test_pad_integer_fill_value_is_cut_toward_zero():
    # 2.7 -> 2, -2.7 -> -2, -0.5 -> 0; out of range: clamped
    for dtype, fill, expected in ((np.uint8, 2.7, 2), (np.int16, -2.7, -2), (np.int16, -0.5, 0),
                                  (np.uint8, 300, 255)):
        x = np.ones((1, 1, 1), dtype)
        out, _ = run(fn.pad, [x], shape=(2, 2, 1), fill_value=fill)
        np.testing.assert_array_equal(out[0], np.pad(x, ((0, 1), (0, 1), (0, 0)), constant_values=expected))


def test_pad_empty_lists_mean_defaults_and_shape_never_shrinks():
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(4, 5), (6, 3)]]
    for kw in ({"axes": ()}, {"shape": ()}, {"align": ()}):  # all axes, the batch maximum, no alignment
        out, _ = run(fn.pad, imgs, fill_value=3, **kw)
        for img, o in zip(imgs, out):
            np.testing.assert_array_equal(o, np.pad(img, ((0, 6 - img.shape[0]), (0, 5 - img.shape[1]), (0, 0)),
                                                    constant_values=3))
    # a shape below a sample's extent keeps that extent (no error); -1 is the batch maximum
    out, _ = run(fn.pad, imgs, shape=(1,))
    assert [o.shape for o in out] == [(4, 5, 3), (6, 3, 3)]
    out, _ = run(fn.pad, imgs, shape=(5, 1, -1))
    assert [o.shape for o in out] == [(5, 5, 3), (6, 3, 3)]
    np.testing.assert_array_equal(out[0], np.pad(imgs[0], ((0, 1), (0, 0), (0, 0))))


@pytest.mark.parametrize("kw", [{"axis_names": "HW", "shape": (7, -1), "align": (1, 4)},
                                {"axes": (-3, 1), "shape": (2,), "align": (3,)}, {"axes": (), "align": (2,)}])
def test_pad_with_the_same_axes_for_all_sizes_as_per_sample_axes_do(kw):
    """Constant axes take a plan made a column at a time; the same axes given per sample the general one."""
    rng = np.random.default_rng(6)
    imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(4, 5), (6, 3), (2, 9)]]
    uniform, _ = run(fn.pad, imgs, fill_value=5, **kw)
    if "axis_names" in kw:
        axes = np.array([0, 1], np.int32)
    else:
        axes = np.array(kw["axes"], np.int32)
    rest = {k: v for k, v in kw.items() if k not in ("axis_names", "axes")}
    per_sample, _ = run(fn.pad, imgs, fill_value=5, axes_src=[axes] * len(imgs), **rest)
    for u, p in zip(uniform, per_sample):
        np.testing.assert_array_equal(u, p)
    with pytest.raises(RuntimeError, match='Argument "shape" expected shape 2 but got 3 values'):
        run(fn.pad, imgs, axis_names="HW", shape=(1, 2, 3))
    with pytest.raises(RuntimeError, match="Values of `align` argument must be positive"):
        run(fn.pad, imgs, axis_names="HW", align=(0,))


# ---- flip ----------------------------------------------------------------------------------

def test_flip_default_horizontal_verified():
    out, _ = run(fn.flip, [IMG])
    np.testing.assert_array_equal(out[0], IMG[:, ::-1])


def test_flip_per_sample_flags_and_layouts():
    rng = np.random.default_rng(4)
    imgs = [rng.integers(0, 256, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
    out, _ = run(fn.flip, imgs, horizontal_src=[np.int32(1), np.int32(0), np.int32(1)], vertical=1)
    np.testing.assert_array_equal(out[0], imgs[0][::-1, ::-1])
    np.testing.assert_array_equal(out[1], imgs[1][::-1])
    np.testing.assert_array_equal(out[2], imgs[2][::-1, ::-1])
    chw = np.moveaxis(imgs[0], -1, 0).copy()
    out, _ = run(fn.flip, [chw], layout="CHW")
    np.testing.assert_array_equal(out[0], chw[:, :, ::-1])
    vol = rng.integers(0, 256, (3, 4, 5, 1), dtype=np.uint8)
    out, _ = run(ops.Flip(horizontal=0, depthwise=1), [vol], layout="DHWC")
    np.testing.assert_array_equal(out[0], vol[::-1])


def test_flip_with_coin_flip():
    imgs = [IMG] * 8

    @pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: imgs, layout="HWC")
        c = fn.random.coin_flip()
        return fn.flip(x, horizontal=c), c

    p = pipe()
    p.build()
    out, coins = p.run()
    for i in range(8):
        expect = IMG[:, ::-1] if int(np.array(coins.at(i))) else IMG
        np.testing.assert_array_equal(np.array(out.at(i)), expect)


def test_flip_depthwise_without_a_depth_dim_is_ignored():
    out, _ = run(fn.flip, [IMG], depthwise=1)
    np.testing.assert_array_equal(out[0], IMG[:, ::-1])
    out, _ = run(fn.flip, [IMG], horizontal=0, depthwise=1)
    np.testing.assert_array_equal(out[0], IMG)


def test_a_depth_crops_the_frames_of_a_sequence_and_a_layoutless_image_is_hwc():
    seq = np.random.default_rng(6).integers(0, 256, (5, 10, 12, 3), dtype=np.uint8)
    out, tl = run(fn.crop, [seq], layout="FHWC", crop=(2, 4, 6), crop_pos_z=1.0)
    np.testing.assert_array_equal(out[0], seq[3:5, 3:7, 3:9])
    out, tl = run(fn.crop, [IMG], layout=None, crop=(4, 6))
    assert tl.layout() == "HWC"
