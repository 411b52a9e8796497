"""Two iterations through a pipeline's GPU stages as one (``PENSTOCK_GPU_PAIRS``).

A GPU pipeline's host side costs each batch the same Python whatever its size: the stages'
scheduling, the mixed decoder's split and calls, the kernels' planning and launches (about 3.5 ms of
the GIL a batch on an H100's host, 2026-12-07). Beside a training loop that Python takes turns with
the loop's own (torch's autograd thread waits for the GIL it holds), so the model trains slower by
about what the pipeline's Python costs a batch. Two iterations that the host stages made one after
the other (each its own reader batch and random draws) go through the GPU stages as one batch of
twice the samples, which halves that cost a batch; their outputs are cut back into the two
iterations' batches, views of one buffer, with the samples each would have had alone.

Only where every operator of the GPU stages computes each sample from its own inputs
(``Operator.pairs_iterations``; random draws by the sample's iteration: ``Workspace.parts``), and
while an iteration's host data at the GPU stages is small (``PAIR_HOST_BYTES``): beyond it the batch
takes long enough that its Python is a small share, and a pair would hold twice the device memory.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _engine
from ._batch import contiguous, empty_batch
from ._environment import one_of
from .tensors import TensorListCPU

ENV = "PENSTOCK_GPU_PAIRS"
# An iteration's host batches at the first GPU stage (a reader's encoded JPEGs, mostly) at most
# this large for a pair: ImageNet-sized JPEGs are ~110 KB, 28 MB a batch of 256; high-resolution
# photographs ~1.7 MB, 435 MB.
PAIR_HOST_BYTES = 64 << 20


def enabled() -> bool:
    """``PENSTOCK_GPU_PAIRS``: ``on`` (the default) or ``off``."""
    return one_of(ENV, "on", ("on", "off")) == "on"


def host_bytes(values: dict) -> int:
    """The bytes of an iteration's host batches."""
    return sum(v._volume_total() * v._buf.itemsize for v in values.values() if isinstance(v, TensorListCPU))


def mergeable(first: dict, second: dict) -> bool:
    """Whether two iterations' values can be one batch: host batches of the same keys, types and
    ranks, both small enough (``PAIR_HOST_BYTES``)."""
    if first.keys() != second.keys() or host_bytes(first) + host_bytes(second) > PAIR_HOST_BYTES:
        return False
    for key, a in first.items():
        b = second[key]
        if not (type(a) is type(b) is TensorListCPU and a._buf.dtype == b._buf.dtype and a.ndim() == b.ndim()
                and a._layout == b._layout):
            return False
    return True


def merged(first: dict, second: dict, pool: Any) -> dict:
    """Each value of ``first`` followed by the same value of ``second``, one packed host batch each,
    copied by the engine's threads without the GIL (``mergeable`` values)."""
    return {key: _concatenated(a, second[key], pool) for key, a in first.items()}


def _concatenated(a: TensorListCPU, b: TensorListCPU, pool: Any) -> TensorListCPU:
    a, b = contiguous(a), contiguous(b)
    out = empty_batch(np.concatenate([a._shapes, b._shapes]), a._buf.dtype, a._layout,
                      a._source_info + b._source_info)
    first_bytes = a._volume_total() * a._buf.itemsize
    parts = [a._buf[:a._volume_total()].view(np.uint8), b._buf[:b._volume_total()].view(np.uint8)]
    _engine.gather(pool, parts, np.array([0, first_bytes], np.int64), out._buf.view(np.uint8))
    return out


def split(batch: Any, counts: Sequence[int]) -> list:
    """``batch`` cut into consecutive batches of ``counts`` samples: views of its buffer, each packed
    from its own start when the batch is packed (device batches get their event from the caller)."""
    parts, start = [], 0
    infos, shapes, offsets = batch._source_info, batch._shapes, batch._offsets
    packed = batch._is_packed_cached()
    for count in counts:
        end = start + count
        if packed:
            first = int(offsets[start]) if count else 0
            last = int(offsets[end - 1]) + int(np.prod(shapes[end - 1])) if count else 0
            part = type(batch)._from_packed(batch._buf[first:last], shapes[start:end], None, batch._layout,
                                            infos[start:end])
        else:
            part = type(batch)._from_packed(batch._buf, shapes[start:end], offsets[start:end], batch._layout,
                                            infos[start:end])
        parts.append(part)
        start = end
    return parts
