"""Metadata as data: ``shapes`` (``DataNode.shape()``) and ``get_property`` (``source_info``, ``layout``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _hooks
from .._graph import make_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from ..types import DALIDataType, to_numpy_type

SHAPES = OpSchema("Shapes", "The shape of each sample as a 1-D tensor.",
                  args=[Arg("dtype", ArgType.DTYPE, DALIDataType.INT64, doc="output type")], devices=("cpu", "gpu"),
                  deprecated=True, deprecation_note="Use DataNode.shape() instead.", hidden=True)
GET_PROPERTY = OpSchema("GetProperty", "A property of each sample ('source_info' or 'layout') as uint8 bytes.",
                        args=[Arg("key", ArgType.STR, doc="'source_info' or 'layout'")], devices=("cpu", "gpu"))



def shapes(node: Any, dtype: Any = None, device: str = "cpu") -> Any:
    return make_op(SHAPES, (node,), {"dtype": dtype, "device": device})[0]


def get_property(node: Any, key: str, device: str = "cpu") -> Any:
    return make_op(GET_PROPERTY, (node,), {"key": key, "device": device})[0]


_hooks.install(shapes=shapes, get_property=get_property)  # DataNode.shape() and .property()

# extents need a type that holds them exactly: no narrow integers (DALI's set)
SHAPE_TYPES = (DALIDataType.INT32, DALIDataType.UINT32, DALIDataType.INT64, DALIDataType.UINT64,
               DALIDataType.FLOAT, DALIDataType.FLOAT64)


def check_shape_type(op: Operator) -> None:
    """The ``dtype`` of an operator that outputs shapes is one of SHAPE_TYPES."""
    if op.args["dtype"] not in SHAPE_TYPES:
        raise ValueError(f"{op.label}: dtype {op.args['dtype'].name} is not supported "
                         f"({', '.join(t.name for t in SHAPE_TYPES)})")


@register(SHAPES, device=("cpu", "gpu"))
class Shapes(Operator):
    def setup(self) -> None:
        check_shape_type(self)

    def run(self, ws):
        src = ws.inputs[0]
        arr = src._shapes.astype(to_numpy_type(self.args["dtype"]))
        return [ws.from_host(TensorListCPU(arr.reshape(len(src), src.ndim())))]


@register(GET_PROPERTY, device=("cpu", "gpu"))
class GetProperty(Operator):
    def setup(self) -> None:
        if self.args["key"] not in ("source_info", "layout"):
            raise ValueError(f"{self.label}: unknown property '{self.args['key']}' (known: source_info, layout)")

    def run(self, ws):
        src = ws.inputs[0]
        if self.args["key"] == "source_info":
            values = src._source_info
        else:
            values = [src._layout] * len(src)
        return [ws.from_host(TensorListCPU([np.frombuffer(v.encode(), np.uint8) for v in values]))]
