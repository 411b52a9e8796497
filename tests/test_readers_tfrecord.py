"""readers.tfrecord: TFRecords written by an independent minimal protobuf encoder and CRC32C in
plain Python (examples/make_sample_data.py), and by TensorFlow where it is installed."""
import os
import subprocess
import sys

import numpy as np
import pytest

import penstock.tfrecord as tfrec
from penstock import fn, ops, pipeline_def

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import tf_example, tfrecord_record  # noqa: E402


def _write(path, records):
    with open(path, "wb") as f:
        for rec in records:
            f.write(tfrecord_record(tf_example(rec)))


def _records(n, offset=0):
    rng = np.random.default_rng(offset)
    return [{"image": bytes(rng.integers(0, 256, 5 + i, dtype=np.uint8)), "label": [i + offset],
             "bbox": rng.random(4 * (i % 3 + 1)).astype(np.float32).tolist(),
             "size": [10 + i, 20 + i]} for i in range(n)]


FEATURES = {"image": tfrec.FixedLenFeature((), tfrec.string, ""),
            "label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            "bbox": tfrec.VarLenFeature(tfrec.float32, 0.0),
            "size": tfrec.FixedLenFeature([2], tfrec.int64, 0)}


@pytest.fixture
def shards(tmp_path):
    paths, idx, recs = [], [], []
    for k in range(2):
        p, i = tmp_path / f"s{k}.tfrecord", tmp_path / f"s{k}.idx"
        r = _records(3 + k, offset=10 * k)
        _write(p, r)
        assert tfrec.make_index(str(p), str(i)) == len(r)
        paths.append(str(p))
        idx.append(str(i))
        recs += r
    return paths, idx, recs


def _read(paths, idx, batch, features=FEATURES, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        out = fn.readers.tfrecord(path=paths, index_path=idx, features=features, name="R", **kw)
        return tuple(out[k] for k in features)

    pipe = p()
    return pipe.run(), pipe


def test_features_of_every_kind(shards):
    paths, idx, recs = shards
    (image, label, bbox, size), pipe = _read(paths, idx, len(recs))
    assert pipe.reader_meta("R")["epoch_size"] == len(recs)
    for i, r in enumerate(recs):
        assert np.array(image.at(i)).tobytes() == r["image"]
        assert label.at(i).dtype == np.int64 and label.at(i).tolist() == r["label"]
        np.testing.assert_array_equal(bbox.at(i), np.float32(r["bbox"]))
        assert size.at(i).tolist() == r["size"]


def test_missing_feature_takes_the_default(tmp_path):
    p, i = tmp_path / "m.tfrecord", tmp_path / "m.idx"
    _write(p, [{"label": [3]}, {"other": [1]}])
    tfrec.make_index(str(p), str(i))
    feats = {"label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
             "name": tfrec.FixedLenFeature((), tfrec.string, "none")}
    (label, name), _ = _read([str(p)], [str(i)], 2, features=feats)
    assert label.at(0).tolist() == [3] and label.at(1).tolist() == [-1]
    assert bytes(np.array(name.at(0))) == b"none"


def test_wrong_length_and_type_are_reported(tmp_path):
    p, i = tmp_path / "w.tfrecord", tmp_path / "w.idx"
    _write(p, [{"size": [1, 2, 3]}])
    tfrec.make_index(str(p), str(i))
    with pytest.raises(RuntimeError, match="'size'.*3 values"):
        _read([str(p)], [str(i)], 1, features={"size": tfrec.FixedLenFeature([2], tfrec.int64, 0)})
    with pytest.raises(RuntimeError, match="not the one declared"):
        _read([str(p)], [str(i)], 1, features={"size": tfrec.VarLenFeature(tfrec.float32, 0.0)})


def test_sharding_over_records_of_several_files(shards):
    paths, idx, recs = shards
    (image, label, bbox, size), _ = _read(paths, idx, 2, num_shards=3, shard_id=1)
    # 7 records, shard 1 = [2, 4)
    assert [label.at(k).tolist()[0] for k in range(2)] == [recs[2]["label"][0], recs[3]["label"][0]]


def test_ops_api_returns_a_dict(shards):
    paths, idx, recs = shards

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        reader = ops.readers.TFRecord(path=paths, index_path=idx, features=FEATURES)
        out = reader()
        assert set(out) == set(FEATURES)
        return out["label"]

    (label,) = p().run()
    assert label.at(0).tolist() == recs[0]["label"]


def test_index_tool(tmp_path, shards):
    paths, idx, _ = shards
    out = tmp_path / "again.idx"
    res = subprocess.run([sys.executable, "-m", "penstock.tfrecord2idx", paths[0], str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert out.read_text() == open(idx[0]).read()
    lines = [tuple(map(int, line.split())) for line in out.read_text().splitlines()]
    assert lines[0][0] == 0 and all(a[0] + a[1] == b[0] for a, b in zip(lines, lines[1:]))


def test_truncated_file_and_bad_features(tmp_path, shards):
    paths, idx, _ = shards
    data = open(paths[0], "rb").read()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(data[:-7])
    with pytest.raises(RuntimeError, match="ends inside"):
        tfrec.make_index(str(cut), str(tmp_path / "cut.idx"))
    with pytest.raises(RuntimeError, match="shorter than its index"):
        _read([str(cut)], [idx[0]], 3)
    with pytest.raises(TypeError, match="FixedLenFeature or VarLenFeature"):
        _read(paths, idx, 1, features={"label": ("int64",)})


@pytest.mark.parametrize("damage", [
    (0, b"\xff\xff\xff\xff\xff\xff\xff\x7f"),  # a huge length (did not fit an offset-sized integer)
    (0, b"\x05\x00\x00\x00\x00\x00\x00\x00"),  # a plausible one that would mis-frame every later record
    (8, b"\x00\x00\x00\x00"),                      # the length intact, its CRC damaged
], ids=["huge", "plausible", "crc"])
def test_make_index_checks_each_length_against_its_crc(tmp_path, shards, damage):
    paths, _, _ = shards
    data = bytearray(open(paths[0], "rb").read())
    second = int(open(paths[0].replace(".tfrecord", ".idx")).read().split()[2])  # the second record's offset
    at, raw = damage
    data[second + at:second + at + len(raw)] = raw
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match=rf"corrupted record at offset {second} of '{bad}': the CRC32C of its "
                                           "length does not match .*the length field is damaged"):
        tfrec.make_index(str(bad), str(tmp_path / "bad.idx"))


def test_records_written_by_tensorflow(tmp_path):
    """TensorFlow (in the pinned test set) as an independent writer of Examples and CRCs."""
    from _util import installed_or_skip
    tf = installed_or_skip("tensorflow")
    path, idx = tmp_path / "tf.tfrecord", tmp_path / "tf.idx"
    rng = np.random.default_rng(9)
    rows = [(rng.bytes(7 + i), [int(v) for v in rng.integers(-2**40, 2**40, 2)], rng.random(i + 1).astype(np.float32))
            for i in range(4)]
    with tf.io.TFRecordWriter(str(path)) as w:
        for data, ints, floats in rows:
            ex = tf.train.Example(features=tf.train.Features(feature={
                "data": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
                "ints": tf.train.Feature(int64_list=tf.train.Int64List(value=ints)),
                "floats": tf.train.Feature(float_list=tf.train.FloatList(value=floats.tolist()))}))
            w.write(ex.SerializeToString())
    assert tfrec.make_index(str(path), str(idx)) == 4
    feats = {"data": tfrec.FixedLenFeature((), tfrec.string, ""), "ints": tfrec.FixedLenFeature([2], tfrec.int64, 0),
             "floats": tfrec.VarLenFeature(tfrec.float32, 0.0)}
    (data, ints, floats), _ = _read([str(path)], [str(idx)], 4, features=feats)
    for i, (d, iv, fv) in enumerate(rows):
        assert np.array(data.at(i)).tobytes() == d
        assert ints.at(i).tolist() == iv
        np.testing.assert_array_equal(floats.at(i), fv)


# ---- CRC32C: records are checked as TensorFlow checks them -----------------------------------
def _one_record_file(tmp_path, data: bytes, name="r"):
    p, i = tmp_path / f"{name}.tfrecord", tmp_path / f"{name}.idx"
    p.write_bytes(tfrecord_record(data))
    tfrec.make_index(str(p), str(i))
    return str(p), str(i)


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 255, 767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 9, 100_003])
def test_records_of_every_length_pass_the_check(tmp_path, size):
    """Lengths around the native CRC's 8-byte words and its interleaved 3 x 256 and 3 x 8192 blocks."""
    payload = np.random.default_rng(size).bytes(size)
    path, idx = _one_record_file(tmp_path, tf_example({"data": payload}))
    (data,), _ = _read([path], [idx], 1, features={"data": tfrec.FixedLenFeature((), tfrec.string, "")})
    assert np.array(data.at(0)).tobytes() == payload


# where a flipped byte lands in a record: [length 8][length CRC 4][data][data CRC 4]
_FLIPS = {"length": (3, "length"), "length CRC": (9, "length"), "data": (20, "data"), "data CRC": (-2, "data")}


@pytest.mark.parametrize("where", list(_FLIPS))
def test_a_flipped_byte_is_a_data_loss_error(shards, where):
    paths, idx, _ = shards
    at, part = _FLIPS[where]
    start, size = map(int, open(idx[1]).read().splitlines()[1].split())  # the second record
    data = bytearray(open(paths[1], "rb").read())
    data[start + at if at >= 0 else start + size + at] ^= 0x10
    with open(paths[1], "wb") as f:
        f.write(data)
    with pytest.raises(RuntimeError) as info:
        _read([paths[1]], [idx[1]], 4)
    msg = str(info.value)
    assert (f"corrupted record at offset {start} of '{paths[1]}': the CRC32C of its {part} does not match"
            in msg) and "readers.tfrecord" in msg


def test_a_corrupted_record_is_skipped_with_on_error(tmp_path, shards):
    paths, idx, recs = shards
    data = bytearray(open(paths[0], "rb").read())
    data[20] ^= 0x01  # the first record's data
    with open(paths[0], "wb") as f:
        f.write(data)
    with pytest.warns(RuntimeWarning, match="corrupted record at offset 0"):
        (image, label, bbox, size), pipe = _read(paths, idx, 3, on_error="skip")
    assert [label.at(k).tolist() for k in range(3)] == [recs[k]["label"] for k in (1, 2, 3)]
    (skipped,) = pipe.skipped_samples
    assert skipped["source"] == f"{paths[0]} at offset 0" and skipped["operator"] == "R"


def test_tensorflow_finds_the_same_records_corrupt(tmp_path):
    """TensorFlow as the reference: what it reads we read, what it calls DataLossError we refuse."""
    from _util import installed_or_skip
    tf = installed_or_skip("tensorflow")
    good = tf_example({"data": b"payload" * 40})
    feats = {"data": tfrec.FixedLenFeature((), tfrec.string, "")}
    for k, flip in enumerate([None, 0, 8, 12, 12 + len(good)]):
        path, idx = _one_record_file(tmp_path, good, name=f"f{k}")  # indexed before the damage
        record = bytearray(open(path, "rb").read())
        if flip is not None:
            record[flip] ^= 0x04
        open(path, "wb").write(record)
        try:
            list(tf.data.TFRecordDataset(path))
            tf_ok = True
        except tf.errors.DataLossError:
            tf_ok = False
        try:
            _read([path], [idx], 1, features=feats)
            ours_ok = True
        except RuntimeError as exc:
            assert "CRC32C" in str(exc)
            ours_ok = False
        assert (tf_ok, ours_ok) == (flip is None, flip is None)
