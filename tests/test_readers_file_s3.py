"""readers.file over an object store: ``s3://`` file_root, file_list and files against a real S3 server
(rclone serve s3 on loopback) give what the same reader gives over the same files on local disk."""
from __future__ import annotations

import os
import socket
import threading
import time

import numpy as np
import pytest

from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn, pipeline_def

CLASSES = {"cat": 7, "dog": 5, "eel": 0, "fox": 4}  # files per class; an empty class has no objects


@pytest.fixture(scope="module")
def dataset(s3_server):  # noqa: F811
    """The same tree in a local folder and under s3://files/train: class folders (one with a
    folder below, which discovery does not enter) and files the default filters leave out."""
    local = s3_server.bucket("files")
    root = os.path.join(local, "train")
    rng = np.random.default_rng(3)
    for cls, count in CLASSES.items():
        if count:
            os.makedirs(os.path.join(root, cls, "sub"), exist_ok=True)
        for i in range(count):
            where = "sub" if cls == "dog" and i % 2 else ""
            with open(os.path.join(root, cls, where, f"{cls}{i:02d}.jpg"), "wb") as f:
                f.write(rng.bytes(int(rng.integers(1, 3000))))
        if count:
            with open(os.path.join(root, cls, "notes.txt"), "w") as f:
                f.write("not an image")
    return root, "s3://files/train"


def _pipe(batch_size=3, checkpoint=None, **reader):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=11, enable_checkpointing=True,
                  checkpoint=checkpoint)
    def pipe():
        data, label = fn.readers.file(name="r", **reader)
        return data, label
    p = pipe()
    p.build()
    return p


def _run(p, iterations):
    out = []
    for _ in range(iterations):
        data, label = p.run()
        out.append([(bytes(np.asarray(data.at(i))), int(np.asarray(label.at(i))[0]), data.source_info(i))
                    for i in range(len(data))])
    return out


@pytest.mark.parametrize("reader", [
    {},
    {"random_shuffle": True, "initial_fill": 5},
    {"num_shards": 3, "shard_id": 1, "pad_last_batch": True},
    {"shuffle_after_epoch": True, "num_shards": 2, "shard_id": 0},
    {"dir_filters": ["[cd]*"], "file_filters": ["*.jpg", "*.txt"]},
])
def test_file_root_as_on_local_disk(dataset, reader):
    local, url = dataset
    on_disk, on_s3 = _pipe(file_root=local, **reader), _pipe(file_root=url, **reader)
    assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
    expected = _run(on_disk, 12)
    assert _run(on_s3, 12) == expected
    assert {s for batch in expected for _, _, s in batch} >= {"cat/cat00.jpg"}  # relative names, as DALI gives


def test_objects_directly_under_the_root_are_classes_of_their_own(s3_server):  # noqa: F811
    """As in DALI's readers over S3 (on local disk such files are no samples): samples in key
    order, labels by the order in which their classes first come."""
    root = s3_server.bucket("flat")
    for name in ("a0/h.jpg", "aaa.jpg", "b1.jpg", "b1/f1.jpg", "b1/f0.jpg", "b5/only.txt", "c2/i.jpg",
                 "c2/deeper/g.jpg", "mmm.jpg", "zzz.txt"):
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as f:
            f.write(name)
    p = _pipe(batch_size=7, file_root="s3://flat")
    assert [(d.decode(), lbl, s) for d, lbl, s in _run(p, 1)[0]] == [
        (n, lbl, n) for n, lbl in [("a0/h.jpg", 0), ("aaa.jpg", 1), ("b1.jpg", 2), ("b1/f0.jpg", 3),
                                   ("b1/f1.jpg", 3), ("c2/i.jpg", 4), ("mmm.jpg", 5)]]
    filtered = _pipe(batch_size=3, file_root="s3://flat", dir_filters=["b*"])
    assert [(s, lbl) for _, lbl, s in _run(filtered, 1)[0]] == [("b1.jpg", 0), ("b1/f0.jpg", 1), ("b1/f1.jpg", 1)]


def test_file_list_and_files(dataset, s3_server, tmp_path):  # noqa: F811
    local, url = dataset
    lines = ["dog/sub/dog01.jpg 3", "cat/cat02.jpg 1", f"{url}/fox/fox03.jpg 9"]
    text = "\n".join(lines) + "\n"
    (tmp_path / "list.txt").write_text(text)
    (tmp_path / "local.txt").write_text(text.replace(url, local))
    with open(os.path.join(local, "list.txt"), "w") as f:
        f.write(text)
    expected = _run(_pipe(file_root=local, file_list=str(tmp_path / "local.txt")), 2)
    assert [lbl for batch in expected for _, lbl, _ in batch] == [3, 1, 9, 3, 1, 9]
    # a local list of keys relative to file_root (and a whole URL), and the same list as an object
    as_url = [[(d, lbl, s.replace(local, url)) for d, lbl, s in batch] for batch in expected]
    assert _run(_pipe(file_root=url, file_list=str(tmp_path / "list.txt")), 2) == as_url
    assert _run(_pipe(file_list=f"{url}/list.txt"), 2) == as_url
    names = ["fox/fox00.jpg", "cat/cat06.jpg"]
    files = _run(_pipe(batch_size=2, file_root=url, files=names, labels=[4, 2]), 1)[0]
    assert [(d, lbl, s) for d, lbl, s in files] == [
        (open(os.path.join(local, n), "rb").read(), lbl, n) for n, lbl in zip(names, [4, 2])]
    urls = [f"{url}/{n}" for n in names]
    assert [d for d, _, _ in _run(_pipe(batch_size=2, files=urls), 1)[0]] == [d for d, _, _ in files]
    with pytest.raises(ValueError, match="mix URLs and local paths"):
        _pipe(batch_size=2, files=[urls[0], os.path.join(local, names[1])])


def test_checkpoint_resumes_exactly(dataset):
    _, url = dataset
    reader = {"file_root": url, "random_shuffle": True, "initial_fill": 4}
    reference = _run(_pipe(**reader), 9)
    first = _pipe(**reader)
    head = _run(first, 4)
    restored = _pipe(checkpoint=first.checkpoint(), **reader)
    assert head + _run(restored, 5) == reference


def test_credentials_and_endpoint_from_the_aws_profile_files(dataset, s3_server, tmp_path, monkeypatch):  # noqa: F811
    local, url = dataset
    (tmp_path / "config").write_text(f"[profile data]\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n")
    (tmp_path / "credentials").write_text(f"[data]\naws_access_key_id = {os.environ['AWS_ACCESS_KEY_ID']}\n"
                                          f"aws_secret_access_key = {os.environ['AWS_SECRET_ACCESS_KEY']}\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_PROFILE", "data")
    assert _run(_pipe(file_root=url), 2) == _run(_pipe(file_root=local), 2)


def test_missing_object_names_url_and_reader(dataset):
    _, url = dataset
    p = _pipe(batch_size=2, file_root=url, files=["cat/cat00.jpg", "cat/nope.jpg"])
    with pytest.raises(RuntimeError, match=r"readers\.file.*'s3://files/train/cat/nope\.jpg'.*no such object"):
        p.run()


def test_missing_bucket_and_denied_credentials(dataset, s3_server, monkeypatch):  # noqa: F811
    with pytest.raises(RuntimeError, match=r"readers\.file.*cannot list 's3://no-such-bucket/train'"):
        _pipe(file_root="s3://no-such-bucket/train")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    monkeypatch.setenv("PENSTOCK_OBJECT_RETRIES", "0")
    with pytest.raises(RuntimeError, match=r"readers\.file.*cannot list 's3://files/train'.*(denied|403)"):
        _pipe(file_root=dataset[1])


def test_on_error_skip_replaces_missing_objects(dataset):
    _, url = dataset
    names = ["cat/cat00.jpg", "cat/gone.jpg", "cat/cat01.jpg", "cat/cat02.jpg"]
    p = _pipe(batch_size=3, file_root=url, files=names, on_error="skip")
    with pytest.warns(RuntimeWarning, match="gone.jpg"):
        batch = _run(p, 1)[0]
    assert [s for _, _, s in batch] == ["cat/cat00.jpg", "cat/cat01.jpg", "cat/cat02.jpg"]
    assert [s["source"] for s in p.skipped_samples] == ["cat/gone.jpg"]


class _BadServer:
    """A loopback server that answers nothing (``mode="silent"``) or drops every connection at once."""

    def __init__(self, mode: str):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.mode, self.held, self.stopped = mode, [], False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            if self.mode == "silent":
                self.held.append(conn)
            else:
                conn.close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.stopped = True
        self.thread.join()
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("mode, reason", [("silent", "timed out|timeout|Timeout"),
                                          ("drop", "connection|Connection|error")])
def test_unresponsive_server_fails_in_bounded_time(s3_server, monkeypatch, mode, reason):  # noqa: F811
    bad = _BadServer(mode)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", bad.endpoint)
        monkeypatch.setenv("PENSTOCK_OBJECT_TIMEOUT", "1")
        monkeypatch.setenv("PENSTOCK_OBJECT_RETRIES", "1")
        start = time.monotonic()
        p = _pipe(batch_size=2, files=["s3://files/train/cat/cat00.jpg", "s3://files/train/cat/cat01.jpg"])
        with pytest.raises(RuntimeError, match=rf"readers\.file.*'s3://files/train/cat/cat00\.jpg'.*({reason})"):
            p.run()
        assert time.monotonic() - start < 30
    finally:
        bad.close()


def test_cache_serves_later_epochs(s3_server, tmp_path, monkeypatch):  # noqa: F811
    local = os.path.join(s3_server.bucket("cached"), "c")
    os.makedirs(local)
    for i in range(6):
        with open(os.path.join(local, f"{i}.jpg"), "wb") as f:
            f.write(bytes([i]) * 1000)
    monkeypatch.setenv("PENSTOCK_OBJECT_CACHE", str(tmp_path / "cache"))
    first = _run(_pipe(batch_size=3, file_root="s3://cached"), 2)  # a batch is handed out once cached
    for i in range(6):  # later epochs are served from the cache: the bucket may lose the objects
        os.remove(os.path.join(local, f"{i}.jpg"))
    again = _run(_pipe(batch_size=6, files=[f"s3://cached/c/{i}.jpg" for i in range(6)]), 1)[0]
    assert [d for d, _, _ in again] == [d for batch in first for d, _, _ in batch] == [bytes([i]) * 1000
                                                                                        for i in range(6)]


def test_cache_keeps_within_its_bound_least_recently_used_out(tmp_path):
    from penstock.operators._object_cache import ObjectCache
    cache = ObjectCache(str(tmp_path), 4500)
    for i in range(4):
        cache.put(f"s3://b/{i}", bytes([i]) * 1000)
    assert cache.get("s3://b/0") == bytes([0]) * 1000  # 0 is now the most recently used
    cache.put("s3://b/4", b"4" * 1000)
    assert cache.get("s3://b/1") is None and cache.get("s3://b/0") is not None
    assert sorted(os.path.getsize(tmp_path / n) for n in os.listdir(tmp_path)) == [1000] * 4
    reopened = ObjectCache(str(tmp_path), 2500)  # a new process over the same folder, with a smaller bound
    reopened.put("s3://b/5", b"5" * 1000)
    assert reopened.total <= 2500 and len(os.listdir(tmp_path)) == 2
    assert reopened.get("s3://b/5") == b"5" * 1000
    assert cache.put("s3://b/big", b"x" * 5000) is None and cache.get("s3://b/big") is None  # over the bound: not kept


def test_a_pipeline_collected_on_the_object_stores_thread_shuts_down_at_once(dataset, monkeypatch):
    """The garbage collector may finalize a pipeline on the event loop's thread while the pipeline's
    reader waits for GETs that only that thread would answer: its shutdown stops those waits instead
    of waiting for its threads (for the joins' 10 s each)."""
    import asyncio
    import gc

    from penstock.operators import _object_store as objects
    asked = threading.Event()

    async def never_answered(urls):
        asked.set()
        await asyncio.Event().wait()
    monkeypatch.setattr(objects, "_get_all", never_answered)
    before = set(threading.enumerate())  # other tests' pipelines may still be alive
    holder = [_pipe(file_root=dataset[1])]
    holder[0].schedule_run()
    assert asked.wait(10)
    time.sleep(0.2)  # the reader's thread is waiting for them
    stages = [t for t in set(threading.enumerate()) - before
              if t.name.startswith(("penstock-stage", "penstock-reader"))]
    took, done = [], threading.Event()

    def collect_here():
        start = time.perf_counter()
        holder.clear()
        gc.collect()
        took.append(time.perf_counter() - start)
        done.set()
    objects.event_loop().loop.call_soon_threadsafe(collect_here)
    assert done.wait(60)
    assert took[0] < 3  # not the joins' 10 s
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in stages) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stages and not any(t.is_alive() for t in stages)  # and the pipeline's threads ended
