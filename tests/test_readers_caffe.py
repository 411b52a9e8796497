"""readers.caffe and readers.caffe2 on LMDB databases written here (records encoded by the small protobuf
writer below): outputs, label types, argument errors, corrupt records, several databases, sharding,
shuffling and checkpoints. tests/differential/test_db_readers.py compares the same with DALI 2.4."""
import io
import os
import re
import struct
import threading

import numpy as np
import pytest

import penstock
from penstock import fn, pipeline_def

lmdb = pytest.importorskip("lmdb")


# ---- protobuf's wire format, as much as Caffe's Datum and Caffe2's TensorProtos need
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


def _varint_field(number: int, v: int) -> bytes:
    return _field(number, 0, _varint(v))


def _bytes_field(number: int, b: bytes) -> bytes:
    return _field(number, 2, _varint(len(b)) + b)


def datum(data: bytes | None = None, label: int | None = None, channels: int | None = None,
          height: int | None = None, width: int | None = None, encoded: bool | None = None,
          float_data: tuple = ()) -> bytes:
    """A caffe.Datum record."""
    out = b"".join(_varint_field(n, v) for n, v in ((1, channels), (2, height), (3, width)) if v is not None)
    if data is not None:
        out += _bytes_field(4, data)
    if label is not None:
        out += _varint_field(5, label)
    out += b"".join(_field(6, 5, struct.pack("<f", f)) for f in float_data)
    if encoded is not None:
        out += _varint_field(7, int(encoded))
    return out


# caffe2.TensorProto.DataType
FLOAT, INT32, BYTE, STRING, INT64, DOUBLE = 1, 2, 3, 4, 10, 13


def tensor(data_type: int | None = None, dims: tuple = (), floats=None, int32s=None, byte_data=None, strings=(),
           int64s=None, doubles=None, packed: bool = True) -> bytes:
    """A caffe2.TensorProto (repeated numbers packed, or one field each)."""
    out = b"".join(_varint_field(1, d) for d in dims)
    if data_type is not None:
        out += _varint_field(2, data_type)

    def repeated(number: int, values, wire: int, encode) -> bytes:
        if values is None:
            return b""
        if packed:
            return _bytes_field(number, b"".join(encode(v) for v in values))
        return b"".join(_field(number, wire, encode(v)) for v in values)

    out += repeated(3, floats, 5, lambda v: struct.pack("<f", v))
    out += repeated(4, int32s, 0, _varint)
    if byte_data is not None:
        out += _bytes_field(5, byte_data)
    out += b"".join(_bytes_field(6, s) for s in strings)
    out += repeated(9, doubles, 1, lambda v: struct.pack("<d", v))
    out += repeated(10, int64s, 0, _varint)
    return out


def protos(*tensors: bytes) -> bytes:
    """A caffe2.TensorProtos record."""
    return b"".join(_bytes_field(1, t) for t in tensors)


def write_lmdb(path: str, records: list, keys: list | None = None) -> str:
    env = lmdb.open(path, map_size=1 << 24)
    with env.begin(write=True) as txn:
        for k, r in enumerate(records):
            txn.put(keys[k] if keys else b"%08d" % k, r)
    env.close()
    return path


def png(seed: int, h: int = 6, w: int = 5) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), np.uint8)).save(buf, "PNG")
    return buf.getvalue()


RAW = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)   # CHW: Caffe's raw pixels

# the records of the databases both test files read: images (encoded and raw) and labels, some missing
CAFFE_RECORDS = [datum(png(k), label=k * 3 - 4, channels=3, height=6, width=5, encoded=True) for k in range(5)] + [
    datum(RAW.tobytes(), label=-7, channels=2, height=3, width=4), datum(label=11), datum(png(9)), b""]

CAFFE2_IMAGE_RECORDS = [protos(tensor(STRING, strings=[png(k)]), tensor(INT32, int32s=[k])) for k in range(4)] + [
    protos(tensor(BYTE, dims=(2, 3), byte_data=bytes(range(6))), tensor(INT32, int32s=[-3])),
    protos(tensor(BYTE, dims=(2, 2, 3), byte_data=bytes(range(50, 62)), packed=False),
           tensor(INT32, int32s=[9], packed=False))]


def caffe2_records(label: bytes, extra: tuple = ()) -> list:
    """Raw-image records with a label tensor (and extra tensors) of each record's own values."""
    return [protos(tensor(BYTE, dims=(1, k + 1), byte_data=bytes(range(k + 1))), label, *extra) for k in range(3)]


def run(reader, batch_size=2, iterations=4, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=11)
    def pipe():
        out = reader(**kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    return p, [[[np.array(o[i]) for i in range(len(o))] for o in p.run()] for _ in range(iterations)]


@pytest.fixture(scope="module")
def caffe_db(tmp_path_factory):
    return write_lmdb(str(tmp_path_factory.mktemp("caffe") / "db"), CAFFE_RECORDS)


def test_caffe_outputs_the_datums_data_and_label_as_stored(caffe_db):
    p, runs = run(fn.readers.caffe, batch_size=9, iterations=1, path=[caffe_db])
    images, labels = runs[0]
    assert [bytes(im) for im in images[:5]] == [png(k) for k in range(5)]
    assert np.array_equal(images[5], RAW.ravel())  # raw pixels flat, as the Datum holds them (CHW)
    assert [im.size for im in images[6:]] == [0, len(png(9)), 0]
    assert [lab.tolist() for lab in labels] == [[-4], [-1], [2], [5], [8], [-7], [11], [], []]
    out = p.run()
    assert out[0].dtype == penstock.types.UINT8 and out[1].dtype == penstock.types.INT32
    assert out[0][0].source_info() == f"{caffe_db} at key 00000000"


def test_caffe_image_and_label_available_choose_the_outputs(caffe_db):
    _, runs = run(fn.readers.caffe, batch_size=3, iterations=1, path=[caffe_db], image_available=False)
    assert len(runs[0]) == 1 and [x.tolist() for x in runs[0][0]] == [[-4], [-1], [2]]
    _, runs = run(fn.readers.caffe, batch_size=3, iterations=1, path=[caffe_db], label_available=False)
    assert len(runs[0]) == 1 and bytes(runs[0][0][1]) == png(1)


def test_caffe_reads_several_databases_in_turn_and_each_in_key_order(tmp_path, caffe_db):
    other = write_lmdb(str(tmp_path / "b"), [datum(b"z", label=2), datum(b"y", label=1)], keys=[b"k2", b"k1"])
    _, runs = run(fn.readers.caffe, batch_size=11, iterations=1, path=[caffe_db, other])
    assert [bytes(x) for x in runs[0][0][9:]] == [b"y", b"z"]
    assert [x.tolist() for x in runs[0][1][9:]] == [[1], [2]]


def test_caffe_shards_shuffles_and_resumes_from_a_checkpoint(caffe_db):
    kwargs = dict(path=[caffe_db], num_shards=2, shard_id=1, random_shuffle=True, initial_fill=3)
    _, whole = run(fn.readers.caffe, batch_size=2, iterations=6, **kwargs)
    labels = [x.tolist() for it in whole for x in it[1]]
    shard = sorted(map(str, labels[:5]))
    assert shard == sorted(map(str, [[8], [-7], [11], [], []]))  # shard 1 of 2 over 9: samples 4..8

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=11, enable_checkpointing=True)
    def pipe():
        return tuple(fn.readers.caffe(**kwargs))

    p = pipe()
    p.build()
    for _ in range(3):
        p.run()
    state = p.checkpoint()
    q = pipe(checkpoint=state)
    q.build()
    rest = [[np.array(x).tolist() for x in q.run()[1]] for _ in range(3)]
    assert rest == [[x.tolist() for x in it[1]] for it in whole[3:]]


def test_caffe_errors_name_the_database_and_key(tmp_path, caffe_db):
    bad = write_lmdb(str(tmp_path / "bad"), [b"\xff\xff\xff"], keys=[b"x"])
    with pytest.raises(RuntimeError, match=f"Error while parsing Caffe file: {bad} at key x"):
        run(fn.readers.caffe, batch_size=1, iterations=1, path=[bad])
    with pytest.raises(RuntimeError, match="No such file or directory, with file: .*missing"):
        run(fn.readers.caffe, path=[str(tmp_path / "missing")])
    with pytest.raises(RuntimeError, match="Not a directory"):
        run(fn.readers.caffe, path=[os.path.join(caffe_db, "data.mdb")])
    with pytest.raises(RuntimeError, match="names no LMDB database"):
        run(fn.readers.caffe, path=[])


def test_two_pipelines_share_a_database(caffe_db):
    p1, a = run(fn.readers.caffe, batch_size=2, iterations=1, path=[caffe_db])
    p2, b = run(fn.readers.caffe, batch_size=2, iterations=1, path=[caffe_db])
    assert [x.tolist() for x in a[0][1]] == [x.tolist() for x in b[0][1]]
    del p1
    assert [np.array(x).tolist() for x in p2.run()[1]] == [[2], [5]]


def _lmdb_reader(pipe):
    """The pipeline's LMDB reader, once the pipeline and its read-ahead thread stopped: the test's
    threads are the only ones that read."""
    from penstock.operators import readers_caffe
    reader = next(op for op in pipe._ops if isinstance(op, readers_caffe._LmdbReader))
    pipe._executor.shutdown()
    reader.stop_reading()
    if reader._io is not None:
        reader._io.join()
    return reader


def test_a_close_from_another_thread_waits_for_the_read_in_progress(tmp_path):
    # the pipeline's finalizer closing the reader while its read-ahead thread is inside a transaction:
    # closing the environment under it crashed the process (a segfault, now and then, in the S3 tests)
    p, _ = run(fn.readers.caffe, batch_size=2, iterations=1, path=[write_lmdb(str(tmp_path / "db"), CAFFE_RECORDS)])
    reader = _lmdb_reader(p)
    inside, go_on, out = threading.Event(), threading.Event(), []
    values = reader._values

    def slow_values(indices):
        inside.set()
        go_on.wait(10)
        return values(indices)

    reader._values = slow_values
    reading = threading.Thread(target=lambda: out.append(reader.records(np.array([0, 1]))))
    reading.start()
    assert inside.wait(10)
    closing = threading.Thread(target=reader.close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive() and reader._envs  # the close waits for the read
    go_on.set()
    reading.join(10)
    closing.join(10)
    assert not closing.is_alive() and reader._envs == []
    blob, starts, sizes = out[0]
    assert sizes.tolist() == [len(CAFFE_RECORDS[0]), len(CAFFE_RECORDS[1])]
    with pytest.raises(RuntimeError, match="the reader was closed"):
        reader.records(np.array([0]))


def test_a_close_inside_a_read_on_its_own_thread_waits_for_the_reads_end(tmp_path):
    # the garbage collector may finalize the pipeline on the reading thread, inside the read
    p, _ = run(fn.readers.caffe, batch_size=2, iterations=1, path=[write_lmdb(str(tmp_path / "db"), CAFFE_RECORDS)])
    reader = _lmdb_reader(p)
    values = reader._values

    def values_then_closed(indices):
        found = values(indices)
        reader.close()
        assert reader._envs  # still open: the transaction's values are in use
        return found

    reader._values = values_then_closed
    blob, _, sizes = reader.records(np.array([2]))
    assert reader._envs == [] and blob == CAFFE_RECORDS[2] and sizes.tolist() == [len(CAFFE_RECORDS[2])]


def test_caffe2_images_encoded_and_raw_with_single_labels(tmp_path):
    db = write_lmdb(str(tmp_path / "c2"), CAFFE2_IMAGE_RECORDS)
    _, runs = run(fn.readers.caffe2, batch_size=4, iterations=1, path=[db])
    images, labels = runs[0]
    assert [bytes(x) for x in images] == [png(k) for k in range(4)]
    assert [x.tolist() for x in labels] == [[0], [1], [2], [3]]
    _, runs = run(fn.readers.caffe2, batch_size=2, iterations=3, path=[db])
    raw, labels = runs[2]
    assert raw[0].shape == (2, 3, 1) and raw[0].ravel().tolist() == list(range(6))   # (H, W) -> HWC, C = 1
    assert raw[1].shape == (2, 2, 3) and raw[1].ravel().tolist() == list(range(50, 62))
    assert [x.tolist() for x in labels] == [[-3], [9]] and labels[0].dtype == np.int32


@pytest.mark.parametrize("label_type, label, extra, want, dtype", [
    (0, tensor(FLOAT, floats=[2.5]), (), [[2.5]] * 3, np.float32),
    (2, tensor(INT32, int32s=[4, 0, 5]), (), [[4, 0, 5]] * 3, np.int32),
    (2, tensor(FLOAT, floats=[0.5, 0.25]), (), [[0.5, 0.25]] * 3, np.float32),
    (1, tensor(INT32, int32s=[3, 1]), (), [[0, 1, 0, 1, 0]] * 3, np.int32),
    (3, tensor(INT32, int32s=[4, 0]), (tensor(FLOAT, floats=[0.75, 0.5]),), [[0.5, 0, 0, 0, 0.75]] * 3, np.float32),
])
def test_caffe2_label_types(tmp_path, label_type, label, extra, want, dtype):
    db = write_lmdb(str(tmp_path / "c2"), caffe2_records(label, extra))
    _, runs = run(fn.readers.caffe2, batch_size=3, iterations=1, path=[db], label_type=label_type, num_labels=5)
    assert [x.tolist() for x in runs[0][1]] == want and runs[0][1][0].dtype == dtype


def test_caffe2_additional_inputs_bbox_and_no_label(tmp_path):
    extra = (tensor(FLOAT, dims=(2,), floats=[1.5, 2.5]), tensor(INT64, int64s=[-5, 2 ** 40]),
             tensor(INT32, int32s=[1, 2, 3, 4]))
    db = write_lmdb(str(tmp_path / "c2"), [protos(tensor(INT32, int32s=[7]), *extra)])
    _, runs = run(fn.readers.caffe2, batch_size=1, iterations=1, path=[db], image_available=False,
                  additional_inputs=2, bbox=True)
    label, floats, ints, box = (x[0] for x in runs[0])
    assert label.tolist() == [7] and floats.tolist() == [1.5, 2.5] and ints.tolist() == [-5, 2 ** 40]
    assert box.tolist() == [1, 2, 3, 4] and ints.dtype == np.int64 and box.dtype == np.int32
    _, runs = run(fn.readers.caffe2, batch_size=1, iterations=1, path=[db], image_available=False)
    assert len(runs[0]) == 1 and runs[0][0][0].tolist() == [7]  # the tensors after the label are not read
    db2 = write_lmdb(str(tmp_path / "c2b"), [protos(tensor(STRING, strings=[b"abc", b"de"]))])
    _, runs = run(fn.readers.caffe2, batch_size=1, iterations=1, path=[db2], label_type=4)
    assert len(runs[0]) == 1 and bytes(runs[0][0][0]) == b"abc"


@pytest.mark.parametrize("record, kwargs, words", [
    (protos(tensor(BYTE, dims=(2, 4), byte_data=b"abcdef"), tensor(INT32, int32s=[1])), {},
     "Image data size mismatch: 6 (expected: 8)"),
    (protos(tensor(FLOAT, dims=(2, 2), floats=[1, 2, 3, 4]), tensor(INT32, int32s=[1])), {}, "image tensor has type"),
    (protos(tensor(STRING), tensor(INT32, int32s=[1])), {}, "holds no string"),
    (protos(tensor(STRING, strings=[b"x"]), tensor(INT64, int64s=[1])), {}, "Unsupported label data type"),
    (protos(tensor(STRING, strings=[b"x"]), tensor(INT32, int32s=[1, 2])), {}, "holds 2 values, not 1"),
    (protos(tensor(STRING, strings=[b"x"])), {}, "its label needs tensor 2"),
    (protos(tensor(STRING, strings=[b"x"]), tensor(INT32, int32s=[1]), tensor(DOUBLE, doubles=[1.0])),
     {"additional_inputs": 1}, "Unsupported data type in additional proto"),
    (protos(tensor(STRING, strings=[b"x"]), tensor(INT32, int32s=[1])), {"bbox": True},
     "its bounding box would be tensor 3"),
    (protos(tensor(STRING, strings=[b"x"]), tensor(INT32, int32s=[1, 6])), {"label_type": 1, "num_labels": 5},
     "Label index out of bounds: 6 (num_labels: 5)"),
    (b"\x0a\x05ab", {}, "not a Caffe2 TensorProtos record"),
])
def test_caffe2_bad_records_raise_naming_the_record(tmp_path, record, kwargs, words):
    db = write_lmdb(str(tmp_path / "c2"), [record])
    with pytest.raises(RuntimeError, match=f"{db} at key 00000000: .*{re.escape(words)}"):
        run(fn.readers.caffe2, batch_size=1, iterations=1, path=[db], **kwargs)


def test_caffe2_argument_ranges(tmp_path):
    db = write_lmdb(str(tmp_path / "c2"), caffe2_records(tensor(INT32, int32s=[1])))
    for kwargs in ({"label_type": 5}, {"label_type": -1}, {"additional_inputs": -1}, {"num_labels": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            run(fn.readers.caffe2, path=[db], **kwargs)


def test_legacy_names_warn_and_read(caffe_db):
    with pytest.warns(DeprecationWarning, match="readers.caffe"):
        _, runs = run(fn.caffe_reader, batch_size=1, iterations=1, path=[caffe_db])
    assert runs[0][1][0].tolist() == [-4]
