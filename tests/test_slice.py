"""fn.slice windows: axes as constants, layout letters and per-sample DataNodes, start/end/shape
as constants and argument inputs, positional anchor/shape inputs; against numpy slicing."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types

from _util import run_es, samples

RNG = np.random.default_rng(3)
IMGS = [RNG.integers(0, 255, s).astype(np.uint8) for s in [(6, 7, 3), (9, 5, 3), (4, 8, 3)]]


def _node(rows, dtype=np.int32):
    return fn.external_source(source=lambda: [np.array(r, dtype) for r in rows])


def _window(x, axes, start, end):
    """numpy reference: x cut to [start, end) along each of axes."""
    idx = [slice(None)] * x.ndim
    for a, s, e in zip(axes, start, end):
        idx[a] = slice(s, e)
    return x[tuple(idx)]


def test_axes_as_per_sample_data_node_with_ragged_lengths():
    axes = [[0, 1], [1], []]          # [] = every axis, in order
    start = [[1, 2], [3], [1, 2, 0]]
    shape = [[3, 4], [2], [2, 5, 2]]
    (out,) = run_es(lambda x: fn.slice(x, axes=_node(axes), start=_node(start), shape=_node(shape)), IMGS,
                    layouts=["HWC"])
    full_axes = [[0, 1], [1], [0, 1, 2]]
    for got, img, a, s, h in zip(samples(out), IMGS, full_axes, start, shape):
        np.testing.assert_array_equal(got, _window(img, a, s, np.add(s, h)))
    assert out.layout() == "HWC"


def test_axes_data_node_negative_and_scalar_per_sample():
    (out,) = run_es(lambda x: fn.slice(x, axes=_node([-1, 2, -2]), rel_start=0.25, rel_end=0.75), IMGS,
                    layouts=["HWC"])
    for got, img, a in zip(samples(out), IMGS, [2, 2, 1]):
        n = img.shape[a]
        lo, hi = np.floor(0.25 * n + 0.5).astype(int), np.floor(0.75 * n + 0.5).astype(int)
        np.testing.assert_array_equal(got, _window(img, [a], [lo], [hi]))


def test_start_and_end_as_data_nodes_with_constant_axes():
    start, end = [[1, 0], [2, 1], [0, 3]], [[4, 6], [8, 4], [3, 8]]
    (out,) = run_es(lambda x: fn.slice(x, start=_node(start), end=_node(end), axes=[0, 1]), IMGS)
    for got, img, s, e in zip(samples(out), IMGS, start, end):
        np.testing.assert_array_equal(got, _window(img, [0, 1], s, e))


def test_relative_data_nodes_round_half_away_from_zero():
    # 0.125 * 20 = 2.5 -> 3; (0.125 + 0.25) * 20 = 7.5 -> 8
    x = [np.arange(40, dtype=np.int16).reshape(2, 20)] * 2
    rs, rsh = [[0.125], [0.0]], [[0.25], [0.5]]
    (out,) = run_es(lambda a: fn.slice(a, rel_start=_node(rs, np.float32), rel_shape=_node(rsh, np.float32),
                                       axes=[1]), x)
    np.testing.assert_array_equal(out.at(0), x[0][:, 3:8])
    np.testing.assert_array_equal(out.at(1), x[1][:, 0:10])


def test_absolute_fractions_are_cut_to_whole_numbers():
    # DALI reads absolute coordinates as integers: 1.5 -> 1, 2.6 -> 2, shape 2.5 -> 2
    x = [np.arange(24 * 32, dtype=np.int32).reshape(24, 32)]
    (out,) = run_es(lambda a: fn.slice(a, start=[1.5, 2.6], shape=[2.5, 2.5], axes=[0, 1]), x)
    np.testing.assert_array_equal(out.at(0), x[0][1:3, 2:4])


def test_default_axes_are_w_h_by_name_or_1_0_without_layout():
    x = [np.arange(3 * 24 * 32, dtype=np.int32).reshape(3, 24, 32)]
    (chw,) = run_es(lambda a: fn.slice(a, start=[2, 3], shape=[5, 6]), x, layouts=["CHW"])
    np.testing.assert_array_equal(chw.at(0), x[0][:, 3:9, 2:7])  # W from 2, H from 3
    y = [np.arange(24 * 32, dtype=np.int32).reshape(24, 32)]
    (plain,) = run_es(lambda a: fn.slice(a, start=[2, 3], shape=[5, 6]), y)
    np.testing.assert_array_equal(plain.at(0), y[0][3:9, 2:7])  # dims [1, 0]


def test_empty_axes_and_axis_names_mean_every_axis():
    for kw in ({"axes": []}, {"axis_names": ""}):
        (out,) = run_es(lambda x: fn.slice(x, start=[1, 2, 0], shape=[2, 2, 2], **kw), IMGS[:1], layouts=["HWC"])
        np.testing.assert_array_equal(out.at(0), IMGS[0][1:3, 2:4, 0:2])


def test_positional_integer_inputs_are_absolute():
    anchor, shape = [np.array([1, 2], np.int32)] * 3, [np.array([2, 3], np.int32)] * 3
    (out,) = run_es(lambda x, a, s: fn.slice(x, a, s, axes=[0, 1]), IMGS, anchor, shape)
    for got, img in zip(samples(out), IMGS):
        np.testing.assert_array_equal(got, img[1:3, 2:5])


def test_positional_inputs_with_per_sample_axes():
    anchor, shape = [np.array([0.25], np.float32)] * 3, [np.array([0.5], np.float32)] * 3
    (out,) = run_es(lambda x, a, s: fn.slice(x, a, s, axes=_node([[1], [0], [2]])), IMGS, anchor, shape,
                    layouts=["HWC", None, None])
    for got, img, ax in zip(samples(out), IMGS, [1, 0, 2]):
        n = img.shape[ax]
        lo, hi = np.floor(0.25 * n + 0.5).astype(int), np.floor(0.75 * n + 0.5).astype(int)
        np.testing.assert_array_equal(got, _window(img, [ax], [lo], [hi]))


@pytest.mark.parametrize("kwargs, message", [
    ({"start": [1], "shape": [2], "axes": [3]}, "out of range"),
    ({"start": [1, 1], "shape": [1, 1], "axes": [1, -2]}, "more than once"),
    ({"start": [1], "shape": [2], "axis_names": "D"}, "Axis 'D' is not present in the input layout"),
    ({"start": [3], "end": [2], "axes": [1]}, "ends before it starts"),
    ({"start": [3], "shape": [-1], "axes": [1]}, "must not be negative"),
    ({"start": [1, 1], "shape": [1, 1, 1], "axes": [0, 1]}, "3 values for 2 axes"),
])
def test_bad_windows_raise_runtime_errors_naming_slice(kwargs, message):
    with pytest.raises(RuntimeError, match=message) as e:
        run_es(lambda x: fn.slice(x, **kwargs), IMGS, layouts=["HWC"])
    assert "slice" in str(e.value)


@pytest.mark.parametrize("kwargs, message", [  # DALI's words, which code written for DALI matches
    ({"start": [1], "shape": [2], "axes": [0], "axis_names": "H"},
     "Arguments `axes` and `axis_names` are mutually exclusive"),
    ({"start": [1], "rel_start": [0.1], "shape": [2]}, '"start" and "rel_start" arguments are mutually exclusive'),
    ({"start": [1], "end": [3], "shape": [2]},
     '"end", "rel_end", "shape", and "rel_shape" arguments are mutually exclusive'),
    ({"axes": [0]}, "give the window"),
])
def test_conflicting_arguments_fail_at_build(kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        run_es(lambda x: fn.slice(x, **kwargs), IMGS, layouts=["HWC"])


def test_float_axes_data_node_is_refused():
    with pytest.raises(RuntimeError, match="'axes' must be integers"):
        run_es(lambda x: fn.slice(x, start=[1], shape=[2], axes=_node([[1.0]] * 3, np.float32)), IMGS)


def test_image_decoder_slice_takes_the_same_window_arguments():
    import io

    from PIL import Image
    pngs = []
    for img in IMGS:
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG")
        pngs.append(np.frombuffer(buf.getvalue(), np.uint8))
    start, shape = [[1, 2], [3], [2]], [[3, 4], [2], [5]]
    (out,) = run_es(lambda x: fn.decoders.image_slice(x, axes=_node([[0, 1], [1], [-2]]), start=_node(start),
                                                      shape=_node(shape)), pngs)
    for got, img, a, s, h in zip(samples(out), IMGS, [[0, 1], [1], [1]], start, shape):
        np.testing.assert_array_equal(got, _window(img, a, s, np.add(s, h)))
    with pytest.raises(RuntimeError, match="channels stay whole"):
        run_es(lambda x: fn.decoders.image_slice(x, start=[1], shape=[1], axes=[2]), pngs)


def test_output_type_is_the_input_type_uint8_float16_or_float():
    tl, = run_es(lambda x: fn.slice(x, start=[1], shape=[2], axes=[0], dtype=types.FLOAT16), IMGS)
    np.testing.assert_array_equal(samples(tl)[0], IMGS[0][1:3].astype(np.float16))
    for dtype in (types.INT16, types.INT32):
        with pytest.raises(RuntimeError, match=f"slice .*output type {dtype.name} is not supported"):
            run_es(lambda x: fn.slice(x, start=[1], shape=[2], axes=[0], dtype=dtype), IMGS)


def test_fill_values_are_checked_only_with_the_pad_policy():
    for fill in ([0.5, 1.5], []):  # never used without padding
        tl, = run_es(lambda x: fn.slice(x, start=[1], shape=[9], axes=[0], fill_values=fill,
                                        out_of_bounds_policy="trim_to_shape"), IMGS, layouts=["HWC"])
        for img, got in zip(IMGS, samples(tl)):
            np.testing.assert_array_equal(got, img[1:10])
    # padding: one value per channel of the window (here 2 of the 3 are kept); [] pads with zeros
    tl, = run_es(lambda x: fn.slice(x, start=[0, 1], shape=[10, 2], axes=[0, 2], fill_values=[7, 8],
                                    out_of_bounds_policy="pad"), IMGS, layouts=["HWC"])
    for img, got in zip(IMGS, samples(tl)):
        expect = np.empty((10, img.shape[1], 2), np.uint8)
        expect[:] = [7, 8]
        expect[:img.shape[0]] = img[:, :, 1:3]
        np.testing.assert_array_equal(got, expect)
    tl, = run_es(lambda x: fn.slice(x, start=[0], shape=[8], axes=[0], fill_values=[],
                                    out_of_bounds_policy="pad"), IMGS, layouts=["HWC"])
    np.testing.assert_array_equal(samples(tl)[2], np.concatenate([IMGS[2], np.zeros((4, 8, 3), np.uint8)]))
    with pytest.raises(RuntimeError, match="slice .*'fill_values' has 2 values for 3 output channels"):
        run_es(lambda x: fn.slice(x, start=[0], shape=[8], axes=[0], fill_values=[7, 8],
                                  out_of_bounds_policy="pad"), IMGS, layouts=["HWC"])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16])
def test_integer_fill_values_are_cut_toward_zero_and_clamped(dtype):
    x = np.arange(4).astype(dtype)
    info = np.iinfo(dtype)
    for fill in (2.7, -2.7, -0.5, 1000.0):
        tl, = run_es(lambda x: fn.slice(x, start=[-1], shape=[6], axes=[0], out_of_bounds_policy="pad",
                                        fill_values=[fill]), [x])
        expected = np.clip(np.trunc(fill), info.min, info.max)
        np.testing.assert_array_equal(samples(tl)[0], np.pad(x, (1, 1), constant_values=expected))


def test_scalar_constants_serve_as_window_arguments_and_as_outputs():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        data = fn.external_source(source=lambda: [np.arange(20, dtype=np.float32)] * 2)
        length, at = types.ScalarConstant(4), types.ScalarConstant(5)
        return fn.slice(data, start=at, shape=length, axes=[0]), length, at

    window, length, at = pipe().run()
    np.testing.assert_array_equal(window.at(1), np.arange(5, 9, dtype=np.float32))
    assert np.array(length.at(0)) == 4 and length.at(0).dtype == np.int32 and np.array(at.at(1)) == 5
