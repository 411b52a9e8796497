"""The thread-local stack of current pipelines (``with pipe:``, ``Pipeline.current()``)."""
from __future__ import annotations

import threading
from typing import Any

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def current_pipeline() -> Any:
    s = _stack()
    return s[-1] if s else None


def push(pipe: Any) -> None:
    _stack().append(pipe)


def pop() -> Any:
    s = _stack()
    return s.pop() if s else None
