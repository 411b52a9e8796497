"""``noise.gaussian``, ``noise.salt_and_pepper`` and ``noise.shot``: random noise applied to data
of any type by one native call per batch (a random stream per sample, seeded from the operator's
generator); integer outputs are rounded half away from zero and saturated to the input type.

The GPU kernel computes the same draws of the same streams for Gaussian and salt-and-pepper
noise, so both devices give the same values for a seed; shot noise (a varying number of draws
per element) gives each element a stream of its own on the GPU and agrees in distribution only."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import to_dali_type
from .._batch import contiguous
from .crop import layout_of

_GAUSSIAN, _SHOT, _SALT_AND_PEPPER = 0, 1, 2


def _schema(name: str, doc: str, args: list) -> OpSchema:
    return OpSchema(f"noise.{name}", doc, args=args, is_random=True, devices=("cpu", "gpu"))


def apply_noise(ws, kind: int, params: np.ndarray, channels: int = 1):
    """Runs the native noise kernel over the input batch with per-sample params [N, 4]."""
    src = contiguous(ws.inputs[0])
    half = src._buf.dtype == np.float16  # the kernel works on float32 for half floats
    data = src._buf.astype(np.float32) if half else src._buf
    out = ws.new_batch(src._shapes, data.dtype, src._layout, src._source_info, like=src)
    seeds = ws.rng.integers(0, np.iinfo(np.uint64).max, len(src), dtype=np.uint64, endpoint=True)
    ws.kernels.noise(ws.pool, kind, data, src._shapes, src._offsets, out._buf, out._offsets, seeds,
                     np.ascontiguousarray(params, np.float64), channels, int(to_dali_type(data.dtype)))
    if half:
        out._buf = out._buf.astype(np.float16)
    return [out]


def _params(ws, *names) -> np.ndarray:
    cols = [ws.per_sample(name, np.float64) for name in names]
    cols += [np.zeros(ws.batch_size)] * (4 - len(cols))
    return np.stack(cols, 1)


@register(_schema("Gaussian", "Adds normal noise N(mean, stddev) to every element.",
                  [Arg("mean", ArgType.FLOAT, 0.0, tensor=True, doc="mean of the noise"),
                   Arg("stddev", ArgType.FLOAT, 1.0, tensor=True, doc="standard deviation of the noise")]),
          device=("cpu", "gpu"))
class GaussianNoise(Operator):
    def run(self, ws):
        # a negative stddev flips the noise's sign (the same distribution), as DALI takes it
        return apply_noise(ws, _GAUSSIAN, _params(ws, "mean", "stddev"))


@register(_schema("Shot", "Shot (Poisson) noise: out = Poisson(in / factor) * factor.",
                  [Arg("factor", ArgType.FLOAT, 20.0, tensor=True, doc="photon-count scale of the noise")]),
          device=("cpu", "gpu"))
class ShotNoise(Operator):
    def run(self, ws):
        params = _params(ws, "factor")
        # DALI gives zeros for a factor <= 0; a negative factor makes every mean <= 0, which the
        # kernel writes as 0 (a zero one would divide by zero)
        params[params[:, 0] == 0, 0] = -1.0
        return apply_noise(ws, _SHOT, params)


@register(_schema("SaltAndPepper", "Replaces a fraction `prob` of the elements (or pixels) with "
                                   "salt (max) or pepper (min) values.",
                  [Arg("prob", ArgType.FLOAT, 0.05, tensor=True, doc="probability that an element is replaced"),
                   Arg("salt_vs_pepper", ArgType.FLOAT, 0.5, tensor=True, doc="fraction of replacements that are salt"),
                   Arg("salt_val", ArgType.FLOAT, optional=True, tensor=True,
                       doc="salt value (default: the type's max, 1 for floats)"),
                   Arg("pepper_val", ArgType.FLOAT, optional=True, tensor=True,
                       doc="pepper value (default: the type's min, -1 for floats)"),
                   Arg("per_channel", ArgType.BOOL, False, doc="draw for each channel separately")]),
          device=("cpu", "gpu"))
class SaltAndPepper(Operator):
    def run(self, ws):
        src = ws.inputs[0]
        dtype = src._buf.dtype
        if dtype.kind == "f":
            salt, pepper = 1.0, -1.0
        elif dtype.kind == "b":
            salt, pepper = 1, 0
        else:
            salt, pepper = np.iinfo(dtype).max, np.iinfo(dtype).min
        n = ws.batch_size
        params = np.stack([ws.per_sample("prob", np.float64), ws.per_sample("salt_vs_pepper", np.float64),
                           ws.per_sample("salt_val", np.float64) if ws.has_arg("salt_val") else np.full(n, salt, np.float64),
                           ws.per_sample("pepper_val", np.float64) if ws.has_arg("pepper_val")
                           else np.full(n, pepper, np.float64)], 1)
        for k, name in enumerate(("prob", "salt_vs_pepper")):
            bad = np.nonzero((params[:, k] < 0) | (params[:, k] > 1))[0]
            if bad.size:
                raise ValueError(f"{self.label}: {name} must be within [0, 1]; sample {int(bad[0])} has "
                                 f"{params[bad[0], k]:g}")
        layout = layout_of(src)
        channels = 1
        if not self.args["per_channel"] and layout.endswith("C") and src.ndim() == len(layout) and len(src):
            channels = int(src._shapes[0, -1])
            if (src._shapes[:, -1] != channels).any():
                raise ValueError(f"{self.label}: samples differ in their number of channels")
        return apply_noise(ws, _SALT_AND_PEPPER, params, max(channels, 1))
