"""warp_affine and rotate in pipelines: numpy references, np.rot90 and the spec's verified sizes."""
import numpy as np
import pytest
from pipeline_run import run_once
from test_warp_kernel import reference

from penstock import fn, types


def images(seed, shapes=((10, 20, 3), (7, 7, 3), (16, 9, 3))):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, s).astype(np.uint8) for s in shapes]


def test_verified_shift_matrix():
    row = np.array([0, 10, 20, 30], np.float32).reshape(1, 4, 1)
    out = run_once(lambda x: fn.warp_affine(x, matrix=[1, 0, 1, 0, 1, 0]), [row])[0][0]
    assert out.ravel().tolist() == [10, 20, 30, 30]


@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR])
def test_warp_matrix_size_fill_and_inverse_map(interp):
    imgs = images(0)
    m = np.array([[0.913, 0.291, -2.137], [-0.207, 1.093, 3.061]])  # no exact pixel edges or ties
    fwd = np.linalg.inv(np.vstack([m, [0, 0, 1]]))[:2]
    outs = run_once(lambda x: (fn.warp_affine(x, matrix=m.ravel().tolist(), size=[12, 15], fill_value=7,
                                              interp_type=interp),
                               fn.warp_affine(x, matrix=fwd.ravel().tolist(), inverse_map=False,
                                              interp_type=interp)), imgs)
    for img, a, b in zip(imgs, *outs):
        ra = reference(img, m, (12, 15), interp == types.INTERP_LINEAR, 7.0)
        rb = reference(img, m, img.shape[:2], interp == types.INTERP_LINEAR, None)
        for out, ref in ((a, ra), (b, rb)):
            assert out.shape == ref.shape
            diff = np.abs(out.astype(int) - ref.astype(int))
            assert np.mean(diff == 0) > 0.97 and (interp == types.INTERP_NN or diff.max() <= 1)


def test_matrix_as_second_input_per_sample():
    imgs = images(1)
    mats = [np.array([[1, 0, s], [0, 1, 0]], np.float32) for s in (0.0, 1.0, 2.0)]
    outs = run_once(lambda x, m: fn.warp_affine(x, m), imgs, mats)[0]
    for img, m, out in zip(imgs, mats, outs):
        np.testing.assert_array_equal(out, reference(img, m, img.shape[:2], True, None))


@pytest.mark.parametrize("angle, size", [(90, (20, 10)), (45, (22, 22)), (30, (20, 24))])
def test_rotate_verified_canvas_sizes(angle, size):
    out = run_once(lambda x: fn.rotate(x, angle=angle), images(2, [(10, 20, 3)]))[0][0]
    assert out.shape[:2] == size


def test_rotate_90_is_rot90_counter_clockwise():
    imgs = images(3)
    outs = run_once(lambda x: (fn.rotate(x, angle=90), fn.rotate(x, angle=-90, interp_type=types.INTERP_NN),
                               fn.rotate(x, angle=180)), imgs)
    for img, ccw, cw, flip in zip(imgs, *outs):
        np.testing.assert_array_equal(ccw, np.rot90(img))
        np.testing.assert_array_equal(cw, np.rot90(img, -1))
        np.testing.assert_array_equal(flip, np.rot90(img, 2))


def test_rotate_keep_size_fill_and_per_sample_angle():
    imgs = images(4, [(11, 17, 3)] * 2)
    angles = [np.float32(30), np.float32(-75)]
    outs = run_once(lambda x, a: fn.rotate(x, angle=a, keep_size=True, fill_value=0), imgs, angles)[0]
    for img, a, out in zip(imgs, angles, outs):
        t = np.deg2rad(float(a))
        h, w = img.shape[:2]
        rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
        c = np.array([w / 2, h / 2])
        m = np.hstack([rot, (c - rot @ c)[:, None]])
        ref = reference(img, m, (h, w), True, 0.0)
        assert out.shape == img.shape
        assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1


def test_rotate_axis_has_no_effect_on_2d_images():
    imgs = images(5)
    plain, with_axis, empty_axis = run_once(lambda x: (fn.rotate(x, angle=30),
                                                       fn.rotate(x, angle=30, axis=[0.5, 1.5]),
                                                       fn.rotate(x, angle=30, axis=[])), imgs)
    for a, b, c in zip(plain, with_axis, empty_axis):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("size", [[], [2.0], [3.0, 4.0, 5.0], [0.0, 4.0], [3.0, -1.0]])
@pytest.mark.parametrize("op", ["rotate", "warp_affine"])
def test_size_needs_two_positive_values(op, size):
    graph = {"rotate": lambda x: fn.rotate(x, angle=30, size=size),
             "warp_affine": lambda x: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1, 0], size=size)}[op]
    with pytest.raises(RuntimeError, match="'size'"):
        run_once(graph, images(6))


def test_size_rounds_half_up_to_at_least_one_pixel():
    outs = run_once(lambda x: (fn.warp_affine(x, matrix=[1, 0, 0, 0, 1, 0], size=[0.4, 2.5]),
                               fn.rotate(x, angle=30, size=[1.49, 3.5])), images(7))
    assert {o.shape[:2] for o in outs[0]} == {(1, 3)} and {o.shape[:2] for o in outs[1]} == {(1, 4)}


@pytest.mark.parametrize("matrix", [[2.0], [1, 0, 0, 0, 1], [1, 0, 0, 0, 1, 0, 0, 0, 1]])
def test_matrix_needs_six_values(matrix):
    with pytest.raises(RuntimeError, match="'matrix' needs 6 values"):
        run_once(lambda x: fn.warp_affine(x, matrix=matrix), images(8))


def test_output_types():
    imgs = images(3)
    floats = [im.astype(np.float32) * 1.7 - 40 for im in imgs]
    m = [0.913, 0.291, -2.137, -0.207, 1.093, 3.061]
    as_float, in_float = run_once(lambda x, f: (fn.warp_affine(x, matrix=m, dtype=types.FLOAT, fill_value=0),
                                                fn.warp_affine(f, matrix=m, fill_value=0)),
                                  imgs, [im.astype(np.float32) for im in imgs])
    for a, b in zip(as_float, in_float):  # uint8 into float: warped in float, not rounded
        assert a.dtype == np.float32 and np.array_equal(a, b)
    warped, to_u8, to_i16 = run_once(lambda f: (fn.rotate(f, angle=30, fill_value=0),
                                                fn.rotate(f, angle=30, fill_value=0, dtype=types.UINT8),
                                                fn.rotate(f, angle=30, fill_value=0, dtype=types.INT16)), floats)
    for w, u, i in zip(warped, to_u8, to_i16):  # float into integers: rounded half away from zero, saturated
        rounded = np.sign(w) * np.floor(np.abs(w) + 0.5)
        assert u.dtype == np.uint8 and np.array_equal(u, np.clip(rounded, 0, 255))
        assert i.dtype == np.int16 and np.array_equal(i, rounded)
    for src, dtype in ((imgs, types.INT16), (floats, types.FLOAT16), (imgs, types.UINT16)):
        with pytest.raises(RuntimeError, match="Unsupported input/output types"):
            run_once(lambda x: fn.warp_affine(x, matrix=m, dtype=dtype), src)
