"""readers.sequence over an object store: streams of frames under an s3:// file_root on a real S3 server
(rclone serve s3 on loopback) give the sequences the same reader gives over the same files on local
disk; a frame gone from the store is named by its URL."""
from __future__ import annotations

import os
import shutil

import pytest

from _reader_runs import assert_checkpoint_resumes, assert_same_rows, reader_pipeline, rows
from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn
from test_readers_sequence import write_streams

pytestmark = pytest.mark.filterwarnings("ignore:.*readers.sequence:DeprecationWarning")


@pytest.fixture(scope="module")
def streams(s3_server):  # noqa: F811
    return write_streams(os.path.join(s3_server.bucket("frames"), "streams")), "s3://frames/streams"


@pytest.mark.parametrize("reader", [
    {"sequence_length": 2},
    {"sequence_length": 2, "step": 2, "stride": 2},
    {"sequence_length": 3, "random_shuffle": True, "initial_fill": 3},
    {"sequence_length": 2, "num_shards": 2, "shard_id": 1, "pad_last_batch": True},
    {"sequence_length": 2, "shuffle_after_epoch": True},
])
def test_sequences_as_on_local_disk(streams, reader):
    local, url = streams
    on_disk = reader_pipeline(fn.readers.sequence, file_root=local, **reader)
    on_s3 = reader_pipeline(fn.readers.sequence, file_root=url, **reader)
    assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
    assert_same_rows(rows(on_s3, 6), rows(on_disk, 6))


def test_frames_in_order_from_the_store(streams):
    _, url = streams
    p = reader_pipeline(fn.readers.sequence, batch_size=9, file_root=url, sequence_length=2)
    assert p.reader_meta("r")["epoch_size"] == 9  # 4 of stream 0, 2 of stream 1, 3 of b; none of c or top.png
    got = [row[0] for row in rows(p, 1)]
    assert [s[:, 1, 1, 0].tolist() for s in got] == [[6, 16], [16, 26], [26, 36], [36, 46], [0, 10], [10, 20],
                                                     [0, 10], [10, 20], [20, 30]]
    assert got[0].shape == (2, 4, 6, 3) and got[0][1, 0, 0].tolist() == [1, 100, 200]


def test_checkpoint_resumes_exactly(streams):
    _, url = streams
    assert_checkpoint_resumes(fn.readers.sequence, 3, 4, file_root=url, sequence_length=2, random_shuffle=True,
                              initial_fill=4)


def test_missing_frame_and_bucket_name_the_url_and_the_reader(streams, s3_server):  # noqa: F811
    local, _ = streams
    copy = os.path.join(s3_server.bucket("frames"), "partial")
    shutil.copytree(local, copy)
    p = reader_pipeline(fn.readers.sequence, file_root="s3://frames/partial", sequence_length=2)
    os.remove(os.path.join(copy, "0", "00001.png"))  # listed at build, gone when read
    with pytest.raises(RuntimeError, match=r"readers\.sequence.*'s3://frames/partial/0/00001\.png'.*no such object"):
        p.run()
    with pytest.raises(RuntimeError, match=r"readers\.sequence.*cannot list 's3://no-such-bucket/streams'"):
        reader_pipeline(fn.readers.sequence, file_root="s3://no-such-bucket/streams", sequence_length=2)


def test_on_error_skip_passes_over_sequences_with_a_missing_frame(streams, s3_server):  # noqa: F811
    local, _ = streams
    copy = os.path.join(s3_server.bucket("frames"), "skipping")
    shutil.copytree(local, copy)
    p = reader_pipeline(fn.readers.sequence, batch_size=3, file_root="s3://frames/skipping", sequence_length=2,
                        on_error="skip")
    os.remove(os.path.join(copy, "0", "00001.png"))  # in the first two sequences of stream 0
    with pytest.warns(RuntimeWarning, match="00000.png|00001.png"):
        got = [row[0] for row in rows(p, 1)]
    assert [s[:, 1, 1, 0].tolist() for s in got] == [[26, 36], [36, 46], [0, 10]]
    assert [s["source"] for s in p.skipped_samples] == ["s3://frames/skipping/0/00000.png",
                                                         "s3://frames/skipping/0/00001.png"]
