"""readers.numpy: every dtype, Fortran order, regions of interest, file discovery, sharding; on the GPU;
decoders.numpy."""
import io
import os

import numpy as np
import pytest

from penstock import fn, pipeline_def, types

from _util import run_es


def _run(batch, iters=1, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=3)
    def p():
        return fn.readers.numpy(name="R", **kw)

    pipe = p()
    out = []
    for _ in range(iters):
        (data,) = pipe.run()
        out += [np.array(data.at(i)) for i in range(len(data))]
    return out, pipe


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32,
                                   np.int64, np.float16, np.float32, np.float64, np.bool_])
def test_every_dtype_round_trips(tmp_path, dtype):
    rng = np.random.default_rng(0)
    arrays = [(rng.random((3, 4 + i)) * 100).astype(dtype) for i in range(3)]
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"a{i}.npy", a)
    got, _ = _run(3, file_root=str(tmp_path))
    for g, a in zip(got, arrays):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(g, a)


def test_fortran_order_comes_out_in_c_order(tmp_path):
    a = np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    np.save(tmp_path / "f.npy", a)
    (g,), _ = _run(1, files=[str(tmp_path / "f.npy")])
    np.testing.assert_array_equal(g, np.ascontiguousarray(a))


def test_scalar_and_empty_arrays(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((0, 3), np.float32))
    np.save(tmp_path / "b.npy", np.ones((2, 3), np.float32))
    got, _ = _run(2, file_root=str(tmp_path))
    assert got[0].shape == (0, 3) and got[1].shape == (2, 3)


def test_file_filter_recurses_and_sorts(tmp_path):
    (tmp_path / "sub").mkdir()
    for name, v in (("b.npy", 2), ("a.npy", 1), ("sub/c.npy", 3), ("skip.txt", 9)):
        with open(tmp_path / name, "wb") as f:
            np.save(f, np.array([v], np.int32))
    got, pipe = _run(3, file_root=str(tmp_path))
    assert [int(g[0]) for g in got] == [1, 2, 3]
    assert pipe.reader_meta("R")["epoch_size"] == 3
    got, _ = _run(1, file_root=str(tmp_path), file_filter="b*")
    assert int(got[0][0]) == 2


def test_file_list_relative_to_its_directory(tmp_path):
    for i in range(2):
        np.save(tmp_path / f"x{i}.npy", np.full(2, i, np.int64))
    (tmp_path / "list.txt").write_text("x1.npy\nx0.npy\n")
    got, _ = _run(2, file_list=str(tmp_path / "list.txt"))
    assert [int(g[0]) for g in got] == [1, 0]


def test_roi_absolute_relative_and_axes(tmp_path):
    a = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    np.save(tmp_path / "a.npy", a)
    f = [str(tmp_path / "a.npy")]
    (g,), _ = _run(1, files=f, roi_start=[2, 3], roi_end=[5, 9])
    np.testing.assert_array_equal(g, a[2:5, 3:9])
    (g,), _ = _run(1, files=f, rel_roi_start=[0.25], rel_roi_shape=[0.5], roi_axes=[1])
    np.testing.assert_array_equal(g, a[:, 3:9])
    (g,), _ = _run(1, files=f, roi_start=[1], roi_shape=[4], roi_axes=[0])
    np.testing.assert_array_equal(g, a[1:5])


def test_roi_on_fortran_array(tmp_path):
    a = np.asfortranarray(np.arange(6 * 7, dtype=np.int16).reshape(6, 7))
    np.save(tmp_path / "a.npy", a)
    (g,), _ = _run(1, files=[str(tmp_path / "a.npy")], roi_start=[1, 2], roi_end=[4, 6])
    np.testing.assert_array_equal(g, np.ascontiguousarray(a)[1:4, 2:6])


def test_out_of_bounds_policies(tmp_path):
    a = np.arange(16, dtype=np.uint8).reshape(4, 4) + 1
    np.save(tmp_path / "a.npy", a)
    f = [str(tmp_path / "a.npy")]
    with pytest.raises(RuntimeError, match="outside"):
        _run(1, files=f, roi_start=[-1, 0], roi_end=[2, 4])
    (g,), _ = _run(1, files=f, roi_start=[-1, 2], roi_end=[2, 6], out_of_bounds_policy="pad", fill_value=7)
    want = np.full((3, 4), 7, np.uint8)
    want[1:, :2] = a[:2, 2:]
    np.testing.assert_array_equal(g, want)
    (g,), _ = _run(1, files=f, roi_start=[-1, 2], roi_end=[2, 6], out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(g, a[0:2, 2:4])


def test_sharding_and_padding_follow_the_reader_contract(tmp_path):
    for i in range(5):
        np.save(tmp_path / f"{i}.npy", np.array([i], np.int32))
    got, pipe = _run(2, iters=2, file_root=str(tmp_path), num_shards=2, shard_id=1, pad_last_batch=True)
    # shard 1 of 5 is [2, 5): 2, 3, 4, then padded with its last sample to a whole batch
    assert [int(g[0]) for g in got] == [2, 3, 4, 4]
    meta = pipe.reader_meta("R")
    assert meta["epoch_size"] == 5 and meta["number_of_shards"] == 2


def test_shuffle_is_a_permutation_stream(tmp_path):
    for i in range(8):
        np.save(tmp_path / f"{i}.npy", np.array([i], np.int32))
    got, _ = _run(8, file_root=str(tmp_path), shuffle_after_epoch=True)
    assert sorted(int(g[0]) for g in got) == list(range(8))


def test_corrupt_and_mixed_files_are_named(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"not numpy at all")
    with pytest.raises(RuntimeError, match="bad.npy"):
        _run(1, files=[str(tmp_path / "bad.npy")])
    np.save(tmp_path / "a.npy", np.zeros(2, np.float32))
    np.save(tmp_path / "b.npy", np.zeros(2, np.int32))
    with pytest.raises(RuntimeError, match="same dtype"):
        _run(2, files=[str(tmp_path / "a.npy"), str(tmp_path / "b.npy")])
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(raw[:-3])
    with pytest.raises(RuntimeError, match="truncated"):
        _run(1, files=[str(tmp_path / "short.npy")])


def _edited_header(a, old: str, new: str) -> np.ndarray:
    """The .npy bytes of ``a`` with ``old`` replaced by ``new`` in the header (padded to its length)."""
    raw = bytearray(_npy_bytes(a))
    length = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + length].decode("latin-1").replace(old, new)
    header = header.rstrip(" \n")[:length - 1].ljust(length - 1) + "\n"
    raw[10:10 + length] = header.encode("latin-1")
    return np.frombuffer(bytes(raw), np.uint8)


def test_headers_found_by_fuzzing_are_refused_naming_the_file():
    """A shape whose volume overflows 64 bits is truncated data, not a small array; a dtype that is
    not text is quoted escaped (the error once failed to reach Python as UTF-8)."""
    overflowing = _edited_header(np.zeros(4, np.uint8), "(4,)", "(4294967296, 4294967296, 16)")
    with pytest.raises(RuntimeError, match="truncated: the header's shape promises more data"):
        run_es(lambda x: fn.decoders.numpy(x), [overflowing])
    not_text = _edited_header(np.zeros(4, np.uint8), "|u1", "|\xffq")
    with pytest.raises(RuntimeError, match=r"unsupported .npy dtype '\|\\xffq'"):
        run_es(lambda x: fn.decoders.numpy(x), [not_text])


def test_cached_headers_give_the_same_data(tmp_path):
    for i in range(3):
        np.save(tmp_path / f"{i}.npy", np.full((2, i + 1), i, np.float64))
    plain, _ = _run(3, iters=2, file_root=str(tmp_path))
    cached, _ = _run(3, iters=2, file_root=str(tmp_path), cache_header_information=True)
    for x, y in zip(plain, cached):
        np.testing.assert_array_equal(x, y)


def test_empty_directory_fails_at_build(tmp_path):
    with pytest.raises(RuntimeError, match="No files found"):
        _run(1, file_root=str(tmp_path))


def _npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return np.frombuffer(buf.getvalue(), np.uint8)


def test_decoders_numpy_gives_c_order_arrays():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.asfortranarray(np.arange(12, dtype=np.float32)
                                                                              .reshape(3, 4))]
    out, = run_es(lambda x: fn.decoders.numpy(x), [_npy_bytes(a) for a in arrays])
    for a, o in zip(arrays, [out.at(i) for i in range(2)]):
        np.testing.assert_array_equal(o, a)
        assert o.flags.c_contiguous


def test_decoders_numpy_converts_to_dtype_even_across_types():
    data = [_npy_bytes(np.array([2.5, -1.5, 300.7], np.float32)), _npy_bytes(np.array([7, -3, 1000], np.int16))]
    out, = run_es(lambda x: fn.decoders.numpy(x, dtype=types.UINT8), data)
    np.testing.assert_array_equal(out.at(0), [3, 0, 255])  # half away from zero, saturated (as DALI)
    np.testing.assert_array_equal(out.at(1), [7, 0, 255])
    with pytest.raises(RuntimeError, match="same data type"):
        run_es(lambda x: fn.decoders.numpy(x), data)
    with pytest.raises(RuntimeError, match="truncated|bad magic"):
        run_es(lambda x: fn.decoders.numpy(x), [data[0][:-4], np.frombuffer(b"garbage!garbage!", np.uint8)])


@pytest.mark.gpu
def test_gpu_reader_gives_the_cpu_reader_arrays(tmp_path):
    pytest.importorskip("cupy")
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    for k in range(4):
        np.save(tmp_path / f"{k}.npy", np.arange(k * 10, k * 10 + 12, dtype=np.int32).reshape(3, 4))

    def read(device):
        @pipeline_def(batch_size=2, num_threads=2, device_id=0)
        def pipe():
            return fn.readers.numpy(file_root=str(tmp_path), device=device, roi_start=[1], roi_shape=[2],
                                    roi_axes=[1])
        out = pipe().run()[0]
        return [np.asarray(out.as_cpu().at(i)) for i in range(2)]
    for c, g in zip(read("cpu"), read("gpu")):
        np.testing.assert_array_equal(g, c)
