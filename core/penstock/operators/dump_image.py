"""``dump_image``: writes each uint8 HWC image of the batch to a plain PPM file in the working directory
(``<sample>-<suffix>-0.ppm``, as DALI 2.4 names them) and passes the batch on. One native call per
batch; on the GPU the batch is copied to the host first."""
from __future__ import annotations

from .. import _engine
from .._batch import contiguous
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType

DUMP_IMAGE = OpSchema(
    "DumpImage", "Writes the images to PPM files (<sample>-<suffix>-0.ppm in the working directory) and outputs "
    "them unchanged.",
    args=[Arg("suffix", ArgType.STR, "", doc="part of the file names"),
          Arg("input_layout", ArgType.LAYOUT, "HWC", doc="layout of the images (only HWC)")],
    devices=("cpu", "gpu"), no_prune=True)


@register(DUMP_IMAGE, device=("cpu", "gpu"))
class DumpImage(Operator):
    def setup(self):
        if self.args["input_layout"] != "HWC":
            raise RuntimeError(f"{self.label}: input_layout {self.args['input_layout']} is not supported (HWC)")

    def run(self, ws):
        src = ws.inputs[0]
        host = contiguous(src if ws.gpu is None else src.as_cpu())
        if host.dtype != DALIDataType.UINT8 or host.ndim() != 3:
            raise RuntimeError(f"{self.label}: expects uint8 HWC images, got {host.ndim()}-D {host.dtype.name}")
        paths = [f"{i}-{self.args['suffix']}-0.ppm" for i in range(len(host))]
        _engine.write_ppm(ws.pool, host._buf, host._shapes, host._offsets, paths)
        return [src]
