"""``transforms.*``: affine matrices ([ndim, ndim + 1] float32 per sample) for ``warp_affine``
and ``coord_transform``, built with numpy for the whole batch.

Each operator may take an input matrix; by default the new transform is applied after it
(result = new @ input); ``reverse_order=True`` applies it first (input @ new).
"""
from __future__ import annotations

import numpy as np

from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous, empty_batch

_REVERSE = Arg("reverse_order", ArgType.BOOL, False,
               doc="apply this transform before the input one instead of after it")
_CENTER = Arg("center", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="centre of the transform")
_MAX_NDIM = 6  # the largest transform DALI builds


def _schema(name: str, doc: str, args: list, min_inputs: int = 0, max_inputs: int = 1,
            legacy_names: tuple[str, ...] = ()) -> OpSchema:
    return OpSchema(f"transforms.{name}", doc, args=args + [_REVERSE], min_inputs=min_inputs,
                    max_inputs=max_inputs, devices=("cpu",), legacy_names=legacy_names)


def _arg_length(ws, name: str) -> int:
    """Number of values of a list argument (per sample for argument inputs)."""
    if name in ws.arg_inputs:
        return int(ws.arg_inputs[name]._volumes()[0])
    return len(ws.op.args[name])


def _vectors(ws, name: str, d: int) -> np.ndarray:
    """[N, d]: a list argument with d values (or one, broadcast)."""
    if _arg_length(ws, name) == 1 and d != 1:
        return np.repeat(ws.per_sample(name, np.float64, 1), d, axis=1)
    return ws.per_sample(name, np.float64, d)


def _homogeneous(linear: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """[N, d+1, d+1] from [N, d, d] and [N, d]."""
    n, d = shift.shape
    m = np.empty((n, d + 1, d + 1))  # numpy's zeros give the GIL away to calloc past 1 KB
    m[:, :d, :d] = linear
    m[:, :d, d] = shift
    m[:, d, :d] = 0
    m[:, d, d] = 1
    return m


def _about_center(ws, linear: np.ndarray) -> np.ndarray:
    """x -> L (x - c) + c, with c the ``center`` argument (default 0)."""
    n, d, _ = linear.shape
    c = _vectors(ws, "center", d) if ws.has_arg("center") else np.zeros((n, d))
    return _homogeneous(linear, c - np.einsum("nij,nj->ni", linear, c))


class _TransformOp(Operator):
    def ndim(self, ws) -> int:
        raise NotImplementedError

    def make(self, ws, d: int) -> np.ndarray:
        """[N, d+1, d+1] homogeneous matrices of this transform."""
        raise NotImplementedError

    def run(self, ws):
        n = ws.batch_size
        if ws.inputs:
            prev = _input_matrices(self, ws.inputs[0])
            d = prev.shape[1] - 1
        else:
            prev, d = None, self.ndim(ws)
            if not 1 <= d <= _MAX_NDIM:
                raise ValueError(f"{self.label}: unsupported number of dimensions {d} (1 to {_MAX_NDIM})")
        m = self.make(ws, d)
        if prev is not None:
            m = prev @ m if self.args["reverse_order"] else m @ prev
        return [_matrix_batch(m, n)]


def _input_matrices(op: Operator, tl) -> np.ndarray:
    """[N, d+1, d+1] from a batch of [d, d+1] matrices."""
    tl = contiguous(tl)
    shapes = tl._shapes
    if tl.ndim() != 2 or len(shapes) == 0 or not (shapes == shapes[0]).all() or shapes[0, 1] != shapes[0, 0] + 1:
        raise ValueError(f"{op.label}: input matrices must all be [ndim, ndim + 1], got {tl.shape()}")
    n, d = len(shapes), int(shapes[0, 0])
    m = np.asarray(tl._buf[:n * d * (d + 1)], np.float64).reshape(n, d, d + 1)
    return _homogeneous(m[:, :, :d], m[:, :, d])


def _matrix_batch(m: np.ndarray, n: int):
    d = m.shape[1] - 1
    # DALI marks affine matrices with the layout "**" (two dimensions, neither named)
    out = empty_batch(np.tile(np.array([[d, d + 1]], np.int64), (n, 1)), np.float32, "**")
    out._buf[...] = m[:, :d, :].reshape(-1)
    return out


@register(_schema("Translation", "Translation by `offset`.",
                  [Arg("offset", ArgType.FLOAT_LIST, tensor=True, doc="translation vector")],
                  legacy_names=("TransformTranslation",)))
class TranslationCPU(_TransformOp):
    def ndim(self, ws):
        return _arg_length(ws, "offset")

    def make(self, ws, d):
        return _homogeneous(np.broadcast_to(np.eye(d), (ws.batch_size, d, d)), _vectors(ws, "offset", d))


@register(_schema("Scale", "Scaling by `scale` about `center`.",
                  [Arg("scale", ArgType.FLOAT_LIST, tensor=True, doc="scale factor per dimension"),
                   _CENTER,
                   Arg("ndim", ArgType.INT, optional=True,
                       doc="dimensions when `scale` is one value (default 1); ignored otherwise")]))
class ScaleCPU(_TransformOp):
    def ndim(self, ws):
        # as in DALI: the length of `scale` decides; `ndim` only widens a single factor, and a
        # value below 1 leaves it 1-D
        k = _arg_length(ws, "scale")
        ndim = self.args["ndim"]
        return max(ndim, 1) if k == 1 and ndim is not None else k

    def make(self, ws, d):
        s = _vectors(ws, "scale", d)
        return _about_center(ws, s[:, :, None] * np.eye(d))


def _axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """[N, 3, 3] right-handed rotations by ``angle`` (radians) about ``axis`` (Rodrigues)."""
    norm = np.linalg.norm(axis, axis=1, keepdims=True)
    if (norm == 0).any():
        raise ValueError("transforms.rotation: 'axis' must not be a zero vector")
    k = axis / norm
    kx = np.zeros((len(k), 3, 3))
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    kx -= kx.transpose(0, 2, 1)
    c, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    return c * np.eye(3) + s * kx + (1 - c) * np.einsum("ni,nj->nij", k, k)


@register(_schema("Rotation", "Rotation by `angle` degrees (2-D: x toward y; 3-D: right-handed about `axis`) "
                  "about `center`.",
                  [Arg("angle", ArgType.FLOAT, tensor=True, doc="degrees"),
                   Arg("axis", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="3-D rotation axis"),
                   _CENTER]))
class RotationCPU(_TransformOp):
    def ndim(self, ws):
        return 3 if ws.has_arg("axis") else 2

    def make(self, ws, d):
        a = np.deg2rad(ws.per_sample("angle", np.float64))
        if d == 2:
            if ws.has_arg("axis"):
                raise ValueError(f"{self.label}: 'axis' is only valid for 3-D rotations")
            c, s = np.cos(a), np.sin(a)
            lin = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
        elif d == 3:
            if not ws.has_arg("axis"):
                raise ValueError(f"{self.label}: 3-D rotation needs 'axis'")
            lin = _axis_angle(_vectors(ws, "axis", 3), a)
        else:
            raise ValueError(f"{self.label}: rotation is defined for 2-D and 3-D only")
        return _about_center(ws, lin)


@register(_schema("Shear", "Shear by factors `shear` (2-D: [sx, sy]; 3-D: [sxy, sxz, syx, syz, szx, szy]) "
                  "or `angles` in degrees (factor = tan(angle)), about `center`.",
                  [Arg("shear", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="shear factors"),
                   Arg("angles", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="shear angles, degrees"),
                   _CENTER]))
class ShearCPU(_TransformOp):
    def _source(self, ws) -> str:
        if ws.has_arg("shear") == ws.has_arg("angles"):
            raise ValueError(f"{self.label}: give exactly one of 'shear' and 'angles'")
        return "shear" if ws.has_arg("shear") else "angles"

    def ndim(self, ws):
        k = _arg_length(ws, self._source(ws))
        if k not in (2, 6):
            raise ValueError(f"{self.label}: expected 2 (2-D) or 6 (3-D) shear values, got {k}")
        return 2 if k == 2 else 3

    def make(self, ws, d):
        name = self._source(ws)
        k = 2 if d == 2 else 6
        v = ws.per_sample(name, np.float64, k)
        if name == "angles":
            if (np.abs(v) >= 90).any():
                raise ValueError(f"{self.label}: shear angles must be in (-90, 90) degrees")
            v = np.tan(np.deg2rad(v))
        lin = np.broadcast_to(np.eye(d), (ws.batch_size, d, d)).copy()
        off_diagonal = [(i, j) for i in range(d) for j in range(d) if i != j]
        for col, (i, j) in enumerate(off_diagonal):
            lin[:, i, j] = v[:, col]
        return _about_center(ws, lin)


@register(_schema("Crop", "Maps the box [from_start, from_end] onto [to_start, to_end] (per dimension).",
                  [Arg("from_start", ArgType.FLOAT_LIST, (0.0,), tensor=True, doc="source box start"),
                   Arg("from_end", ArgType.FLOAT_LIST, (1.0,), tensor=True, doc="source box end"),
                   Arg("to_start", ArgType.FLOAT_LIST, (0.0,), tensor=True, doc="destination box start"),
                   Arg("to_end", ArgType.FLOAT_LIST, (1.0,), tensor=True, doc="destination box end"),
                   Arg("absolute", ArgType.BOOL, False, doc="swap start and end where start > end")]))
class CropCPU(_TransformOp):
    _NAMES = ("from_start", "from_end", "to_start", "to_end")

    def ndim(self, ws):
        return max(_arg_length(ws, name) for name in self._NAMES)

    def make(self, ws, d):
        fs, fe, ts, te = (_vectors(ws, name, d) for name in self._NAMES)
        if self.args["absolute"]:
            fs, fe = np.minimum(fs, fe), np.maximum(fs, fe)
            ts, te = np.minimum(ts, te), np.maximum(ts, te)
        # a source box of zero extent gives infinite (or NaN) scales, as DALI 2.4's IEEE division does
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = (te - ts) / (fe - fs)
            linear = np.zeros(scale.shape + (d,))
            linear[:, np.arange(d), np.arange(d)] = scale  # off the diagonal 0, even next to an infinite scale
            return _homogeneous(linear, ts - scale * fs)


@register(_schema("Combine", "Combines the input transforms: applying the result equals applying the "
                  "inputs in the order given (reverse_order: the opposite order).", [],
                  min_inputs=2, max_inputs=-1))
class CombineCPU(Operator):
    def run(self, ws):
        mats = [_input_matrices(self, tl) for tl in ws.inputs]
        if len({m.shape for m in mats}) != 1:
            raise ValueError(f"{self.label}: all input transforms must have the same dimensions")
        result = mats[0]
        for m in mats[1:]:
            result = result @ m if self.args["reverse_order"] else m @ result
        return [_matrix_batch(result, ws.batch_size)]
