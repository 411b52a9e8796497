"""penstock batches as ``jax.Array``s: the DLPack hand-off and device placement.

Host batches are handed to JAX's CPU client without a copy (it aliases 64-byte aligned memory,
as penstock's pooled buffers are, and keeps the array alive; the pipeline never reuses a buffer
somebody still holds); smaller, unaligned batches are copied. GPU batches go through DLPack with
the producer's CUDA stream current, so the exchange makes JAX's stream wait on the pipeline's
kernels instead of blocking the host; they stay on the pipeline's GPU unless placed elsewhere.
"""
from __future__ import annotations

import contextlib
from typing import Any

import jax
import jax.dlpack

from penstock.tensors import TensorListCPU, TensorListGPU


def _producer_stream(stream: Any) -> Any:
    """The producer's stream as a CuPy stream context (None: nothing to order after)."""
    if stream is None:
        return None
    import cupy
    if isinstance(stream, cupy.cuda.Stream):
        return stream
    handle = stream if isinstance(stream, int) else getattr(stream, "ptr", None) or getattr(stream, "cuda_stream", None)
    if handle is None:
        raise TypeError(f"cannot take a CUDA stream handle from {type(stream).__name__}")
    return cupy.cuda.ExternalStream(int(handle))


def to_jax(batch: TensorListCPU | TensorListGPU, device: jax.Device | None = None) -> jax.Array:
    """A dense batch as one ``jax.Array`` (leading batch dimension) on ``device``.

    ``device=None``: host batches go to the first host device, GPU batches stay on their GPU.
    """
    if not batch.is_dense_tensor():
        raise RuntimeError(f"the samples of a batch have different shapes {batch.shape()[:4]}...; "
                           "the JAX iterator needs uniform batches (pad them in the pipeline, e.g. "
                           "with fn.pad or fn.resize)")
    if isinstance(batch, TensorListCPU):
        # device_put aliases aligned host memory (and, unlike DLPack, read-only arrays too).
        return jax.device_put(batch.as_array(), device or jax.local_devices(backend="cpu")[0])
    tensor = batch.as_tensor()
    stream = _producer_stream(getattr(tensor, "stream", None))
    # CuPy's __dlpack__(stream=consumer) makes the consumer's stream wait on the current one.
    with stream if stream is not None else contextlib.nullcontext():
        array = jax.dlpack.from_dlpack(tensor)
    if device is not None and array.devices() != {device}:
        array = jax.device_put(array, device)
    return array
