"""When operator calls run: ``EvalMode`` (a context manager, per thread)."""
from __future__ import annotations

import enum
import threading
from typing import Any

__all__ = ["EvalMode"]


class EvalMode(enum.Enum):
    """How soon an operator call runs, from the laziest to the most synchronous.

    * ``deferred``: when a result is read; the pending calls it depends on run together, as one
      graph, and calls whose results are never read never run.
    * ``eager`` (``default``): handed at once to the context's worker thread, which runs what has
      been handed to it in order while the caller goes on; reading a result waits for it.
    * ``sync_cpu``: before the call returns (GPU work is queued on the context's stream).
    * ``sync_full``: before the call returns, GPU work finished too.
    """
    deferred = 1
    eager = 2
    sync_cpu = 3
    sync_full = 4
    default = 2  # an alias of eager

    def __enter__(self) -> "EvalMode":
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack().pop()

    @staticmethod
    def current() -> "EvalMode":
        return _stack()[-1]


_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = [EvalMode.default]
    return _local.stack
