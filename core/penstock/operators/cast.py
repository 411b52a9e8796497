"""``cast`` and ``cast_like``: type conversion that rounds half away from zero and saturates."""
from __future__ import annotations

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import to_numpy_type

CAST = OpSchema("Cast", "Converts to another type (floats round half away from zero; out-of-range values saturate).",
                args=[Arg("dtype", ArgType.DTYPE, doc="output type")], devices=("cpu", "gpu"))
CAST_LIKE = OpSchema("CastLike", "Converts the first input to the type of the second.",
                     min_inputs=2, devices=("cpu", "gpu"))


def cast_batch(ws, src, dtype, crop_conversion: bool = False):
    """src converted to dtype; with crop_conversion as crop and slice convert their data (DALI):
    floats become integers by truncation toward zero, and float16 saturates to +-65504."""
    out = ws.new_batch(src._shapes, to_numpy_type(dtype), src._layout, src._source_info)
    ws.kernels.cast(ws.pool, src._buf, int(src.dtype), out._buf, int(dtype), crop_conversion)
    return out


@register(CAST, device=("cpu", "gpu"))
class Cast(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        if src.dtype == self.args["dtype"]:
            return [src]
        return [cast_batch(ws, src, self.args["dtype"])]


@register(CAST_LIKE, device=("cpu", "gpu"))
class CastLike(Operator):
    def run(self, ws):
        src, ref = ws.inputs
        return [src if src.dtype == ref.dtype else cast_batch(ws, src, ref.dtype)]
