"""Per-sample parameters of the transforms, in either mode.

A transform is written once against ``Params``: the images' sizes, random draws and the arguments
built from them are DataNodes in a pipeline (``GraphParams``: the graph computes them per
iteration) and numpy arrays of one value per sample in the dynamic mode (``DynamicParams``:
computed at once, handed to the operators as Batches). Both kinds of value take Python's
arithmetic operators alike, so the formulas of a transform read the same for both.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import fn as _fn
from ... import math as _graph_math
from ...data_node import DataNode
from ...types import DALIDataType
from .. import dynamic as ndd
from ..dynamic import Batch, Tensor

_TYPES = {"float32": DALIDataType.FLOAT, "int32": DALIDataType.INT32}

LAYOUTS = ("HWC", "CHW")


class Params:
    """What a transform asks of its mode: ``ops`` is its operator namespace (``fn`` or ``ndd``) and
    ``math`` its element-wise math (``penstock.math`` or ``ndd.math``)."""
    ops: Any
    math: Any
    concrete: bool  # whether per-sample values are known now (numpy) or computed by the graph

    def __init__(self, x: Any, layout: str):
        if layout not in LAYOUTS:
            raise ValueError(f"images must be laid out HWC or CHW, got {layout!r}")
        self._x = x
        self.layout = layout
        self.h_axis, self.w_axis = layout.index("H"), layout.index("W")
        self.c_axis = layout.index("C")

    @staticmethod
    def select(condition: Any, then: Any, otherwise: Any) -> Any:
        """``then`` where ``condition`` holds, else ``otherwise`` (per sample)."""
        return condition * then + (1 - condition) * otherwise

    def plane(self, x: Any, c: int) -> Any:
        """Channel ``c`` of every image, keeping the channel dimension (of extent 1)."""
        index = tuple(slice(c, c + 1) if axis == self.c_axis else slice(None) for axis in range(3))
        return x.slice[index] if isinstance(x, Batch) else x[index]


class GraphParams(Params):
    ops = _fn
    math = _graph_math
    concrete = False

    def __init__(self, x: DataNode, layout: str):
        super().__init__(x, layout)
        self._shape = _fn.shapes(x, dtype=_TYPES["int32"])

    def size(self) -> tuple[Any, Any]:
        """(height, width) of every sample."""
        return self._shape[self.h_axis], self._shape[self.w_axis]

    def channels(self) -> Any:
        return self._shape[self.c_axis]

    def uniform(self, low: float, high: float) -> Any:
        return _fn.random.uniform(range=(low, high))

    def coin(self, p: float) -> Any:
        return _fn.random.coin_flip(probability=p, dtype=_TYPES["int32"])

    def arg(self, value: Any, dtype: str = "float32") -> Any:
        """A per-sample value as an operator argument."""
        return _fn.cast(value, dtype=_TYPES[dtype]) if isinstance(value, DataNode) else value

    def vector(self, *values: Any) -> Any:
        """Per-sample float vectors of the given per-sample values (or constants)."""
        nodes = [_fn.cast(v, dtype=_TYPES["float32"]) if isinstance(v, DataNode)
                 else _fn.constant(fdata=[float(v)], shape=[]) for v in values]
        return _fn.stack(*nodes)

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return _graph_math.max(a, b)

    @staticmethod
    def floor_int(a: Any) -> Any:
        """The per-sample values rounded down, as integers."""
        return _fn.cast(_graph_math.floor(a), dtype=_TYPES["int32"])

    def where_per_sample(self, condition: Any, then: Any, otherwise: Any) -> Any:
        """``then(x)`` for the samples where ``condition`` holds, ``otherwise(x)`` for the rest:
        a data-dependent branch (the pipeline needs ``enable_conditionals=True``)."""
        from ..._conditionals import _scope
        from ..._conditionals._runtime import if_exp
        if not _scope.enabled():
            raise RuntimeError("a per-image random branch (RandomApply) in a pipeline needs the pipeline defined "
                               "with enable_conditionals=True")
        predicate = _fn.cast(condition, dtype=DALIDataType.BOOL)
        return if_exp(predicate, lambda: then(self._x), lambda: otherwise(self._x))


class DynamicParams(Params):
    ops = ndd
    math = ndd.math
    concrete = True

    def __init__(self, x: Any, layout: str):
        super().__init__(x, layout)
        self._batch = isinstance(x, Batch)
        self._shapes = np.array(x.shape if self._batch else [x.shape], np.int64)

    @property
    def n(self) -> int:
        return len(self._shapes)

    def size(self) -> tuple[np.ndarray, np.ndarray]:
        return self._shapes[:, self.h_axis], self._shapes[:, self.w_axis]

    def channels(self) -> np.ndarray:
        return self._shapes[:, self.c_axis]

    def _values(self, data: Any) -> np.ndarray:
        return np.asarray(ndd.as_tensor(data)) if self._batch else np.asarray(data)[None]

    def uniform(self, low: float, high: float) -> np.ndarray:
        return self._values(ndd.random.uniform(batch_size=self.n if self._batch else None, range=(low, high)))

    def coin(self, p: float) -> np.ndarray:
        return self._values(ndd.random.coin_flip(batch_size=self.n if self._batch else None, probability=p,
                                                 dtype=ndd.int32))

    def arg(self, value: Any, dtype: str = "float32") -> Any:
        if isinstance(value, np.ndarray):
            value = value.astype(dtype)
            return ndd.batch(list(value)) if self._batch else ndd.tensor(value[0])
        return value

    def vector(self, *values: Any) -> Any:
        rows = np.stack([np.broadcast_to(np.asarray(v, np.float32), (self.n,)) for v in values], axis=1)
        return ndd.batch(list(rows)) if self._batch else ndd.tensor(rows[0])

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    @staticmethod
    def floor_int(a: Any) -> Any:
        return np.floor(a).astype(np.int64)

    def where_per_sample(self, condition: np.ndarray, then: Any, otherwise: Any) -> Any:
        """``then()`` for the samples where ``condition`` holds, ``otherwise()`` for the rest, each
        called on those samples only (as ``x`` arguments); results merged in sample order."""
        chosen = np.asarray(condition, bool).reshape(-1)
        if chosen.all():
            return then(self._x)
        if not chosen.any():
            return otherwise(self._x)
        picked, rest = np.nonzero(chosen)[0].tolist(), np.nonzero(~chosen)[0].tolist()
        yes, no = then(self._x.select(picked)), otherwise(self._x.select(rest))
        merged = [None] * self.n
        for k, t in zip(picked, yes.tensors):
            merged[k] = t
        for k, t in zip(rest, no.tensors):
            merged[k] = t
        return ndd.batch(merged, layout=yes.layout)


def params_for(x: Any, layout: str) -> Params:
    if isinstance(x, DataNode):
        return GraphParams(x, layout)
    if isinstance(x, (Tensor, Batch)):
        return DynamicParams(x, layout)
    raise TypeError(f"expected images as a DataNode or a dynamic-mode Tensor or Batch, got {type(x).__name__}")

