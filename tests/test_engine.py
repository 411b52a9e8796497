"""The native engine called directly: thread pool, element-wise, layout and file kernels."""
import os

import numpy as np
import pytest

from penstock import _engine
from penstock.types import DALIDataType as T


@pytest.fixture(scope="module")
def pool():
    return _engine.ThreadPool(2)


def packed(arrays):
    shapes = np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), -1)
    vols = shapes.prod(axis=1)
    offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    return np.concatenate([a.ravel() for a in arrays]), shapes, offsets


def test_thread_pool_reports_its_size():
    assert _engine.ThreadPool(3).num_threads == 3
    assert _engine.ThreadPool(0).num_threads == 1  # at least the calling thread


@pytest.mark.parametrize("src,dst,values", [
    (np.float32, np.uint8, [-1.5, 0.5, 1.5, 2.5, 254.5, 300.7, np.nan]),
    (np.float64, np.int8, [-1.5, -0.5, 0.49, 127.6, -200.0]),
    (np.int32, np.int8, [-300, 100, 300, -128, 127]),
    (np.int64, np.uint16, [-5, 70000, 65535, 3]),
    (np.uint32, np.int16, [40000, 5, 32767]),
    (np.bool_, np.float32, [True, False]),
    (np.float32, np.bool_, [0.0, 0.1, -2.0]),
])
def test_cast_rounds_half_away_from_zero_and_saturates(pool, src, dst, values):
    a = np.array(values, dtype=src)
    out = np.empty(a.shape, dst)
    _engine.cast(pool, a, int(_code(src)), out, int(_code(dst)))
    expected = _reference_cast(a, dst)
    np.testing.assert_array_equal(out, expected)


def _code(np_type):
    from penstock.types import to_dali_type
    return to_dali_type(np_type)


def _reference_cast(a, dst):
    if np.dtype(dst) == np.bool_:
        return a != 0
    if np.dtype(dst).kind == "f":
        return a.astype(dst)
    info = np.iinfo(dst)
    x = a.astype(np.float64) if a.dtype.kind == "f" else a.astype(object)
    if a.dtype.kind == "f":
        x = np.where(np.isnan(x), 0, np.sign(x) * np.floor(np.abs(x) + 0.5))
    return np.clip(np.array(x, dtype=np.float64 if a.dtype.kind == "f" else object), info.min, info.max).astype(dst)


def test_cast_float16_round_trip(pool):
    a = np.array([0.0, 1.0, -2.5, 65504.0, 1e-6, 3.14159], np.float32)
    half = np.empty(a.shape, np.float16)
    _engine.cast(pool, a, int(T.FLOAT), half, int(T.FLOAT16))
    np.testing.assert_array_equal(half, a.astype(np.float16))
    back = np.empty(a.shape, np.float32)
    _engine.cast(pool, half, int(T.FLOAT16), back, int(T.FLOAT))
    np.testing.assert_array_equal(back, a.astype(np.float16).astype(np.float32))


def _binary(pool, op, a_list, b_list, dtype, out_dtype=None):
    from penstock.operators.arithmetic import BINARY_CODES
    a, sa, oa = packed(a_list)
    b, sb, ob = packed(b_list)
    n = max(len(a_list), len(b_list))
    out_shapes = np.array([np.broadcast_shapes(a_list[i % len(a_list)].shape, b_list[i % len(b_list)].shape)
                           for i in range(n)], np.int64).reshape(n, -1)
    vols = out_shapes.prod(axis=1)
    offsets = np.concatenate([[0], np.cumsum(vols)[:-1]]).astype(np.int64)
    out = np.empty(int(vols.sum()), out_dtype or dtype)
    _engine.binary(pool, BINARY_CODES[op], int(_code(dtype)), a.astype(dtype), sa, oa, b.astype(dtype), sb, ob,
                   out, out_shapes, offsets)
    return [out[o:o + v].reshape(s) for o, v, s in zip(offsets, vols, out_shapes)]


def test_binary_broadcasts_per_sample_like_numpy(pool):
    rng = np.random.default_rng(1)
    a = [rng.random((4, 5, 3), np.float32), rng.random((2, 7, 3), np.float32)]
    b = [rng.random((1, 3), np.float32), rng.random((7, 1), np.float32)]  # same ndim within a batch
    for got, x, y in zip(_binary(pool, "mul", a, b, np.float32), a, b):
        np.testing.assert_allclose(got, x * y, rtol=1e-6)


def test_binary_large_samples_are_split_across_threads(pool):
    rng = np.random.default_rng(2)
    a = [rng.integers(0, 255, (300, 400, 3)).astype(np.uint8) for _ in range(3)]
    b = [np.array([7], np.uint8)]
    for got, x in zip(_binary(pool, "add", a, b, np.uint8), a):
        np.testing.assert_array_equal(got, (x.astype(np.int64) + 7) % 256)


@pytest.mark.parametrize("op,expected", [
    ("floordiv", lambda x, y: np.trunc(x / y)), ("mod", lambda x, y: np.fmod(x, y)),
])
def test_integer_division_truncates_like_c(pool, op, expected):
    x = np.array([-7, 7, -7, 7, 9], np.int32)
    y = np.array([2, -2, -2, 2, 3], np.int32)
    got = _binary(pool, op, [x], [y], np.int32)[0]
    np.testing.assert_array_equal(got, expected(x, y).astype(np.int32))


def test_integer_division_by_zero_does_not_crash(pool):
    got = _binary(pool, "floordiv", [np.array([5, -5, np.iinfo(np.int32).min], np.int32)],
                  [np.array([0, 0, -1], np.int32)], np.int32)[0]
    assert got[0] == 0 and got[1] == 0 and got[2] == np.iinfo(np.int32).min  # wraps like the other ops


def test_comparison_outputs_bool(pool):
    x = np.array([1, 5, 3], np.int16)
    y = np.array([2, 5, 1], np.int16)
    got = _binary(pool, "le", [x], [y], np.int16, np.bool_)[0]
    np.testing.assert_array_equal(got, x <= y)


def test_unary_math_matches_numpy(pool):
    from penstock.operators.arithmetic import UNARY_CODES
    x = np.linspace(0.1, 4, 1000).astype(np.float32)
    for name, ref in [("sqrt", np.sqrt), ("log", np.log), ("exp", np.exp), ("sin", np.sin), ("floor", np.floor)]:
        out = np.empty_like(x)
        _engine.unary(pool, UNARY_CODES[name], int(T.FLOAT), x, out)
        np.testing.assert_allclose(out, ref(x), rtol=1e-6)


def test_transpose_permutes_every_sample(pool):
    rng = np.random.default_rng(3)
    samples = [rng.integers(0, 100, (2, 3, 4)).astype(np.int16), rng.integers(0, 100, (5, 1, 2)).astype(np.int16)]
    buf, shapes, offsets = packed(samples)
    perm = [2, 0, 1]
    out_shapes = shapes[:, perm].copy()
    out = np.empty_like(buf)
    _engine.transpose(pool, buf, shapes, offsets, perm, out, out_shapes, offsets)
    for s, o, vol, shape in zip(samples, offsets, out_shapes.prod(axis=1), out_shapes):
        np.testing.assert_array_equal(out[o:o + vol].reshape(shape), s.transpose(perm))


def test_concat_joins_along_an_axis(pool):
    a = [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4, dtype=np.float32).reshape(2, 2)]
    b = [np.full((2, 1), 9, np.float32), np.full((2, 3), 7, np.float32)]
    ba, sa, oa = packed(a)
    bb, sb, ob = packed(b)
    out_shapes = np.array([[2, 4], [2, 5]], np.int64)
    offsets = np.array([0, 8], np.int64)
    out = np.empty(18, np.float32)
    _engine.concat(pool, [ba, bb], [sa, sb], [oa, ob], 1, out, out_shapes, offsets)
    np.testing.assert_array_equal(out[:8].reshape(2, 4), np.concatenate([a[0], b[0]], axis=1))
    np.testing.assert_array_equal(out[8:].reshape(2, 5), np.concatenate([a[1], b[1]], axis=1))


def test_batch_view_rejects_samples_outside_the_buffer(pool):
    buf = np.zeros(4, np.float32)
    with pytest.raises(IndexError):
        _engine.transpose(pool, buf, np.array([[2, 3]], np.int64), np.array([0], np.int64), [1, 0],
                          np.zeros(6, np.float32), np.array([[3, 2]], np.int64), np.array([0], np.int64))


def test_read_files_packs_contents_and_names_the_missing_file(pool, tmp_path):
    paths = []
    for i, content in enumerate([b"abc", b"", b"0123456789"]):
        p = tmp_path / f"f{i}"
        p.write_bytes(content)
        paths.append(str(p))
    buf, sizes = _engine.read_files(pool, paths)
    assert sizes.tolist() == [3, 0, 10]
    assert bytes(buf) == b"abc0123456789"
    with pytest.raises(_engine.SampleError) as info:
        _engine.read_files(pool, paths + [str(tmp_path / "missing.jpg")])
    message, index = info.value.args
    assert index == 3 and "missing.jpg" in message
    with pytest.raises(_engine.SampleError):
        _engine.read_files(pool, [str(tmp_path)])  # a directory is not a file


@pytest.mark.parametrize("shapes", [[[2, 3, 4], [1, 5, 1], [0, 2, 2], [7, 1, 3]], [[5], [0], [9]], [[], [], []],
                                    np.zeros((0, 3), np.int64)])
def test_volumes_and_packed_offsets_are_numpys(shapes):
    shapes = np.asarray(shapes, np.int64)
    volumes = shapes.prod(axis=1)
    assert _engine.shape_volumes(shapes).tolist() == volumes.tolist()
    assert _engine.packed_offsets(shapes).tolist() == (np.cumsum(volumes) - volumes).tolist()
    # a column slice (not contiguous) and int32 shapes are taken as they are
    assert _engine.packed_offsets(shapes[:, :1]).tolist() == (np.cumsum(shapes[:, :1].prod(axis=1)) -
                                                              shapes[:, :1].prod(axis=1)).tolist()
    assert _engine.shape_volumes(shapes.astype(np.int32)).tolist() == volumes.tolist()


def test_packed_offsets_refuses_shapes_that_are_not_a_table():
    with pytest.raises(ValueError, match="packed_offsets: shapes must be"):
        _engine.packed_offsets(np.arange(3))


def test_image_planes_are_frames_and_channel_first_channels_in_both_batches():
    # FCHW: sample 0 has 2 frames of 3 channels, sample 1 none, sample 2 one frame of 1 channel
    shapes = np.array([[2, 3, 4, 5], [0, 3, 4, 5], [1, 1, 2, 2]], np.int64)
    sample, plane_shapes, offsets, out_offsets = _engine.image_planes(
        shapes, np.array([10, 130, 130], np.int64), np.array([0, 120, 120], np.int64), 0, 1, 2, 3)
    assert sample.tolist() == [0] * 6 + [2]
    assert plane_shapes.tolist() == [[4, 5, 1]] * 6 + [[2, 2, 1]]
    assert offsets.tolist() == [10 + 20 * j for j in range(6)] + [130]
    assert out_offsets.tolist() == [20 * j for j in range(6)] + [120]
    # HWC: a plane per sample, channels kept
    sample, plane_shapes, offsets, _ = _engine.image_planes(
        np.array([[4, 5, 3], [2, 2, 3]], np.int64), np.array([0, 60], np.int64), np.array([0, 60], np.int64),
        -1, 2, 0, 1)
    assert sample.tolist() == [0, 1] and plane_shapes.tolist() == [[4, 5, 3], [2, 2, 3]]
    assert offsets.tolist() == [0, 60]
    with pytest.raises(ValueError, match="image_planes: the images need a height and a width"):
        _engine.image_planes(shapes, np.zeros(3, np.int64), np.zeros(3, np.int64), 0, 1, -1, 3)


def test_a_call_without_the_gil_lets_go_of_its_arrays(pool):
    """A kernel's array arguments are dropped where it returns, still without the GIL: the references
    go at the next array conversion instead of taking the GIL back there. None is kept for good."""
    import sys
    buf, shapes, offsets = np.zeros(64, np.uint8), np.array([[32], [32]]), np.array([0, 32])
    before = [sys.getrefcount(a) for a in (buf, shapes, offsets)]
    for _ in range(5):
        _engine.verify_jpegs(pool, buf, shapes, offsets)  # not JPEGs: nothing to read through
    _engine.shape_volumes(np.ones((1, 1), np.int64))
    assert [sys.getrefcount(a) for a in (buf, shapes, offsets)] == before


def test_with_columns_and_regions_are_numpys():
    shapes = np.arange(24, dtype=np.int64).reshape(8, 3) + 1
    expected = shapes.copy()
    expected[:, 0:2] = [176, 224]
    np.testing.assert_array_equal(_engine.with_columns(shapes, 0, np.array([176, 224])), expected)
    per_row = np.arange(8, dtype=np.int64).reshape(8, 1) * 10
    expected = shapes.copy()
    expected[:, 2:3] = per_row
    np.testing.assert_array_equal(_engine.with_columns(shapes, 2, per_row), expected)
    regions = _engine.whole_regions(shapes, 1, 2)
    assert regions.dtype == np.float64
    np.testing.assert_array_equal(regions, np.concatenate([np.zeros((8, 2)), shapes[:, 1:3]], axis=1))
    with pytest.raises(ValueError, match="columns 2..4"):
        _engine.with_columns(shapes, 2, np.array([1, 2]))
    with pytest.raises(ValueError, match="3 rows of values for 8"):
        _engine.with_columns(shapes, 0, np.ones((3, 2), np.int64))
    with pytest.raises(ValueError, match="columns"):
        _engine.whole_regions(shapes, 2, 2)
    shapes5 = np.array([[2, 3, 4, 5, 6], [1, 7, 8, 9, 1]], np.int64)
    np.testing.assert_array_equal(_engine.outer_spatial_channels(shapes5, 2, 2), [[6, 4, 5, 6], [7, 8, 9, 1]])
    np.testing.assert_array_equal(_engine.outer_spatial_channels(shapes5[:, :2], 0, 2), [[1, 2, 3, 1], [1, 1, 7, 1]])
    zeros = _engine.zero_table(3, 5)
    assert zeros.dtype == np.int64 and zeros.shape == (3, 5) and not zeros.any() and zeros.flags.writeable
    windows = np.array([[1, 2, 30, 40], [0, 5, 7, 1]], np.int64)  # anchors (y, x), then sizes (h, w)
    regions = _engine.window_regions(windows)
    assert regions.dtype == np.float64 and regions.tolist() == [[1, 2, 31, 42], [0, 5, 7, 6]]
    with pytest.raises(ValueError, match="window_regions"):
        _engine.window_regions(np.zeros((2, 3), np.int64))


def test_take_rows_and_first_differing_row_are_numpys():
    table = np.arange(30, dtype=np.int64).reshape(10, 3)
    rows = np.array([9, 0, 3, 3, -1])
    np.testing.assert_array_equal(_engine.take_rows(table, rows), table[rows])
    expected, values = table.copy(), -np.arange(6, dtype=np.int64).reshape(2, 3)
    expected[[2, -3]] = values
    np.testing.assert_array_equal(_engine.put_rows(table, np.array([2, -3]), values), expected)
    assert table[2].tolist() == [6, 7, 8]  # a copy: the table itself is left as it was
    with pytest.raises(IndexError, match="row 10 is out of bounds for 10"):
        _engine.put_rows(table, np.array([10]), values[:1])
    with pytest.raises(ValueError, match="put_rows"):
        _engine.put_rows(table, np.array([1, 2]), values[:1])
    np.testing.assert_array_equal(_engine.take_rows(table[:, 0].copy(), rows), table[rows, 0])
    assert _engine.take_rows(table, np.zeros(0, np.int64)).shape == (0, 3)
    with pytest.raises(IndexError, match="row 10 is out of bounds for 10"):
        _engine.take_rows(table, np.array([1, 10]))
    other = table.copy()
    assert _engine.first_differing_row(table, other) == -1
    other[7, 2] += 1
    assert _engine.first_differing_row(table, other) == 7
    with pytest.raises(ValueError, match="alike"):
        _engine.first_differing_row(table, table[:5])


def test_gather_descriptors_hold_each_windows_copy():
    windows = np.array([[1, 2, 3, 4], [0, 0, 5, 6]])
    desc = _engine.image_gather_descriptors(np.array([2**63 + 5, 16], np.uint64), np.array([30, 18]), windows,
                                            np.array([3, 1]), np.array([1, 0]), np.array([100, 200]))
    np.testing.assert_array_equal(desc, [[np.array(2**63 + 5, np.uint64).view(np.int64), 30, 1, 2, 100, 4, 36, 3, 1, 0],
                                         [16, 18, 0, 0, 200, 6, 30, 1, 0, 0]])
    with pytest.raises(ValueError, match="must be \\[N\\]"):
        _engine.image_gather_descriptors(np.zeros(2, np.uint64), np.zeros(3, np.int64), windows, np.ones(2, np.int64),
                                         np.zeros(2, np.int64), np.zeros(2, np.int64))


def test_packed_parts_lie_at_aligned_offsets_with_zeroed_gaps():
    parts = [np.arange(5, dtype=np.int64), np.zeros(0, np.float32), np.array([1.5, -2.0], np.float32),
             np.array([True, False, True])]
    packed, offsets = _engine.pack_parts(parts, 16)
    assert packed.dtype == np.uint8 and offsets.tolist() == [0, 48, 48, 64] and len(packed) == 80
    for part, at in zip(parts, offsets.tolist()):
        np.testing.assert_array_equal(packed[at:at + part.nbytes].view(part.dtype), part)
    assert not packed[40:48].any() and not packed[56:64].any() and not packed[67:].any()
    with pytest.raises(ValueError, match="part 0 is not contiguous"):
        _engine.pack_parts([np.arange(10)[::2]], 16)
