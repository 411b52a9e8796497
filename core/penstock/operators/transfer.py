"""Transfers between host and GPU: ``DataNode.gpu()`` (a mixed-stage copy to the device) and
``DataNode.cpu()`` (a GPU-stage copy back, allowed with the dynamic executor as in DALI)."""
from __future__ import annotations

from .. import _hooks
from .._current import current_pipeline
from .._graph import make_op
from .._operator import Operator
from .._registry import OpSchema, register
from .._batch import contiguous

TO_DEVICE = OpSchema("_ToDevice", "Copies a batch to the GPU ('mixed') or back to the host ('gpu').",
                     devices=("mixed", "gpu"), internal=True)


def to_device(node, device: str):
    # cpu -> gpu runs in the mixed stage; gpu -> cpu is a GPU-stage op producing host data.
    if device == "gpu":
        return make_op(TO_DEVICE, (node,), {"device": "mixed"})[0]
    pipe = current_pipeline()
    if pipe is not None and not pipe.exec_dynamic:
        raise RuntimeError("this pipeline's executor doesn't support transition from GPU to CPU "
                           "(.cpu() needs the dynamic executor: exec_dynamic=True)")
    out = make_op(TO_DEVICE, (node,), {"device": "gpu"})[0]
    out.device = "cpu"
    return out


_hooks.install(to_device=to_device)  # DataNode.gpu() and .cpu()


@register(TO_DEVICE, device=("mixed", "gpu"))
class ToDevice(Operator):
    pairs_iterations = True

    def run(self, ws):
        src = ws.inputs[0]
        if self.device == "mixed":  # host -> device, through pinned staging, on the pipeline's stream
            src = contiguous(src)
            out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
            ws.gpu.upload(src._buf[:src._volume_total()], out._buf)
            return [out]
        return [src.as_cpu()]  # device -> host: waits for the batch's producer, then copies
