"""readers.tfrecord over an object store: TFRecord files and their index files under s3:// on a real
S3 server (rclone serve s3 on loopback) give what the same files give on local disk; a damaged
record is named by its URL and offset."""
from __future__ import annotations

import os

import numpy as np
import pytest

import penstock.tfrecord as tfrec
from _s3_server import s3_endpoint, s3_ranges, s3_server  # noqa: F401 - the fixtures
from penstock import fn, pipeline_def
from test_readers_tfrecord import FEATURES, _records, _write


@pytest.fixture(scope="module")
def files(s3_server):  # noqa: F811
    root = s3_server.bucket("records")
    local, urls = [], []
    for k in range(3):
        path = os.path.join(root, f"r{k}.tfrecord")
        _write(path, _records(4 + 2 * k, offset=10 * k))
        tfrec.make_index(path, path + ".idx")
        local.append(path)
        urls.append(f"s3://records/r{k}.tfrecord")
    return local, urls


def _read(paths, indexes, batch_size=4, iterations=5, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=4)
    def pipe():
        out = fn.readers.tfrecord(path=paths, index_path=indexes, features=FEATURES, name="r", **kw)
        return tuple(out[n] for n in FEATURES)
    p = pipe()
    p.build()
    rows = []
    for _ in range(iterations):
        outs = p.run()
        rows += [[np.array(o.at(i)).tolist() for o in outs] for i in range(len(outs[0]))]
    return rows, p.reader_meta("r")


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 6},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True}])
def test_records_as_on_local_disk(files, s3_endpoint, reader):  # noqa: F811
    local, urls = files
    expected, meta = _read(local, [p + ".idx" for p in local], **reader)
    for indexes in ([p + ".idx" for p in local], [u + ".idx" for u in urls]):  # index files local or in the store
        got, got_meta = _read(urls, indexes, **reader)
        assert got_meta == meta and meta["epoch_size"] == 4 + 6 + 8
        assert got == expected


def test_damaged_record_names_url_and_offset(files, s3_server, s3_endpoint):  # noqa: F811
    local, urls = files
    path = os.path.join(s3_server.bucket("damaged"), "d.tfrecord")
    with open(local[0], "rb") as f:
        data = bytearray(f.read())
    table = np.loadtxt(local[0] + ".idx", np.int64).reshape(-1, 2)
    data[int(table[1, 0]) + 20] ^= 0xFF  # the second record's data
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(RuntimeError, match=r"readers\.tfrecord") as raised:
        _read(["s3://damaged/d.tfrecord"], [local[0] + ".idx"], batch_size=2, iterations=1)
    assert f"offset {table[1, 0]} of 's3://damaged/d.tfrecord'" in str(raised.value)
    assert "/proc/self/fd" not in str(raised.value)
    with pytest.raises(RuntimeError, match=r"readers\.tfrecord.*'s3://records/gone\.tfrecord'"):
        _read(["s3://records/gone.tfrecord"], [local[0] + ".idx"], batch_size=2, iterations=1)
