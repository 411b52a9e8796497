"""Displacement effects on HWC images: ``water`` (sine waves), ``sphere`` (a radial bulge) and
``jitter`` (every pixel moved by a random whole number of pixels). One kernel call per batch; the
per-sample parameters, masks and (jitter) seeds are planned here."""
from __future__ import annotations

import numpy as np

from .._batch import contiguous
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, DALIInterpType

_COMMON = [Arg("mask", ArgType.INT, 1, tensor=True, doc="0: leave the sample as it is; 1: apply the effect"),
           Arg("fill_value", ArgType.FLOAT, 0.0, doc="value of the points that fall outside the image"),
           Arg("interp_type", ArgType.INTERP_TYPE, DALIInterpType.INTERP_NN, doc="INTERP_NN or INTERP_LINEAR")]

WATER = OpSchema(
    "Water", "Moves the pixels along sine waves, as if seen through water: output (x, y) reads the input at "
    "(x + ampl_x sin(freq_x y + phase_x), y + ampl_y cos(freq_y x + phase_y)).",
    args=[Arg("ampl_x", ArgType.FLOAT, 10.0, doc="wave amplitude along x"),
          Arg("ampl_y", ArgType.FLOAT, 10.0, doc="wave amplitude along y"),
          Arg("freq_x", ArgType.FLOAT, 2 * np.pi / 128, doc="wave frequency along x (radians per pixel)"),
          Arg("freq_y", ArgType.FLOAT, 2 * np.pi / 128, doc="wave frequency along y (radians per pixel)"),
          Arg("phase_x", ArgType.FLOAT, 0.0, doc="wave phase along x"),
          Arg("phase_y", ArgType.FLOAT, 0.0, doc="wave phase along y")] + _COMMON,
    devices=("cpu", "gpu"), input_layouts=("HWC",))
SPHERE = OpSchema(
    "Sphere", "Bulges the image as if projected on a sphere: each point moves away from the centre in proportion "
    "to its distance from it.", args=_COMMON, devices=("cpu", "gpu"), input_layouts=("HWC",))
JITTER = OpSchema(
    "Jitter", "Moves every pixel by a random whole number of pixels in [-nDegree/2, nDegree/2] along x and y.",
    args=[Arg("nDegree", ArgType.INT, 2, doc="the range of the moves")] + _COMMON,
    devices=("cpu", "gpu"), input_layouts=("HWC",), is_random=True)

KINDS = {"Water": 0, "Sphere": 1, "Jitter": 2}
_WATER_PARAMS = ("ampl_x", "ampl_y", "freq_x", "freq_y", "phase_x", "phase_y")


class _Displacement(Operator):
    def setup(self):
        if self.args["interp_type"] not in (DALIInterpType.INTERP_NN, DALIInterpType.INTERP_LINEAR):
            raise RuntimeError(f"{self.label}: only INTERP_NN and INTERP_LINEAR are supported, got "
                               f"{self.args['interp_type'].name}")

    def params(self, ws) -> np.ndarray:
        return np.zeros((ws.batch_size, 6))

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src.dtype not in (DALIDataType.UINT8, DALIDataType.FLOAT):
            raise RuntimeError(f"{self.label}: unexpected input type {src.dtype.name} (UINT8 and FLOAT are supported)")
        if src.ndim() != 3:
            raise RuntimeError(f"{self.label}: expects HWC images, got {src.ndim()}-D samples")
        masks = ws.per_sample("mask", np.int32)
        out = ws.new_batch(src._shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.displacement(ws.pool, src._buf, src._shapes, src._offsets, int(src.dtype), out._buf, out._offsets,
                                KINDS[self.schema.class_name], self.params(ws), masks,
                                self.args["interp_type"] == DALIInterpType.INTERP_LINEAR, self.args["fill_value"])
        return [out]


@register(WATER, device=("cpu", "gpu"))
class Water(_Displacement):
    def params(self, ws) -> np.ndarray:
        return np.tile(np.array([self.args[k] for k in _WATER_PARAMS], np.float64), (ws.batch_size, 1))


@register(SPHERE, device=("cpu", "gpu"))
class Sphere(_Displacement):
    pass


@register(JITTER, device=("cpu", "gpu"))
class Jitter(_Displacement):
    def setup(self):
        super().setup()
        if self.args["nDegree"] < 0:
            raise ValueError(f"{self.label}: nDegree must not be negative, got {self.args['nDegree']}")

    def params(self, ws) -> np.ndarray:
        params = np.zeros((ws.batch_size, 6))
        params[:, 0] = self.args["nDegree"]
        params[:, 1] = ws.rng.integers(0, 2 ** 52, ws.batch_size)  # exact in float64
        return params
