"""Element-wise math on Tensors and Batches (``ndd.math.sqrt(x)`` ...): ``penstock.math``'s
functions, each call recorded and evaluated like any operator's."""
from __future__ import annotations

from typing import Any, Callable

from ... import math as _graph_math
from . import _call

__all__ = list(_graph_math.__all__)


def _dynamic(name: str) -> Callable[..., Any]:
    build = getattr(_graph_math, name)

    def f(*operands: Any) -> Any:
        return _call.apply(build, *(_call.operand(x) for x in operands))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = build.__doc__
    return f


for _name in __all__:
    globals()[_name] = _dynamic(_name)
del _name
