"""The interpreter exits cleanly with reads from an object store in flight: the requests asked for
before the exit are answered first, no new one starts, and the client's threads are out of
Python before it finalizes (one taking the GIL back then is ended there, which aborts the
process). Against a real S3 server on loopback."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock.operators import _object_store as objects

# daemon threads reading ahead (whole objects in batches, and ranged reads of a file object)
# when the main thread ends
EXITING_MIDWAY = """
import sys, threading, time
from penstock.operators import _object_store as objects
urls = [f"s3://exiting/o{i}.bin" for i in range(400)]

def batches():
    reads, k = objects.ObjectReads("readers.test"), 0
    while True:
        reads.prefetch(urls[k % 400:k % 400 + 64])
        if len(reads.pending) > 4:
            reads.read(reads.pending[0][0])
        k += 64

def ranges(k):
    while True:
        f = objects.open_file("readers.test", urls[k % 400], chunk=4096)
        while f.read(4096):
            pass
        k += 1

threading.Thread(target=batches, daemon=True).start()
for k in range(3):
    threading.Thread(target=ranges, args=(100 * k,), daemon=True).start()
time.sleep(0.3)
print("requests in flight at exit:", objects.requests_in_flight())
"""


def test_exit_with_reads_in_flight(s3_server):  # noqa: F811
    root = s3_server.bucket("exiting")
    rng = np.random.default_rng(0)
    for i in range(400):
        with open(os.path.join(root, f"o{i}.bin"), "wb") as f:
            f.write(rng.bytes(20000))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), PYTHONFAULTHANDLER="1")
    for _ in range(4):  # the abort came at about one exit in three
        done = subprocess.run([sys.executable, "-c", EXITING_MIDWAY], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "requests in flight at exit" in done.stdout and "Fatal" not in done.stderr


def test_settle_answers_what_was_asked_and_refuses_the_rest():
    """With a thread submitting all along: every request submitted before the exit is answered,
    later ones never start, and the loop's thread has ended."""
    loop = objects._Loop()
    submitted, stop = [], threading.Event()

    def submitting():
        while not stop.is_set():
            submitted.append(loop.submit(asyncio.sleep(0.005, "answered")))

    thread = threading.Thread(target=submitting, daemon=True)
    thread.start()
    time.sleep(0.1)
    objects._settle(loop, bound=5)
    stop.set()
    thread.join()
    assert loop.closing and not loop.thread.is_alive() and loop.loop.calling == 0
    assert all(f.done() for f in submitted)
    answered = [not f.cancelled() for f in submitted]
    count = sum(answered)  # those submitted before the exit began, then those refused
    assert count and answered == [True] * count + [False] * (len(submitted) - count)
    assert all(f.result() == "answered" for f in submitted[:count])
    with pytest.raises(RuntimeError, match=r"readers\.test: reading 'x' was cancelled \(its pipeline shut down, or the interpreter is exiting\)"):
        objects.wait("readers.test", "'x'", loop.submit(asyncio.sleep(0)))
    loop.loop.close()
