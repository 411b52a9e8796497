"""DALI 2.x's dynamic mode (``import penstock.experimental.dynamic as ndd``): operators called
directly from Python on ``Tensor``s (one sample) and ``Batch``es, readers as objects.

Every operator of ``fn`` is a function here, generated from the registry (``ndd.resize``,
``ndd.decoders.image``, ``ndd.random.uniform`` ...). Calls are recorded and evaluated as
``EvalMode`` says (by default in the background, in order); pending calls run together through
the pipeline's executor, one native call or GPU launch per operator and batch, so this mode runs
the same kernels as a pipeline at the same cost. See ``_invocation`` for how.
"""

import sys as _sys

from ... import operators as _operators  # noqa: F401  (importing them declares every operator)
from . import _ops, _readers
from . import checkpoint, math, random  # noqa: F401
from ._batch import Batch, as_batch, batch
from ._device import Device, DeviceLike, device
from ._eval_context import EvalContext
from ._eval_mode import EvalMode
from ._imread import imread
from ._readers import ReaderState
from ._stream import (Stream, get_current_stream, get_default_stream, set_current_stream, set_default_stream,
                      stream)
from ._tensor import Tensor, as_tensor, tensor
from ._thread_pool import ThreadPool, get_num_threads, set_num_threads
from ._type import (DataType, DType, ImageType, InterpType, bfloat16, bool, dtype, float16, float32, float64,
                    int8, int16, int32, int64, type_id, uint8, uint16, uint32, uint64)

__all__ = ["Batch", "DType", "DataType", "Device", "DeviceLike", "EvalContext", "EvalMode", "ImageType", "InterpType",
           "ReaderState", "Stream", "Tensor", "ThreadPool", "as_batch", "as_tensor", "batch", "bfloat16", "bool",
           "checkpoint", "device", "dtype", "float16", "float32", "float64", "get_current_stream",
           "get_default_stream", "get_num_threads", "imread", "int16", "int32", "int64", "int8", "math", "random",
           "set_current_stream", "set_default_stream", "set_num_threads", "stream", "tensor", "type_id", "uint16",
           "uint32", "uint64", "uint8"]

_ops.fill(_sys.modules[__name__])
_readers.fill(_sys.modules[__name__])

# Parts of DALI 2.4's dynamic mode penstock does not offer: asking for one says so.
_NOT_OFFERED = {
    "ExternalSource": "ndd.ExternalSource (call operators on your data directly, or use a pipeline's "
                      "fn.external_source)",
    "capture": "ndd.capture (prefetching captured operator sequences as a pipeline: use a pipeline)",
    "pytorch": "ndd.pytorch (use Batch.torch() / Tensor.torch(), or penstock.plugin.pytorch's iterators)",
}


def __getattr__(name: str):
    if name in _NOT_OFFERED:
        raise NotImplementedError(f"penstock's dynamic mode does not offer {_NOT_OFFERED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
