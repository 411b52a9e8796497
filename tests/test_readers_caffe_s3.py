"""readers.caffe and readers.caffe2 over an object store: LMDB databases under s3:// on a real S3 server
(rclone serve s3 on loopback) are fetched once to a temporary folder and give what the same databases
give on local disk; the copy goes when the last reader closes; a missing database is named by its URL."""
from __future__ import annotations

import gc
import os
import re
import shutil
import tempfile
import threading
import time

import pytest

from _reader_runs import assert_checkpoint_resumes, assert_same_rows, reader_pipeline, rows
from _s3_server import s3_endpoint, s3_ranges, s3_server  # noqa: F401 - the fixtures
from penstock import fn
from penstock.operators import readers_caffe
from test_readers_caffe import CAFFE2_IMAGE_RECORDS, CAFFE_RECORDS, write_lmdb


@pytest.fixture(scope="module")
def databases(s3_server):  # noqa: F811
    """{reader: (local database, its URL)}; the Caffe2 records all encoded images (a batch mixes no ranks)"""
    root = s3_server.bucket("lmdb")
    return {"caffe": (write_lmdb(os.path.join(root, "caffe"), CAFFE_RECORDS), "s3://lmdb/caffe"),
            "caffe2": (write_lmdb(os.path.join(root, "caffe2"), CAFFE2_IMAGE_RECORDS[:4]), "s3://lmdb/caffe2")}


@pytest.fixture
def own_caffe(databases, s3_server, request):  # noqa: F811
    """(local database, URL) of a copy of the Caffe database under a key of this test's own: what a test of
    fetching and removing sees does not depend on whether an earlier test's pipelines are gone yet."""
    local, _ = databases["caffe"]
    key = "caffe-" + re.sub(r"\W", "-", request.node.name)
    shutil.copytree(local, os.path.join(s3_server.bucket("lmdb"), key))
    return local, f"s3://lmdb/{key}"


@pytest.fixture
def temp(tmp_path, monkeypatch):
    """The temporary folder the databases are fetched to."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _pipe(reader, batch_size=2, **kwargs):
    return reader_pipeline(getattr(fn.readers, reader), batch_size, **kwargs)


@pytest.mark.parametrize("reader", ["caffe", "caffe2"])
@pytest.mark.parametrize("options", [{}, {"random_shuffle": True, "initial_fill": 3},
                                     {"num_shards": 2, "shard_id": 1, "pad_last_batch": True},
                                     {"shuffle_after_epoch": True}])
def test_records_as_on_local_disk(databases, temp, reader, options):
    local, url = databases[reader]
    on_disk, on_s3 = _pipe(reader, path=[local], **options), _pipe(reader, path=[url], **options)
    assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
    assert_same_rows(rows(on_s3, 6), rows(on_disk, 6), local, url)
    assert f"{url} at key 00000000" in {row[-1] for row in rows(_pipe(reader, batch_size=4, path=[url]), 1)}


def test_labels_as_stored_and_checkpoints(databases, temp):
    _, url = databases["caffe"]
    labels = [int(row[1][0]) for row in rows(_pipe("caffe", batch_size=5, path=[url]), 1)]
    assert labels == [k * 3 - 4 for k in range(5)]
    assert_checkpoint_resumes(fn.readers.caffe, 3, 4, path=[url], random_shuffle=True, initial_fill=4)


def test_fetched_once_and_removed_with_the_last_reader(own_caffe, temp, s3_endpoint, s3_ranges):  # noqa: F811
    local, url = own_caffe
    asked = len(s3_ranges.ranges)
    p, q = _pipe("caffe", path=[url]), _pipe("caffe", path=[url])
    copies = [n for n in os.listdir(temp) if n.startswith("penstock-lmdb-")]
    assert len(copies) == 1 and os.listdir(temp / copies[0]) == ["data.mdb"]
    with open(temp / copies[0] / "data.mdb", "rb") as copy, open(os.path.join(local, "data.mdb"), "rb") as f:
        assert copy.read() == f.read()
    if s3_endpoint == "ranged":  # in ranged GETs (one here: the database is smaller than a chunk)
        assert [path for path, _ in s3_ranges.ranges[asked:]] == [url[len("s3:/"):] + "/data.mdb"]
    assert [row[-1] for row in rows(p, 2)] == [row[-1] for row in rows(q, 2)]  # both read the shared copy
    del p
    gc.collect()
    assert os.path.isdir(temp / copies[0])
    del q
    gc.collect()
    assert not os.path.exists(temp / copies[0])


def test_missing_or_bad_database_names_the_url_and_the_reader(databases, s3_server, temp):  # noqa: F811
    with pytest.raises(RuntimeError, match=r"readers\.caffe.*'s3://lmdb/gone/data\.mdb'.*no such object"):
        _pipe("caffe", path=["s3://lmdb/gone"])
    bad = os.path.join(s3_server.bucket("lmdb"), "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "data.mdb"), "wb") as f:
        f.write(b"not a database" * 100)
    with pytest.raises(RuntimeError, match=r"readers\.caffe2.*LMDB Error: .*with file: s3://lmdb/bad"):
        _pipe("caffe2", path=["s3://lmdb/bad"])
    assert not [n for n in os.listdir(temp) if n.startswith("penstock-lmdb-")]  # no copy left behind
    shutil.rmtree(bad)


def test_a_pipeline_collected_elsewhere_during_a_fetch_closes_its_readers(own_caffe, temp, monkeypatch):
    """The garbage collector may finalize a pipeline on the thread that answers a fetch's requests (an
    object-store thread): its readers' release must not wait for the fetch, which waits for that thread."""
    local, url = own_caffe
    collected = [_pipe("caffe", path=[local])]
    fetch = readers_caffe.fetch_database
    released = []

    def fetch_while_another_thread_collects(label, path):
        done = threading.Thread(target=lambda: (collected.clear(), gc.collect(), released.append(True)))
        done.start()
        done.join(10)
        return fetch(label, path)

    monkeypatch.setattr(readers_caffe, "fetch_database", fetch_while_another_thread_collects)
    p = _pipe("caffe", path=[url])
    assert released == [True]  # within the fetch: the other thread's release did not wait for it
    assert rows(p, 1)[0][-1] == f"{url} at key 00000000"


def test_readers_opening_one_database_at_once_share_one_fetch(own_caffe, temp, monkeypatch):
    _, url = own_caffe
    fetch, fetches = readers_caffe.fetch_database, []

    def slow_fetch(label, path):
        fetches.append(path)
        time.sleep(0.3)  # the other reader asks meanwhile
        return fetch(label, path)

    monkeypatch.setattr(readers_caffe, "fetch_database", slow_fetch)
    pipes = []
    threads = [threading.Thread(target=lambda: pipes.append(_pipe("caffe", path=[url]))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(pipes) == 2 and fetches == [url]
    assert [row[-1] for row in rows(pipes[0], 2)] == [row[-1] for row in rows(pipes[1], 2)]
    assert len([n for n in os.listdir(temp) if n.startswith("penstock-lmdb-")]) == 1
    pipes.clear()
    gc.collect()
