"""readers.webdataset over an object store: tar shards (and their index files) under s3:// on a real
S3 server (rclone serve s3 on loopback) give what the same shards give on local disk."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _s3_server import s3_endpoint, s3_ranges, s3_server  # noqa: F401 - the fixtures
from penstock import fn, pipeline_def, types
from test_readers_webdataset import _shard

EXT = ["jpg;png", "cls", "feat.npy"]


@pytest.fixture(scope="module")
def shards(s3_server):  # noqa: F811
    root = s3_server.bucket("shards")
    rng = np.random.default_rng(2)
    names = []
    for k in range(3):
        samples = [(f"s{k}/{i:03d}", {"jpg" if i % 4 else "png": rng.bytes(int(rng.integers(1, 5000))),
                                      "cls": str(i).encode(),
                                      "feat.npy": rng.random(i % 3 + 1).astype(np.float32).tobytes()})
                   for i in range(5 + 3 * k)]
        _shard(os.path.join(root, f"part{k}.tar"), samples)
        names.append(f"part{k}.tar")
    return [os.path.join(root, n) for n in names], [f"s3://shards/{n}" for n in names]


def _read(paths, batch_size=4, iterations=6, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=9)
    def pipe():
        return tuple(fn.readers.webdataset(paths=paths, ext=EXT, name="r",
                                           dtypes=[types.UINT8, types.UINT8, types.FLOAT], **kw))
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        outs = p.run()
        out += [[np.array(o.at(i)).tobytes() for o in outs] + [outs[0].source_info(i)] for i in range(len(outs[0]))]
    return out, p.reader_meta("r")


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 5},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True}])
def test_shards_as_on_local_disk(shards, s3_endpoint, reader):  # noqa: F811
    local, urls = shards
    expected, meta = _read(local, **reader)
    got, got_meta = _read(urls, **reader)
    assert got_meta == meta and meta["epoch_size"] == 5 + 8 + 11
    assert [row[:3] for row in got] == [row[:3] for row in expected]
    assert [row[3] for row in got] == [row[3].replace(os.path.dirname(local[0]), "s3://shards") for row in expected]


def test_index_files_from_urls(shards, s3_server, tmp_path):  # noqa: F811
    local, urls = shards
    expected, _ = _read(local)
    from penstock.operators.readers_webdataset import scan_tar
    indexes = []
    for path in local:  # index files in the format wds2idx writes (v1.2: ext offset size name)
        samples = scan_tar("test", path)
        with open(path + ".idx", "w") as f:
            f.write(f"v1.2 {len(samples)}\n")
            for comps in samples:
                f.write(" ".join(f"{e} {o} {s} x.{e}" for e, o, s in comps) + "\n")
        indexes.append("s3://shards/" + os.path.basename(path) + ".idx")
    got, _ = _read(urls, index_paths=indexes)
    assert [row[:3] for row in got] == [row[:3] for row in expected]


def test_missing_shard_names_url(shards):
    with pytest.raises(RuntimeError, match=r"readers\.webdataset.*'s3://shards/gone\.tar'"):
        _read(["s3://shards/gone.tar"])


def test_a_batch_reads_each_shard_in_few_merged_ranges(shards, s3_ranges, monkeypatch):  # noqa: F811
    local, urls = shards
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_ranges.endpoint)
    expected, _ = _read(local, batch_size=8, iterations=1)
    del s3_ranges.ranges[:]
    got, _ = _read(urls, batch_size=8, iterations=1, index_paths=[])
    assert [row[:3] for row in got] == [row[:3] for row in expected]
    reads = [r for r in s3_ranges.ranges if "part" in r[0]]
    # the scan: one GET per shard (its headers in one window); then a batch of 8 samples of 3
    # components (part0's 5 and part1's 3; the batches read ahead span two shards too): one
    # merged range per shard per batch, not a GET per component
    assert [r for r in reads[:3]] == [(f"/shards/part{k}.tar", rng) for k, (_, rng) in enumerate(reads[:3])]
    assert all(rng.startswith("bytes=0-") for _, rng in reads[:3])
    assert 2 <= len(reads) - 3 <= 3 * 2
