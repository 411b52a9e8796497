"""The thread-local state of graph definition: the stack of current pipelines (``with pipe:``,
``Pipeline.current()``), and the debug-mode pipeline whose operators run as they are called."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

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


def eager_pipeline() -> Any:
    """The debug-mode pipeline running operators eagerly on this thread (``run_op``), or None."""
    return getattr(_local, "eager", None)


@contextlib.contextmanager
def eager(pipe: Any) -> Iterator[None]:
    """Operators created inside run eagerly in ``pipe`` (None: they are added to the graph)."""
    saved = eager_pipeline()
    _local.eager = pipe
    try:
        yield
    finally:
        _local.eager = saved
