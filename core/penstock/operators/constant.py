"""Constants: ``fn.constant``, ``types.Constant`` and constants promoted to graph inputs."""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .. import _hooks
from .._graph import make_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, to_dali_type, to_numpy_type

CONSTANT = OpSchema(
    "Constant", "Produces the same tensor for every sample.",
    args=[Arg("fdata", ArgType.FLOAT_LIST, optional=True, doc="float contents (flattened)"),
          Arg("idata", ArgType.INT_LIST, optional=True, doc="integer contents (flattened)"),
          Arg("shape", ArgType.INT_LIST, optional=True, doc="shape; default: 1-D of the data's length"),
          Arg("dtype", ArgType.DTYPE, optional=True, doc="output type; default FLOAT for fdata, INT32 for idata"),
          Arg("layout", ArgType.LAYOUT, "", doc="output layout")],
    min_inputs=0, devices=("cpu", "gpu"), hidden=True)


def _value_array(value: Any, dtype: DALIDataType | None) -> np.ndarray:
    """The spec's conversion of constant values (float64 -> float32, int64 -> int32 unless pinned)."""
    if isinstance(value, enum.Enum):
        return np.array(int(value), np.int32)
    if isinstance(value, (list, tuple)) and not value:
        return np.zeros((0,), to_numpy_type(dtype) if dtype is not None else np.float32)
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":  # DALI's words: the first value that is not a number
        items = value if isinstance(value, (list, tuple)) else [value]
        odd = next((x for x in items if not isinstance(x, (bool, int, float, np.number, np.bool_))), value)
        raise TypeError(f"Unexpected type: {type(odd)}")
    if dtype is not None:
        return arr.astype(to_numpy_type(dtype))
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype in (np.int64, np.uint64):
        narrow = np.int32 if arr.dtype == np.int64 else np.uint32
        if arr.size and (arr.max() > np.iinfo(narrow).max or arr.min() < np.iinfo(narrow).min):
            raise ValueError(f"constant value {value!r} does not fit {np.dtype(narrow).name}; "
                             "give dtype=INT64 explicitly")
        return arr.astype(narrow)
    return arr


def constant_node(value: Any, dtype: Any = None, shape: Any = None, layout: Any = None,
                  device: Any = None, **kwargs: Any) -> Any:
    dt = None if dtype is None else to_dali_type(dtype)
    arr = _value_array(value, dt)
    if shape is not None:
        shape = tuple(int(s) for s in (shape if isinstance(shape, (list, tuple)) else [shape]))
        # a single value fills the whole shape (as the constant operator does)
        arr = np.full(shape, arr.reshape(-1)[0], arr.dtype) if arr.size == 1 else arr.reshape(shape)
    dt = to_dali_type(arr.dtype)
    is_float = arr.dtype.kind == "f"
    args = {"fdata" if is_float else "idata": arr.reshape(-1).tolist(), "shape": list(arr.shape),
            "dtype": dt, "layout": layout, "device": device or "cpu", **kwargs}
    if arr.dtype == np.bool_:
        args["idata"] = [int(v) for v in arr.reshape(-1)]
    return make_op(CONSTANT, (), args)[0]


_hooks.install(constant_node=constant_node)  # constants where the core expects a DataNode


@register(CONSTANT, device=("cpu", "gpu"))
class Constant(Operator):
    def setup(self) -> None:
        fdata, idata = self.args["fdata"], self.args["idata"]
        if (fdata is None) == (idata is None):
            raise ValueError(f"{self.label}: exactly one of 'fdata' and 'idata' must be given")
        data = fdata if fdata is not None else idata
        dtype = self.args["dtype"]  # not `or`: UINT8 is 0, so a falsy enum member
        if dtype is None:
            dtype = DALIDataType.FLOAT if fdata is not None else DALIDataType.INT32
        shape = self.args["shape"] if self.args["shape"] is not None else (len(data),)
        arr = np.asarray(data, dtype=np.float64 if fdata is not None else np.int64)
        if arr.size == 1 and int(np.prod(shape)) != 1:
            arr = np.full(tuple(shape), arr.reshape(-1)[0])
        try:
            self.value = arr.astype(to_numpy_type(dtype)).reshape(tuple(shape))
        except ValueError:
            raise ValueError(f"{self.label}: {arr.size} values do not fill shape {tuple(shape)}") from None
        self._cache: dict[int, Any] = {}

    def run(self, ws):
        from ..tensors import TensorListCPU
        n = ws.batch_size
        if n not in self._cache:  # outputs are read-only to consumers, so one batch is reused
            batch = np.ascontiguousarray(np.broadcast_to(self.value, (n,) + self.value.shape))
            batch.flags.writeable = False
            self._cache[n] = ws.from_host(TensorListCPU(batch, self.args["layout"]))
        return [self._cache[n]]
