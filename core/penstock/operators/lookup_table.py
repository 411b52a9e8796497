"""``lookup_table``: maps integer values through a key -> value table (numpy over the batch on the
CPU, one launch on the GPU)."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, to_numpy_type
from .._batch import contiguous, empty_batch
from .crop import round_half_away

MAX_KEY = 0xFFFF

LOOKUP_TABLE = OpSchema(
    "LookupTable", "Replaces each integer value by its entry in the table keys -> values "
                   "(default_value for values without a key).",
    args=[Arg("keys", ArgType.INT_LIST, (), doc="integer keys in [0, 65535]"),
          Arg("values", ArgType.FLOAT_LIST, (), doc="value of each key"),
          Arg("default_value", ArgType.FLOAT, 0.0, doc="value of inputs that are not keys"),
          Arg("dtype", ArgType.DTYPE, DALIDataType.FLOAT, doc="output type")],
    devices=("cpu", "gpu"))


@register(LOOKUP_TABLE, device=("cpu", "gpu"))
class LookupTable(Operator):
    def setup(self):
        a = self.args
        keys, values = np.asarray(a["keys"], np.int64), np.asarray(a["values"], np.float64)
        if len(keys) != len(values):
            raise ValueError(f"{self.label}: {len(keys)} keys but {len(values)} values")
        if len(keys) and (keys.min() < 0 or keys.max() > MAX_KEY):
            raise ValueError(f"{self.label}: keys must lie in [0, {MAX_KEY}]")
        self.dtype = np.dtype(to_numpy_type(a["dtype"]))
        table = np.full((keys.max() + 1) if len(keys) else 0, a["default_value"], np.float64)
        table[keys] = values
        self.table = self._convert(table)
        self.default = self._convert(np.array([a["default_value"]]))[0]

    def _convert(self, v: np.ndarray) -> np.ndarray:
        """To the output type: integers rounded half away from zero and saturated."""
        if self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            v = np.clip(round_half_away(v), info.min, info.max)
        return v.astype(self.dtype)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src._buf.dtype.kind not in "iub":
            raise ValueError(f"{self.label}: the input must be of an integer type, got {src._buf.dtype}")
        total = int(src._volumes().sum()) if len(src) else 0
        if ws.gpu is not None:
            out = ws.new_batch(src._shapes.copy(), self.dtype, src._layout, src._source_info)
            ws.kernels.lookup_table(src._buf[:total], self.table, self.default, out._buf[:total])
            return [out]
        x = np.asarray(src._buf[:total]).astype(np.int64)
        inside = (x >= 0) & (x < len(self.table))
        out = empty_batch(src._shapes.copy(), self.dtype, src._layout, src._source_info)
        res = np.full(total, self.default, self.dtype)
        res[inside] = self.table[x[inside]]
        out._buf[:total] = res
        return [out]
