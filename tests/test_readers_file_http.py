"""readers.file over plain HTTP: files served by a loopback ``http.server`` (a folder the test makes)
read by URL give the bytes, labels and names the same reader gives over the folder on local disk; a
prefix cannot be listed over plain HTTP, and the error says so, naming the reader and the URL."""
from __future__ import annotations

import functools
import http.server
import os
import threading

import numpy as np
import pytest

from penstock import fn, pipeline_def

import obstore  # noqa: E402,F401 - the s3 extra, installed wherever the tests run


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder of class folders, a file list of paths relative to it; its loopback URL."""
    root = tmp_path_factory.mktemp("www")
    rng = np.random.default_rng(5)
    names = [f"{cls}/{cls}{i}.jpg" for cls in ("cat", "dog") for i in range(3)]
    for name in names:
        os.makedirs(root / os.path.dirname(name), exist_ok=True)
        (root / name).write_bytes(rng.bytes(int(rng.integers(1, 5000))))
    (root / "list.txt").write_text("".join(f"{n} {k}\n" for k, n in enumerate(names)))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        # keep-alive: connections are reused; closed after each reply, a batch reconnects at once past
        # socketserver's listen backlog of 5, and a dropped connect waits out a 1 s SYN retransmit
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield str(root), f"http://127.0.0.1:{server.server_address[1]}", names
    server.shutdown()
    server.server_close()
    thread.join()


def _read(batch_size=4, iterations=3, **reader):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=2)
    def pipe():
        return tuple(fn.readers.file(name="r", **reader))
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        data, label = p.run()
        out += [(bytes(np.asarray(data.at(i))), int(np.asarray(label.at(i))[0]), data.source_info(i))
                for i in range(len(data))]
    return out, p.reader_meta("r")


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 3},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True}])
def test_files_by_url_as_on_local_disk(served, reader):
    local, url, names = served
    expected, meta = _read(files=[f"{local}/{n}" for n in names], labels=list(range(6)), **reader)
    assert {d for d, _, _ in expected} == {open(f"{local}/{n}", "rb").read() for n in names}
    got, got_meta = _read(files=[f"{url}/{n}" for n in names], labels=list(range(6)), **reader)
    assert got_meta == meta
    assert got == [(d, lbl, s.replace(local, url)) for d, lbl, s in expected]
    # keys relative to an http file_root, and a file list fetched from the server
    assert _read(file_root=url, files=names, labels=list(range(6)), **reader)[0] == _read(
        file_root=local, files=names, labels=list(range(6)), **reader)[0]
    assert _read(file_list=f"{url}/list.txt", **reader)[0] == [
        (d, lbl, s) for d, lbl, s in _read(file_list=f"{local}/list.txt", **reader)[0]]


def test_listing_over_plain_http_is_refused_clearly(served, monkeypatch):
    _, url, _ = served
    monkeypatch.setenv("PENSTOCK_OBJECT_RETRIES", "0")
    with pytest.raises(RuntimeError, match=rf"readers\.file \('r'\): cannot list '{url}/cat': .*plain HTTP server "
                                           r"cannot list a folder.*'files' or a 'file_list'"):
        _read(file_root=f"{url}/cat")


def test_missing_file_names_reader_and_url(served):
    _, url, names = served
    with pytest.raises(RuntimeError, match=rf"readers\.file.*'{url}/cat/gone\.jpg'.*no such object"):
        _read(files=[f"{url}/{names[0]}", f"{url}/cat/gone.jpg"], batch_size=2, iterations=1)
