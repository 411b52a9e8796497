"""experimental.readers.video (CPU) over an object store: videos under s3:// on a real S3 server
(rclone serve s3 on loopback) given as filenames, file_root or file_list give the frames, labels,
frame numbers and timestamps the same reader gives over the same files on local disk; FFmpeg reads
them in ranges, not whole."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _s3_server import s3_endpoint, s3_ranges, s3_server  # noqa: F401 - the fixtures
from _video_data import encoded, write
from penstock import fn, pipeline_def


LIST = "cat/a.mp4 3 0.2 0.9\ndog/c.webm 5\ns3://videos/set/cat/deep/b.mkv 1\n"


@pytest.fixture(scope="module")
def videos(s3_server):  # noqa: F811
    """Class folders under s3://videos/set (a video deeper in one, an object directly under the
    root that belongs to no class), a file list in the bucket of keys relative to it and one URL."""
    root = os.path.join(s3_server.bucket("videos"), "set")
    names = {"cat/a.mp4": encoded("h264", "mp4", frames=30),
             "cat/deep/b.mkv": encoded("hevc", "mkv", frames=12, seed=2),
             "dog/c.webm": encoded("vp9", "webm", frames=20, height=32, width=48, seed=1)}
    for name, data in names.items():
        write(root, name, data)
    write(root, "loose.mp4", names["cat/a.mp4"])
    write(root, "list.txt", LIST.encode())
    return root, "s3://videos/set", sorted(names)


def _read(batch=3, iterations=4, **reader):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=7)
    def pipe():
        return tuple(fn.experimental.readers.video(name="r", sequence_length=4, stride=2, enable_frame_num=True,
                                                   enable_timestamps=True, **reader))
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        outs = p.run()
        out += [[np.array(o.at(i)) for o in outs] + [outs[0].source_info(i)] for i in range(len(outs[0]))]
    return out, p


def _same(got, expected, local, url):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        for a, b in zip(g[:-1], e[:-1]):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        assert g[-1] == e[-1].replace(local, url)
    assert len({int(e[2][0]) for e in expected}) > 1  # several sequences' first frames


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 5},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True}])
def test_file_root_as_on_local_disk(videos, s3_endpoint, reader):  # noqa: F811
    local, url, _ = videos
    expected, on_disk = _read(file_root=local, **reader)
    got, remote = _read(file_root=url, **reader)
    assert remote.reader_meta("r") == on_disk.reader_meta("r")
    _same(got, expected, local, url)
    assert sorted({int(e[1][0]) for e in expected}) == [0, 1]  # the classes cat and dog


def test_filenames_and_file_list_as_on_local_disk(videos, s3_endpoint, tmp_path):  # noqa: F811
    local, url, names = videos
    expected, _ = _read(filenames=[f"{local}/{n}" for n in names], labels=[4, 5, 6])
    got, _ = _read(filenames=[f"{url}/{n}" for n in names], labels=[4, 5, 6])
    _same(got, expected, local, url)
    (tmp_path / "local.txt").write_text("".join(f"{local}/{line}" for line in LIST.replace(url + "/", "").splitlines(True)))
    (tmp_path / "urls.txt").write_text("".join(f"{url}/{line}" for line in LIST.replace(url + "/", "").splitlines(True)))
    expected, _ = _read(file_list=str(tmp_path / "local.txt"))
    assert sorted({int(e[1][0]) for e in expected}) == [1, 3, 5]
    for listed in (f"{url}/list.txt", str(tmp_path / "urls.txt")):  # relative keys in the bucket; URLs
        got, _ = _read(file_list=listed)
        _same(got, expected, local, url)


def test_read_in_ranges_not_whole(videos, s3_ranges, monkeypatch):  # noqa: F811
    """The last frames of a video are decoded from its header and last packets, fetched in
    windows of ranged GETs: well under the whole file."""
    import av
    from penstock import _engine
    from penstock.operators import _video_codec as codec
    local, url, _ = videos
    write(local, "tail.mp4", encoded("h264", "mp4", frames=240, height=96, width=128))
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_ranges.endpoint)
    monkeypatch.setattr(codec, "OBJECT_WINDOW", 2048)
    index = codec.index_of(av, f"{local}/tail.mp4", "tail")
    frames = np.array([237, 238, 239])
    got, expected = (np.zeros((3, 96, 128, 3), np.uint8) for _ in range(2))
    pool = _engine.ThreadPool(1)
    codec.decode_into(av, f"{local}/tail.mp4", index, frames, expected, "tail", pool)
    mark = len(s3_ranges.ranges)
    codec.decode_into(av, f"{url}/tail.mp4", index, frames, got, "tail", pool)
    assert np.array_equal(got, expected) and expected.any()
    spans = [r.split("=")[1].split("-") for path, r in s3_ranges.ranges[mark:] if path.endswith("/tail.mp4")]
    fetched = sum(int(b) - int(a) + 1 for a, b in spans)
    assert len(spans) > 1 and fetched < 0.8 * os.path.getsize(f"{local}/tail.mp4"), spans


def test_missing_video_names_url_and_reader(videos):
    _, url, _ = videos
    with pytest.raises(RuntimeError, match=r"readers\.video.*'s3://videos/set/gone\.mp4'.*no such object"):
        _read(filenames=[f"{url}/cat/a.mp4", f"{url}/gone.mp4"])
    with pytest.raises(RuntimeError, match=r"readers\.video.*cannot read 's3://videos/set/none\.txt'.*no such object"):
        _read(file_list=f"{url}/none.txt")
