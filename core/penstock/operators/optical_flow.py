"""``optical_flow`` (GPU): declared with DALI 2.4's arguments so pipelines that name it build their
graph, but not implemented: building a pipeline with it raises ``NotImplementedError`` saying so.

DALI computes it on NVIDIA's optical-flow engine (NVOFA, driven through the Optical Flow SDK's
interface to the driver's ``libnvidia-opticalflow.so.1``). penstock has no binding of that
interface yet: an untested binding of its structures would risk wrong vectors or a crash, and no
other operator computes the same vectors (the engine's own block matching, S10.5 fixed point),
so none stands in for it.
"""
from __future__ import annotations

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIImageType

OPTICAL_FLOW = OpSchema(
    "OpticalFlow",
    "Optical flow between consecutive frames of FHWC sequences on NVIDIA's optical-flow engine (DALI's "
    "arguments; not implemented in penstock: building a pipeline with it raises NotImplementedError).",
    args=[Arg("output_grid", ArgType.INT, 4, "output vectors per output_grid x output_grid pixels (1, 2 or 4)",
              aliases=("output_format",)),
          Arg("hint_grid", ArgType.INT, 4, "external hint vectors per hint_grid x hint_grid pixels (1, 2, 4 or 8)"),
          Arg("enable_temporal_hints", ArgType.BOOL, False, "use each pair's flow as the hint of the next pair"),
          Arg("enable_external_hints", ArgType.BOOL, False, "take hints from the second input"),
          Arg("preset", ArgType.FLOAT, 0.0, "speed against quality: 0.0 slow, 0.5 medium, 1.0 fast"),
          Arg("image_type", ArgType.IMAGE_TYPE, DALIImageType.RGB, "the frames' colour space: RGB, BGR or GRAY")],
    min_inputs=1, max_inputs=2, devices=("gpu",))


@register(OPTICAL_FLOW, device="gpu")
class OpticalFlow(Operator):
    def setup(self) -> None:
        raise NotImplementedError(
            f"{self.label}: optical flow is not implemented in penstock: DALI computes it on NVIDIA's optical-flow "
            "engine (libnvidia-opticalflow.so.1, the Optical Flow SDK's interface), which penstock does not drive yet")
