"""penstock tensors as torch tensors: the DLPack hand-off, type map and ``feed_ndarray``.

Host batches become CPU tensors that share their memory (no copy). GPU batches take the same
DLPack path; before the exchange, torch's current stream on that device is made to wait on the
stream the pipeline produced the batch on (recorded in the batch's ``stream``), so work queued
by the consumer is ordered after the pipeline's kernels without blocking the host.
"""
from __future__ import annotations

from typing import Any

import torch

from penstock.tensors import TensorGPU, TensorListCPU, TensorListGPU
from penstock.types import DALIDataType

to_torch_type: dict[DALIDataType, torch.dtype] = {
    DALIDataType.FLOAT: torch.float32,
    DALIDataType.FLOAT64: torch.float64,
    DALIDataType.FLOAT16: torch.float16,
    DALIDataType.UINT8: torch.uint8,
    DALIDataType.UINT16: torch.uint16,
    DALIDataType.UINT32: torch.uint32,
    DALIDataType.UINT64: torch.uint64,
    DALIDataType.INT8: torch.int8,
    DALIDataType.INT16: torch.int16,
    DALIDataType.INT32: torch.int32,
    DALIDataType.INT64: torch.int64,
    DALIDataType.BOOL: torch.bool,
}


def _stream_handle(stream: Any) -> int | None:
    """The raw CUDA stream handle of a stream object (CuPy, torch) or integer; None if unknown."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"cannot take a CUDA stream handle from {type(stream).__name__}")


def _dense(batch_or_tensor: Any) -> Any:
    if isinstance(batch_or_tensor, (TensorListCPU, TensorListGPU)):
        return batch_or_tensor.as_tensor()
    return batch_or_tensor


def to_torch(data: Any) -> torch.Tensor:
    """A torch tensor viewing a penstock tensor or dense batch (leading batch dimension) without copying.
    For GPU data, torch's current stream is made to wait for the pipeline's work through DLPack's
    stream argument (``torch.from_dlpack`` passes the current stream)."""
    # a GPU batch is its own DLPack view, made without a TensorGPU on the way (every batch, on the
    # training loop's thread)
    return torch.from_dlpack(data if isinstance(data, TensorListGPU) else _dense(data))


def feed_ndarray(dali_tensor: Any, arr: torch.Tensor, cuda_stream: Any = None) -> torch.Tensor:
    """Copies a penstock tensor (or dense batch) into the preallocated torch tensor ``arr``.

    Shapes and types must match. For GPU data the copy is queued on ``cuda_stream`` (torch's
    current stream if None), after the pipeline's own stream.
    """
    tensor = _dense(dali_tensor)
    want = to_torch_type.get(tensor.dtype)
    # DALI's words, which code written for DALI matches
    assert want == arr.dtype, ("The element type of DALI Tensor/TensorList doesn't match the element type of the "
                               f"target PyTorch Tensor: {want} vs {arr.dtype}")
    assert tensor.shape() == list(arr.size()), \
        (f"Shapes do not match: DALI tensor has size {tensor.shape()}, but PyTorch Tensor has size "
         f"{list(arr.size())}")
    if isinstance(tensor, TensorGPU):
        handle = _stream_handle(cuda_stream)
        stream = (torch.cuda.ExternalStream(handle, device=arr.device) if handle is not None
                  else torch.cuda.current_stream(arr.device))
        with torch.cuda.stream(stream):  # the copy's stream is the one ordered after the pipeline
            arr.copy_(to_torch(dali_tensor), non_blocking=True)
        return arr
    arr.copy_(to_torch(tensor))
    return arr
