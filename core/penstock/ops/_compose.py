"""``ops.Compose``: operator objects chained into one callable (the ops API only, as in DALI)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..data_node import DataNode


class _CompoundOp:
    """Calls each operator on the previous one's outputs; keyword arguments go to the first. Data
    produced on the CPU moves to the GPU before a GPU operator that reads it there."""

    def __init__(self, op_list: Sequence[Callable]):
        self._ops: list[Callable] = []
        for op in op_list:
            self._ops += op._ops if isinstance(op, _CompoundOp) else [op]

    def __call__(self, *inputs: DataNode, **kwargs: Any) -> Any:
        values = list(inputs)
        for op in self._ops:
            if getattr(op, "device", "cpu") == "gpu":
                on_host = getattr(getattr(op, "schema", None), "host_inputs", ())
                values = [v.gpu() if isinstance(v, DataNode) and v.device == "cpu" and i not in on_host else v
                          for i, v in enumerate(values)]
            out = op(*values, **kwargs)
            kwargs = {}
            values = list(out) if isinstance(out, (tuple, list)) else [out]
        return values[0] if len(values) == 1 else values


def Compose(op_list: Sequence[Callable]) -> Any:
    """A callable that applies ``op_list[0]``, then ``op_list[1]`` to its outputs, and so on (the
    operator itself when the list has one)."""
    if not op_list:
        raise ValueError("Compose needs at least one operator")
    return op_list[0] if len(op_list) == 1 else _CompoundOp(op_list)
