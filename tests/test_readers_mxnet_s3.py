"""readers.mxnet over an object store: RecordIO files and their indexes under s3:// on a real S3 server
(rclone serve s3 on loopback) give what the same files give on local disk, records read in ranges; a
missing or damaged file is named by its URL."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from _reader_runs import assert_checkpoint_resumes, assert_same_rows, reader_pipeline, rows
from _s3_server import s3_endpoint, s3_ranges, s3_server  # noqa: F401 - the fixtures
from penstock import fn
from test_readers_mxnet import IMAGES, record, write_recordio


@pytest.fixture(scope="module")
def files(s3_server):  # noqa: F811
    """Two RecordIO files (one with a record of several labels) in the bucket's folder, and as URLs."""
    root = s3_server.bucket("recordio")
    write_recordio(os.path.join(root, "a"), [record(float(k), img) for k, img in enumerate(IMAGES[:4])])
    write_recordio(os.path.join(root, "b"), [record(0, IMAGES[4], [1.5, 2.5]), record(9.0, IMAGES[5])])
    return [os.path.join(root, n) for n in "ab"], ["s3://recordio/a", "s3://recordio/b"]


def _pipe(recs, indexes, batch_size=4, **reader):
    return reader_pipeline(fn.readers.mxnet, batch_size, path=recs, index_path=indexes, **reader)


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 3},
                                    {"num_shards": 4, "shard_id": 3, "pad_last_batch": True},
                                    {"shuffle_after_epoch": True}])
def test_records_as_on_local_disk(files, s3_endpoint, reader):  # noqa: F811
    local, urls = files
    on_disk = _pipe([f"{p}.rec" for p in local], [f"{p}.idx" for p in local], **reader)
    expected = rows(on_disk, 4)
    for indexes in ([f"{p}.idx" for p in local], [f"{u}.idx" for u in urls]):  # index files local or in the store
        on_s3 = _pipe([f"{u}.rec" for u in urls], indexes, **reader)
        assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
        assert_same_rows(rows(on_s3, 4), expected, os.path.dirname(local[0]), "s3://recordio")


def test_labels_and_images_as_written(files, s3_endpoint):  # noqa: F811
    local, urls = files
    got = rows(_pipe([f"{u}.rec" for u in urls], [f"{u}.idx" for u in urls], batch_size=6), 1)
    assert [(bytes(image), labels.tolist()) for image, labels, _ in got] == [
        (IMAGES[0], [0.0]), (IMAGES[1], [1.0]), (IMAGES[2], [2.0]), (IMAGES[3], [3.0]), (IMAGES[4], [1.5, 2.5]),
        (IMAGES[5], [9.0])]
    with open(f"{local[1]}.idx") as f:
        second = f.read().split()[3]
    assert got[5][2] == f"s3://recordio/b.rec at index {second}"


def test_checkpoint_resumes_exactly(files, s3_endpoint):  # noqa: F811
    _, urls = files
    assert_checkpoint_resumes(fn.readers.mxnet, 3, 4, path=[f"{u}.rec" for u in urls],
                              index_path=[f"{u}.idx" for u in urls], random_shuffle=True, initial_fill=4)


def test_missing_and_damaged_files_name_the_url_and_the_reader(files, s3_server, s3_endpoint):  # noqa: F811
    local, urls = files
    with pytest.raises(RuntimeError, match=r"readers\.mxnet.*'s3://recordio/gone\.rec'.*no such object"):
        _pipe(["s3://recordio/gone.rec"], [f"{urls[0]}.idx"])
    with pytest.raises(RuntimeError, match=r"readers\.mxnet.*'s3://recordio/gone\.idx'.*no such object"):
        _pipe([f"{urls[0]}.rec"], ["s3://recordio/gone.idx"])
    with open(f"{local[0]}.rec", "rb") as f:
        raw = bytearray(f.read())
    raw[0] ^= 0xFF
    with open(os.path.join(s3_server.bucket("recordio"), "damaged.rec"), "wb") as f:
        f.write(raw)
    p = _pipe(["s3://recordio/damaged.rec"], [f"{local[0]}.idx"], batch_size=2)
    with pytest.raises(RuntimeError, match=r"readers\.mxnet.*bad record magic.*s3://recordio/damaged\.rec at index 0"):
        p.run()
    with pytest.raises(ValueError, match=r"readers\.mxnet.*mix URLs and local paths"):
        _pipe([f"{urls[0]}.rec", f"{local[1]}.rec"], [f"{local[0]}.idx", f"{local[1]}.idx"])


_SCRIPT = """
import penstock
@penstock.pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=17)
def pipe():
    return tuple(penstock.fn.readers.mxnet(path=["s3://recordio/a.rec"], index_path=["s3://recordio/a.idx"],
                                           random_shuffle=True, initial_fill=3, prefetch_queue_depth=3))
p = pipe()
p.build()
for _ in range(5):
    p.run()
print("read")
"""


def test_a_script_exits_promptly_with_batches_read_ahead(files):
    """The reader's thread reads batches ahead while the interpreter exits: its requests end with the
    loop that answers them (they once waited out their whole bound, 160 s, in one exit of three)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(4):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "read", done.stderr[-2000:]
        assert time.monotonic() - start < 30, done.stderr[-2000:]
