"""``noise.gaussian``, ``noise.salt_and_pepper`` and ``noise.shot``: random noise applied to
data of any type, drawn for the whole batch at once; integer outputs are rounded half away
from zero and saturated to the input type."""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ._batch import contiguous, empty_batch
from .crop import layout_of, round_half_away


def _schema(name: str, doc: str, args: list) -> OpSchema:
    return OpSchema(f"noise.{name}", doc, args=args, is_random=True, devices=("cpu",))


def _store(src, values: np.ndarray):
    """A batch like `src` holding `values` converted (rounded, saturated) to src's type."""
    dtype = src._buf.dtype
    if dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        values = round_half_away(values)
        if info is not None:
            values = np.clip(values, info.min, info.max)
    out = empty_batch(src._shapes.copy(), dtype, src._layout, src._source_info)
    out._buf[:values.size] = values.astype(dtype)
    return out


def _spread(ws, name: str, vols: np.ndarray) -> np.ndarray:
    """A per-sample argument repeated for every element of each sample."""
    return np.repeat(ws.per_sample(name, np.float64), vols)


def _flat(src) -> tuple[np.ndarray, np.ndarray]:
    vols = src._volumes() if len(src) else np.zeros(0, np.int64)
    return np.asarray(src._buf[:int(vols.sum())]), vols


@register(_schema("Gaussian", "Adds normal noise N(mean, stddev) to every element.",
                  [Arg("mean", ArgType.FLOAT, 0.0, tensor=True, doc="mean of the noise"),
                   Arg("stddev", ArgType.FLOAT, 1.0, tensor=True, doc="standard deviation of the noise")]))
class GaussianNoiseCPU(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        x, vols = _flat(src)
        std = _spread(ws, "stddev", vols)
        if (std < 0).any():
            raise ValueError(f"{self.label}: stddev must not be negative")
        noise = ws.rng.standard_normal(x.size) * std + _spread(ws, "mean", vols)
        return [_store(src, x.astype(np.float64) + noise)]


@register(_schema("Shot", "Shot (Poisson) noise: out = Poisson(in / factor) * factor.",
                  [Arg("factor", ArgType.FLOAT, 20.0, tensor=True, doc="photon-count scale of the noise")]))
class ShotNoiseCPU(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        x, vols = _flat(src)
        factor = _spread(ws, "factor", vols)
        if (factor <= 0).any():
            raise ValueError(f"{self.label}: factor must be positive")
        lam = np.maximum(x.astype(np.float64), 0) / factor
        return [_store(src, ws.rng.poisson(lam) * factor)]


@register(_schema("SaltAndPepper", "Replaces a fraction `prob` of the elements (or pixels) with "
                                   "salt (max) or pepper (min) values.",
                  [Arg("prob", ArgType.FLOAT, 0.05, tensor=True, doc="probability that an element is replaced"),
                   Arg("salt_vs_pepper", ArgType.FLOAT, 0.5, tensor=True, doc="fraction of replacements that are salt"),
                   Arg("salt_val", ArgType.FLOAT, optional=True, tensor=True,
                       doc="salt value (default: the type's max, 1 for floats)"),
                   Arg("pepper_val", ArgType.FLOAT, optional=True, tensor=True,
                       doc="pepper value (default: the type's min, -1 for floats)"),
                   Arg("per_channel", ArgType.BOOL, False, doc="draw for each channel separately")]))
class SaltAndPepperCPU(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        x, vols = _flat(src)
        dtype = src._buf.dtype
        if dtype.kind == "f":
            salt_default, pepper_default = 1.0, -1.0
        elif dtype.kind == "b":
            salt_default, pepper_default = 1, 0
        else:
            salt_default, pepper_default = np.iinfo(dtype).max, np.iinfo(dtype).min
        layout = layout_of(src)
        channels = 1
        if not self.args["per_channel"] and layout.endswith("C") and src.ndim() == len(layout) and len(src):
            channels = int(src._shapes[0, -1])
            if (src._shapes[:, -1] != channels).any():
                raise ValueError(f"{self.label}: samples differ in their number of channels")
        pixel_vols = vols // max(channels, 1)
        prob = np.repeat(ws.per_sample("prob", np.float64), pixel_vols)
        ratio = np.repeat(ws.per_sample("salt_vs_pepper", np.float64), pixel_vols)
        u = ws.rng.random((2, prob.size))
        hit, salt = u[0] < prob, u[1] < ratio
        salt_v = np.repeat(ws.per_sample("salt_val", np.float64) if ws.has_arg("salt_val")
                           else np.full(len(vols), salt_default, np.float64), pixel_vols)
        pepper_v = np.repeat(ws.per_sample("pepper_val", np.float64) if ws.has_arg("pepper_val")
                             else np.full(len(vols), pepper_default, np.float64), pixel_vols)
        repl = np.where(salt, salt_v, pepper_v)
        out = x.astype(np.float64).reshape(-1, channels)
        out[hit] = repl[hit, None]
        return [_store(src, out.reshape(-1))]
