"""Transfers between host and GPU (``DataNode.gpu()`` / ``.cpu()``); their kernels come with
the GPU backend."""
from __future__ import annotations

from .._graph import make_op
from .._registry import OpSchema, _SCHEMAS

TO_DEVICE = OpSchema("_ToDevice", "Copies a batch to the GPU ('mixed') or back to the host.",
                     devices=("mixed", "gpu"), internal=True)
_SCHEMAS[TO_DEVICE.name] = TO_DEVICE  # declared here; the GPU backend registers the kernels


def to_device(node, device: str):
    # cpu -> gpu runs in the mixed stage; gpu -> cpu is a GPU-stage op producing host data.
    if device == "gpu":
        return make_op(TO_DEVICE, (node,), {"device": "mixed"})[0]
    out = make_op(TO_DEVICE, (node,), {"device": "gpu"})[0]
    out.device = "cpu"
    return out
