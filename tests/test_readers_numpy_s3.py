"""readers.numpy over an object store: arrays under an s3:// file_root (a real S3 server on loopback)
come out as the same reader gives them from the same files on local disk."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn, pipeline_def


def _arrays(reader, batch_size=3, iterations=3):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=5)
    def pipe():
        return fn.readers.numpy(name="r", **reader)
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        (data,) = p.run()
        out += [(np.array(data.at(i)), data.source_info(i)) for i in range(len(data))]
    return out, p.reader_meta("r")


@pytest.fixture(scope="module")
def arrays(s3_server):  # noqa: F811
    root = os.path.join(s3_server.bucket("arrays"), "set")
    rng = np.random.default_rng(1)
    for i in range(7):
        folder = os.path.join(root, "deep" if i % 3 == 0 else "")
        os.makedirs(folder, exist_ok=True)
        a = rng.random((2, 3 + i)).astype(np.float32)
        np.save(os.path.join(folder, f"a{i}.npy"), np.asfortranarray(a) if i == 4 else a)
    with open(os.path.join(root, "readme.txt"), "w") as f:
        f.write("not an array")
    return root, "s3://arrays/set"


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 4},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True}])
def test_file_root_as_on_local_disk(arrays, reader):
    local, url = arrays
    expected, meta = _arrays({"file_root": local, **reader})
    got, got_meta = _arrays({"file_root": url, **reader})
    assert got_meta == meta
    assert [os.path.join(local, s) for _, s in got] == [s for _, s in expected]  # keys under file_root, as DALI
    for (g, _), (e, _) in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e)


def test_files_and_roi(arrays):
    local, url = arrays
    got, _ = _arrays({"file_root": url, "files": ["a1.npy", "deep/a3.npy"]}, batch_size=2, iterations=1)
    assert [g.shape for g, _ in got] == [(2, 4), (2, 6)]
    assert np.array_equal(got[1][0], np.load(os.path.join(local, "deep", "a3.npy")))
    with pytest.raises(RuntimeError, match=r"NotImplementedError: readers\.numpy.*regions of interest"):
        _arrays({"file_root": url, "roi_start": [0, 1], "roi_end": [1, 2]}, iterations=1)


def test_missing_array_names_url(arrays):
    _, url = arrays
    with pytest.raises(RuntimeError, match=r"readers\.numpy.*'s3://arrays/set/gone\.npy'.*no such object"):
        _arrays({"file_root": url, "files": ["a1.npy", "gone.npy"]}, batch_size=2, iterations=1)
