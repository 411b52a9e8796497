"""penstock batches as ``jax.Array``s: the DLPack hand-off and device placement.

Host batches are handed to JAX's CPU client without a copy (it aliases 64-byte aligned memory,
as penstock's pooled buffers are, and keeps the array alive; the pipeline never reuses a buffer
somebody still holds); smaller, unaligned batches are copied. GPU batches go through DLPack, whose
stream protocol orders JAX's work after the pipeline's kernels without blocking the host; they stay
on the pipeline's GPU unless placed elsewhere.
"""
from __future__ import annotations

import jax
import jax.dlpack

from penstock.tensors import TensorListCPU, TensorListGPU


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
    # JAX passes its stream to TensorGPU.__dlpack__(stream=...), which makes it wait for the
    # pipeline's work (the DLPack stream protocol): no host synchronization.
    array = jax.dlpack.from_dlpack(batch.as_tensor())
    if device is not None and array.devices() != {device}:
        array = jax.device_put(array, device)
    return array
