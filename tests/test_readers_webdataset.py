"""readers.webdataset over tar shards written by the test."""
import io
import tarfile

import numpy as np
import pytest

from penstock import fn, pipeline_def, types


def _shard(path, samples):
    """samples: list of (key, {ext: bytes})."""
    with tarfile.open(path, "w") as tar:
        for key, comps in samples:
            for ext, data in comps.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def shards(tmp_path):
    s0 = [(f"dir/s{i}", {"jpg": bytes([i]) * (i + 1), "cls": str(i).encode(),
                         "feat.npy": np.arange(i + 1, dtype=np.float32).tobytes()}) for i in range(3)]
    s1 = [("t0", {"png": b"png!", "cls": b"7", "feat.npy": np.ones(2, np.float32).tobytes()}),
          ("t1", {"cls": b"8", "feat.npy": np.zeros(1, np.float32).tobytes()})]   # no image
    paths = [str(tmp_path / "a.tar"), str(tmp_path / "b.tar")]
    _shard(paths[0], s0)
    _shard(paths[1], s1)
    return paths, s0 + s1


def _read(paths, batch, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        out = fn.readers.webdataset(paths=paths, name="R", **kw)
        return tuple(out) if isinstance(out, list) else (out,)   # one ext group: one DataNode

    pipe = p()
    return pipe.run(), pipe


def test_components_by_extension_group(shards):
    paths, samples = shards
    (img, cls, feat), pipe = _read(paths, 5, ext=["jpg;png", "cls", "feat.npy"],
                                   dtypes=[types.UINT8, types.UINT8, types.FLOAT])
    assert pipe.reader_meta("R")["epoch_size"] == 5
    for i, (_, comps) in enumerate(samples):
        want_img = comps.get("jpg", comps.get("png", b""))
        assert np.array(img.at(i)).tobytes() == want_img          # missing -> empty by default
        assert np.array(cls.at(i)).tobytes() == comps["cls"]
        np.testing.assert_array_equal(feat.at(i), np.frombuffer(comps["feat.npy"], np.float32))


def test_missing_component_skip_and_error(shards):
    paths, samples = shards
    (img,), pipe = _read(paths, 4, ext=["jpg;png"], missing_component_behavior="skip")
    assert pipe.reader_meta("R")["epoch_size"] == 4
    assert np.array(img.at(3)).tobytes() == b"png!"
    with pytest.raises(RuntimeError, match="no component"):
        _read(paths, 1, ext=["jpg;png"], missing_component_behavior="error")


def test_index_files_give_the_same_samples(shards, tmp_path):
    paths, samples = shards
    index_paths = []
    for k, path in enumerate(paths):
        lines = []
        with tarfile.open(path) as tar:
            members = tar.getmembers()
        keys = {}
        for m in members:
            key, _, ext = m.name.partition(".")
            keys.setdefault(key, []).append(f"{ext} {m.offset_data} {m.size} {m.name}")
        lines = [f"v1.2 {len(keys)}"] + [" ".join(v) for v in keys.values()]
        ip = tmp_path / f"{k}.idx"
        ip.write_text("\n".join(lines) + "\n")
        index_paths.append(str(ip))
    (a,), _ = _read(paths, 5, ext=["cls"])
    (b,), _ = _read(paths, 5, ext=["cls"], index_paths=index_paths)
    for i in range(5):
        assert np.array(a.at(i)).tobytes() == np.array(b.at(i)).tobytes()


def test_sharding_and_bad_dtype(shards):
    paths, samples = shards
    (cls,), _ = _read(paths, 2, ext=["cls"], num_shards=2, shard_id=1)
    assert [np.array(cls.at(i)).tobytes() for i in range(2)] == [samples[2][1]["cls"], samples[3][1]["cls"]]
    with pytest.raises(RuntimeError, match="whole number"):
        _read(paths, 1, ext=["jpg"], dtypes=[types.INT32], missing_component_behavior="skip")
