"""fn.resize in pipelines: output-size rules ([verified] examples of operators.md §3 on a 100x200
image), numerics against a float64 numpy model, per-sample arguments, layouts, ops.Resize."""
import numpy as np
import pytest

from penstock import fn, ops, pipeline_def, types

from test_resize_kernel import LINEAR, NN, CUBIC, ref_resize, round_sat


def constant_source(value):
    """A batch source (no parameters, so external_source calls it without the iteration)."""
    return lambda: value


def run_pipe(images, layout="HWC", **kw):
    """Resizes a batch of images given as a list; returns the output batch as a list of arrays."""
    arg_sources = {k[:-4]: v for k, v in kw.items() if k.endswith("_src")}
    kw = {k: v for k, v in kw.items() if not k.endswith("_src")}

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: images, layout=layout)
        args = {k: fn.external_source(source=constant_source(v)) for k, v in arg_sources.items()}
        out = fn.resize(x, **kw, **args)
        return tuple(out) if isinstance(out, list) else out

    p = pipe()
    p.build()
    out = p.run()
    return [[np.array(o.at(i)) for i in range(len(images))] for o in out] if len(out) > 1 else \
        [np.array(out[0].at(i)) for i in range(len(images))]


IMG = np.random.default_rng(0).integers(0, 256, (100, 200, 3), dtype=np.uint8)


@pytest.mark.parametrize("kwargs, hw", [
    (dict(resize_x=50), (25, 50)),
    (dict(resize_y=30), (30, 60)),
    (dict(size=(30, 0)), (30, 60)),
    (dict(size=(64, 64)), (64, 64)),
    (dict(size=(64, 64), mode="not_larger"), (32, 64)),
    (dict(size=(64, 64), mode="not_smaller"), (64, 128)),
    (dict(size=(64, 64), mode="stretch"), (64, 64)),
    (dict(resize_y=64, mode="stretch"), (64, 200)),
    (dict(resize_shorter=50), (50, 100)),
    (dict(resize_longer=50), (25, 50)),
    (dict(resize_shorter=64, max_size=100), (50, 100)),
    (dict(resize_x=33), (17, 33)),
    (dict(resize_shorter=75.5), (76, 151)),
    (dict(resize_x=33, mode="not_smaller"), (17, 33)),
])
def test_verified_output_sizes(kwargs, hw):
    out = run_pipe([IMG], **kwargs)[0]
    assert out.shape == hw + (3,)


def test_negative_size_flips():
    out = run_pipe([IMG], resize_x=-200, resize_y=100, interp_type=types.INTERP_NN)[0]
    np.testing.assert_array_equal(out, IMG[:, ::-1])
    out = run_pipe([IMG], size=(-100, 200), interp_type=types.INTERP_NN)[0]
    np.testing.assert_array_equal(out, IMG[::-1])


def test_verified_numerics_through_the_pipeline():
    row = np.array([0, 10, 20, 30], np.float32).reshape(1, 4, 1)
    out = run_pipe([row], resize_x=8, resize_y=1)[0].ravel()
    np.testing.assert_allclose(out, [0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30], atol=1e-4)
    row8 = (np.arange(8, dtype=np.float32) * 10).reshape(1, 8, 1)
    np.testing.assert_allclose(run_pipe([row8], resize_x=4, resize_y=1)[0].ravel(), [6.25, 25, 45, 63.75], atol=1e-4)
    np.testing.assert_allclose(run_pipe([row8], resize_x=4, resize_y=1, antialias=False)[0].ravel(),
                               [5, 25, 45, 65], atol=1e-4)
    np.testing.assert_allclose(run_pipe([row8], resize_x=3, resize_y=1)[0].ravel(), [9.767, 35, 60.233], atol=1e-3)
    np.testing.assert_array_equal(run_pipe([row8], resize_x=4, resize_y=1, interp_type=types.INTERP_NN)[0].ravel(),
                                  [10, 30, 50, 70])
    np.testing.assert_allclose(run_pipe([row], resize_x=8, resize_y=1, interp_type=types.INTERP_CUBIC)[0].ravel(),
                               [-0.703125, 1.796875, 7.265625, 12.5, 17.5, 22.734375, 28.203125, 30.703125],
                               atol=1e-4)
    u8 = np.array([0, 255, 0, 255], np.uint8).reshape(1, 4, 1)
    np.testing.assert_array_equal(run_pipe([u8], resize_x=8, resize_y=1)[0].ravel(), [0, 64, 191, 191, 64, 64, 191, 255])


def test_batch_with_different_sizes_matches_numpy():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(60, 80), (90, 45), (33, 33)]]
    outs = run_pipe(imgs, resize_shorter=24, dtype=types.FLOAT)
    for img, out in zip(imgs, outs):
        h, w = img.shape[:2]
        s = 24 / min(h, w)
        size = (int(np.floor(h * s + 0.5)), int(np.floor(w * s + 0.5)))
        assert out.shape == size + (3,) and out.dtype == np.float32
        # subpixel_scale: the ROI is adjusted so the scale stays exactly 24/min(h, w)
        roi_h, roi_w = size[0] / s, size[1] / s
        roi = ((h - roi_h) / 2, (w - roi_w) / 2, (h + roi_h) / 2, (w + roi_w) / 2)
        np.testing.assert_allclose(out, ref_resize(img, size, roi=roi), atol=2e-3)


def test_per_sample_sizes_and_filters():
    rng = np.random.default_rng(2)
    imgs = [rng.uniform(0, 1, (20, 30, 3)).astype(np.float32) for _ in range(2)]
    outs = run_pipe(imgs, resize_x_src=[np.float32(15), np.float32(40)], resize_y=10,
                    min_filter=types.INTERP_CUBIC, mag_filter=types.INTERP_NN)
    assert outs[0].shape == (10, 15, 3) and outs[1].shape == (10, 40, 3)
    np.testing.assert_allclose(outs[0], ref_resize(imgs[0], (10, 15), (CUBIC, NN)), atol=1e-4)
    np.testing.assert_allclose(outs[1], ref_resize(imgs[1], (10, 40), (CUBIC, NN)), atol=1e-4)


def test_per_sample_side_lengths_beside_a_constant_cap():
    imgs = [IMG, IMG[:50], IMG[:, :40]]  # 100x200, 50x200, 100x40
    outs = run_pipe(imgs, resize_shorter_src=[np.float32(50), np.float32(50), np.float32(20)], max_size=150)
    # the second, 50x200, would keep its size: the cap shrinks both sides by 0.75 (37.5 rounds up)
    assert [o.shape[:2] for o in outs] == [(50, 100), (38, 150), (50, 20)]


def test_the_engine_refuses_size_columns_that_do_not_fit_the_batch():
    from penstock import _engine
    regions, none = np.zeros((2, 4)), np.zeros(1)
    with pytest.raises(ValueError, match="resize_output_sizes"):
        _engine.resize_output_sizes(regions, [np.zeros(3), none], none, none, 0, np.zeros(0), True)
    with pytest.raises(ValueError, match="max_size"):
        _engine.resize_output_sizes(regions, [none, none], none, none, 0, np.zeros(3), True)
    sizes, whole, rois = _engine.resize_output_sizes(np.array([[0, 0, 10, 20.0], [0, 0, 30, 30]]),
                                                     [np.array([-5.0, 6]), none], none, none, 0, np.zeros(0), True)
    assert whole.tolist() == [[5, 10], [6, 6]] and sizes.tolist() == [[5, 10], [6, 6]]
    assert rois.tolist() == [[10, 0, 0, 20], [0, 0, 30, 30]]  # a negative size flips its axis


def test_roi_relative_and_absolute():
    img = np.random.default_rng(3).uniform(0, 255, (40, 50, 3)).astype(np.float32)
    out = run_pipe([img], size=(20, 20), roi_start=(0.25, 0.1), roi_end=(0.75, 0.9), roi_relative=True)[0]
    np.testing.assert_allclose(out, ref_resize(img, (20, 20), roi=(10, 5, 30, 45)), atol=2e-3)
    out = run_pipe([img], size=(20, 20), roi_start=(10, 45), roi_end=(30, 5))[0]  # reversed x: flip
    np.testing.assert_allclose(out, ref_resize(img, (20, 20), roi=(10, 45, 30, 5)), atol=2e-3)


def test_subpixel_scale_off_maps_roi_to_rounded_size():
    img = np.random.default_rng(4).uniform(0, 255, (100, 200, 3)).astype(np.float32)
    out = run_pipe([img], resize_shorter=75.5, subpixel_scale=False)[0]
    np.testing.assert_allclose(out, ref_resize(img, (76, 151)), atol=2e-3)


def test_save_attrs_and_uint8_rounding():
    img = np.random.default_rng(5).integers(0, 256, (30, 40, 3), dtype=np.uint8)
    out, attrs = run_pipe([img], resize_x=17, resize_y=13, save_attrs=True)
    np.testing.assert_array_equal(attrs[0], [30, 40])  # DALI's attributes: the input's spatial size
    ref = round_sat(ref_resize(img, (13, 17)), np.uint8)
    assert np.abs(out[0].astype(int) - ref.astype(int)).max() <= 1


def test_layouts_chw_and_sequences():
    rng = np.random.default_rng(6)
    chw = rng.uniform(0, 1, (3, 16, 20)).astype(np.float32)
    out = run_pipe([chw], layout="CHW", size=(8, 10))[0]
    ref = ref_resize(np.moveaxis(chw, 0, -1), (8, 10))
    np.testing.assert_allclose(out, np.moveaxis(ref, -1, 0), atol=1e-4)
    seq = rng.uniform(0, 1, (4, 16, 20, 3)).astype(np.float32)
    out = run_pipe([seq], layout="FHWC", size=(5, 7))[0]
    np.testing.assert_allclose(out, ref_resize(seq, (5, 7)), atol=1e-4)


def test_volume_resize_z():
    vol = np.random.default_rng(7).uniform(0, 1, (8, 10, 12, 1)).astype(np.float32)
    out = run_pipe([vol], layout="DHWC", resize_x=6, resize_y=5, resize_z=4)[0]
    assert out.shape == (4, 5, 6, 1)


def test_legacy_ops_resize():
    img = np.random.default_rng(8).integers(0, 256, (20, 30, 3), dtype=np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return ops.Resize(resize_x=15, resize_y=10, image_type=types.RGB)(x)

    p = pipe()
    p.build()
    out = np.array(p.run()[0].at(0))
    ref = round_sat(ref_resize(img, (10, 15)), np.uint8)
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1


def test_bad_arguments():
    with pytest.raises(Exception, match="mode"):
        run_pipe([IMG], resize_x=10, mode="bogus")
    with pytest.raises(Exception, match="not supported"):
        run_pipe([IMG.astype(np.int32)], resize_x=10)


def test_resize_z_has_no_effect_on_images():
    assert run_pipe([IMG], resize_x=50, resize_z=10)[0].shape == (25, 50, 3)
    assert run_pipe([IMG], resize_z=-1)[0].shape == IMG.shape  # x and y unset: the size stays


@pytest.mark.parametrize("kwargs", [dict(), dict(resize_x=16, resize_y=12, resize_shorter=0.0),
                                    dict(resize_x=16, resize_longer=0.0), dict(size=(30, 40), resize_x=0.0),
                                    dict(resize_shorter=10, resize_longer=0.0),
                                    dict(resize_y=10, resize_shorter_src=[np.float32(20)])])
def test_the_size_is_given_in_exactly_one_way(kwargs):
    # a size argument counts as given even when it is 0 ("unset"): mixing ways is an error
    with pytest.raises(RuntimeError, match="exactly one way"):
        run_pipe([IMG], **kwargs)


@pytest.mark.parametrize("name", ["resize_shorter", "resize_longer", "resize_x"])
def test_a_zero_size_argument_alone_keeps_the_size(name):
    assert run_pipe([IMG], **{name: 0.0})[0].shape == IMG.shape


def test_dtype_is_the_input_type_or_float():
    img16 = IMG[:10, :20].astype(np.int16) - 100
    out = run_pipe([img16], size=(5, 10), dtype=types.INT16)[0]
    assert out.dtype == np.int16 and out.shape == (5, 10, 3)
    assert run_pipe([IMG], size=(5, 10), dtype=types.FLOAT)[0].dtype == np.float32
    for img, dtype in ((IMG, types.INT16), (IMG, types.UINT16), (IMG.astype(np.float32), types.UINT8)):
        with pytest.raises(RuntimeError, match=f"dtype {dtype.name} is not supported"):
            run_pipe([img], size=(5, 10), dtype=dtype)


def test_roi_start_and_roi_end_go_together():
    img = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match="together") as e:
        run_pipe([img], resize_x=4, resize_y=4, roi_start=[1.0, 1.0])
    assert isinstance(e.value, RuntimeError)
