"""A child process of penstock's own that serves its parent over a socket pair.

Started by exec, not fork (the parent may hold a CUDA context, which a forked child cannot use), with
the parent's ``sys.path``. The child ends when its end of the pipe reads end-of-file: when the
parent asks (``stop``) and however the parent ends, SIGKILL included.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any, Iterator, NoReturn

_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
         "from {module} import {function}; {function}(int(sys.argv[2]))")


def start(module: str, function: str) -> tuple[subprocess.Popen, Connection]:
    """Runs ``module.function(fd)`` in a new Python process, ``fd`` its end of the pipe; returns the
    process and this end."""
    parent, child = socket.socketpair()
    boot = _BOOT.format(module=module, function=function)
    proc = subprocess.Popen([sys.executable, "-c", boot, json.dumps(sys.path), str(child.fileno())],
                            pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    child.close()
    return proc, Connection(parent.detach())


def stop(proc: subprocess.Popen, conn: Connection, send_lock: threading.Lock) -> None:
    """Asks the child to end (None through the pipe, under the lock of the pipe's sends), waits up to
    10 s for it, then kills it; closes this end."""
    try:
        with send_lock:
            conn.send(None)
    except (OSError, ValueError):  # gone already
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    conn.close()


# -- in the child ---------------------------------------------------------------------------------
def requests(conn: Connection) -> Iterator[Any]:
    """The parent's messages, until it asks this process to end (None) or its end of the pipe closes."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        yield message


def end() -> NoReturn:
    """Ends this process at once: no teardown of CUDA or of threads still at work, which could wait
    for the GPU or for each other."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
