"""DataNode: a symbolic batch flowing between operators while the graph is defined."""
from __future__ import annotations

from typing import Any

from . import _hooks


class DataNode:
    """An output of an operator in a pipeline graph.

    Supports Python arithmetic, comparison and bitwise operators (element-wise, with DALI's type
    promotion), indexing and slicing per sample, and ``.gpu()``/``.cpu()`` transfers.
    """
    __module__ = "penstock.pipeline"

    def __init__(self, name: str, device: str = "cpu", source: Any = None, index: int = 0):
        self.name = name
        self.device = device
        self.source = source
        self.index = index
        self.dtype = None
        self.ndim = None
        self.layout = None

    def __repr__(self) -> str:
        src = self.source.name if self.source is not None else ""
        return f'DataNode(name="{self.name}", device="{self.device}", source="{src}", index="{self.index}")'

    __str__ = __repr__

    def __bool__(self) -> bool:
        # DALI's words (code written for it matches them), then what penstock's conditionals convert
        raise TypeError('"DataNode" was used in conditional context - it might have been used in truth evaluation '
                        "for `if` statement, logical expression or cast to a boolean. To use conditional execution "
                        "via `if` statements you need to specify `enable_conditionals=True` in "
                        "`@nvidia.dali.pipeline_def` decorator. You can read more about conditional execution in "
                        "specific section of the Pipeline documentation. Bool conversion can be achieved with the "
                        f"`cast` operator. ({self!r} stands for a whole batch; enable_conditionals converts `if`, "
                        "conditional expressions and and/or/not, while loops and assertions on DataNodes stay "
                        "unsupported, and min()/max() need penstock.math.min/max.)")

    # Not iterable (it stands for a whole batch), and not an ``Iterable`` either: code tells a node
    # from a list of nodes that way. None also stops iter() from falling back on __getitem__.
    __iter__ = None

    def __hash__(self) -> int:
        return id(self)

    # -- transfers and properties (operators: installed by penstock.operators, see _hooks)
    def gpu(self) -> "DataNode":
        return self if self.device == "gpu" else _hooks.to_device(self, "gpu")

    def cpu(self) -> "DataNode":
        return self if self.device == "cpu" else _hooks.to_device(self, "cpu")

    def shape(self, dtype: Any = None, device: str = "cpu") -> "DataNode":
        return _hooks.shapes(self, dtype=dtype, device=device)

    def property(self, key: str, device: str = "cpu") -> "DataNode":
        return _hooks.get_property(self, key=key, device=device)

    def source_info(self, device: str = "cpu") -> "DataNode":
        return self.property("source_info", device)

    # -- indexing
    def __getitem__(self, index: Any) -> "DataNode":
        return _hooks.subscript(self, index)

    # -- arithmetic (see operators/arithmetic.py)
    def _bin(self, op: str, other: Any, reflected: bool = False) -> "DataNode":
        return _hooks.binary(op, other, self) if reflected else _hooks.binary(op, self, other)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._bin("mod", o, True)
    def __pow__(self, o): return self._bin("pow", o)
    def __rpow__(self, o): return self._bin("pow", o, True)
    def __eq__(self, o): return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __and__(self, o): return self._bin("bitand", o)
    def __rand__(self, o): return self._bin("bitand", o, True)
    def __or__(self, o): return self._bin("bitor", o)
    def __ror__(self, o): return self._bin("bitor", o, True)
    def __xor__(self, o): return self._bin("bitxor", o)
    def __rxor__(self, o): return self._bin("bitxor", o, True)
    def __lshift__(self, o): return self._bin("shl", o)
    def __rlshift__(self, o): return self._bin("shl", o, True)
    def __rshift__(self, o): return self._bin("shr", o)
    def __rrshift__(self, o): return self._bin("shr", o, True)

    def __neg__(self):
        return _hooks.unary("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _hooks.unary("abs", self)

    def __invert__(self):
        return _hooks.unary("bitnot", self)


class newaxis:
    """Inserts a unit dimension when indexing (``node[newaxis]``, ``node[:, newaxis("C")]``)."""

    def __init__(self, name: str | None = None):
        self.name = name
