"""``warp_affine`` and ``rotate``: 2-D affine resampling of HWC / FHWC images;
``experimental.warp_perspective`` (OpenCV's warpPerspective arithmetic, as DALI's CPU operator) and
``experimental.remap`` (per-pixel source coordinates).

The kernel's matrix maps output to input: the output pixel (x, y) samples the input at
``M @ [x + 0.5, y + 0.5, 1]`` (pixel centres at +0.5). ``inverse_map=False`` means the given
matrix maps input to output, so it is inverted here. Areas outside the input take
``fill_value``, or repeat the edge pixels when no fill value is given.
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, DALIInterpType
from .._batch import contiguous
from .._image_layout import as_outer_spatial_channels, input_layout, split_layout
from .cast import cast_batch

_INTERP_CODES = {DALIInterpType.INTERP_NN: 0, DALIInterpType.INTERP_LINEAR: 1}

_WARP_ARGS = [
    Arg("size", ArgType.FLOAT_LIST, optional=True, tensor=True,
        doc="output size (H, W), positive, rounded to integers (at least 1); default: the input size"),
    Arg("fill_value", ArgType.FLOAT, optional=True,
        doc="value for areas outside the input; default: repeat the border"),
    Arg("interp_type", ArgType.INTERP_TYPE, DALIInterpType.INTERP_LINEAR,
        doc="INTERP_NN or INTERP_LINEAR"),
    Arg("dtype", ArgType.DTYPE, optional=True,
        doc="output type: the input's (default), FLOAT, or from FLOAT input UINT8, INT16 or INT32 (rounded, "
            "saturated)"),
]
# the output types other than its own that an input type may be warped into (DALI 2.4's)
_OTHER_OUTPUTS = {DALIDataType.FLOAT: (DALIDataType.UINT8, DALIDataType.INT16, DALIDataType.INT32)}


def _interp_code(op: Operator) -> int:
    interp = op.args["interp_type"]
    if interp not in _INTERP_CODES:
        raise ValueError(f"{op.label}: interp_type {interp} is not supported (INTERP_NN, INTERP_LINEAR)")
    return _INTERP_CODES[interp]


def _frames_hw(op: Operator, src) -> tuple[int, np.ndarray]:
    start, k = split_layout(op.label, input_layout(op, src), src.ndim())
    if k != 2:
        raise ValueError(f"{op.label}: only 2-D images (HWC, FHWC) are supported, got layout '{src._layout}'")
    return start, as_outer_spatial_channels(src._shapes, start, 2)


def _requested_size(ws, default_hw: np.ndarray) -> np.ndarray:
    """[N, 2] output (H, W): the ``size`` argument when given, else the default."""
    if not ws.has_arg("size"):
        return default_hw
    if "size" not in ws.arg_inputs and len(ws.op.args["size"]) != 2:  # one value is not broadcast
        raise ValueError(f"{ws.op.label}: 'size' needs 2 values (H, W), got {len(ws.op.args['size'])}")
    size = ws.per_sample("size", np.float64, 2)
    if (size <= 0).any():
        raise ValueError(f"{ws.op.label}: 'size' must be positive")
    return np.maximum(np.floor(size + 0.5), 1).astype(np.int64)  # a positive fraction below 0.5: one pixel


def warp_batch(op: Operator, ws, src, start: int, kshapes: np.ndarray, out_hw: np.ndarray,
               matrices: np.ndarray):
    """Runs the kernel on (frames, H, W, C) views; the output keeps the input's layout. Another output
    type (``dtype``) is warped in float: the input converted first, or the float result after."""
    dtype = op.args["dtype"]
    if dtype is not None and dtype != src.dtype:
        if dtype != DALIDataType.FLOAT and dtype not in _OTHER_OUTPUTS.get(src.dtype, ()):
            raise ArgumentValueError(f"{op.label}: Unsupported input/output types for the operator: "
                                     f"{src.dtype.name.lower()} -> {dtype.name.lower()} (the input's type, FLOAT, or "
                                     "from FLOAT: UINT8, INT16, INT32)")
        if src.dtype != DALIDataType.FLOAT:
            src = cast_batch(ws, src, DALIDataType.FLOAT)
    # the output's shapes from the engine (numpy's copies of [N, k] tables give the GIL away)
    out_k = _engine.with_columns(kshapes, 1, out_hw)
    shapes = _engine.with_columns(src._shapes, start, out_hw)
    out = ws.new_batch(shapes, src._buf.dtype, src._layout, src._source_info)
    fill = op.args["fill_value"]
    ws.kernels.warp_affine(ws.pool, src._buf, kshapes, src._offsets, out._buf, out_k, out._offsets,
                        int(src.dtype), np.ascontiguousarray(matrices, np.float32), _interp_code(op),
                        None if fill is None else float(fill))
    return [out if dtype is None or dtype == out.dtype else cast_batch(ws, out, dtype)]


@register(OpSchema(
    "WarpAffine", "Applies an affine transform to 2-D images; the matrix maps output to input "
    "coordinates unless inverse_map=False.",
    args=[Arg("matrix", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="2x3 matrix, row-major (or the second input)"),
          Arg("inverse_map", ArgType.BOOL, True, doc="the matrix maps output to input coordinates"),
          *_WARP_ARGS],
    min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), input_layouts=("HWC", "FHWC"), host_inputs=(1,)),
    device=("cpu", "gpu"))
class WarpAffine(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, kshapes = _frames_hw(self, src)
        n = ws.batch_size
        if len(ws.inputs) > 1:
            mtx = contiguous(ws.inputs[1].as_cpu())  # the transform is host data on either device
            if not (mtx._volumes() == 6).all():
                raise ValueError(f"{self.label}: the matrix input must hold 2x3 values per sample")
            m = np.asarray(mtx._buf[:6 * n], np.float64).reshape(n, 2, 3)
        elif ws.has_arg("matrix"):
            if "matrix" not in ws.arg_inputs and len(self.args["matrix"]) != 6:  # one value is not broadcast
                raise ValueError(f"{self.label}: 'matrix' needs 6 values (2x3), got {len(self.args['matrix'])}")
            m = ws.per_sample("matrix", np.float64, 6).reshape(n, 2, 3)
        else:
            raise ValueError(f"{self.label}: the transform must be given as 'matrix' or a second input")
        if not self.args["inverse_map"]:
            full = np.concatenate([m, np.tile([[[0.0, 0.0, 1.0]]], (n, 1, 1))], axis=1)
            if (np.abs(np.linalg.det(full)) < 1e-12).any():
                raise ValueError(f"{self.label}: the forward matrix is not invertible")
            m = np.linalg.inv(full)[:, :2, :]
        out_hw = _requested_size(ws, kshapes[:, 1:3])
        return warp_batch(self, ws, src, start, kshapes, out_hw, m)


@register(OpSchema(
    "Rotate", "Rotates 2-D images counter-clockwise by `angle` degrees about their centre.",
    args=[Arg("angle", ArgType.FLOAT, tensor=True, doc="degrees, counter-clockwise"),
          Arg("axis", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="axis of a 3-D rotation (volumes are not supported); no effect on 2-D images"),
          Arg("keep_size", ArgType.BOOL, False, doc="keep the input size instead of fitting the rotated image"),
          *_WARP_ARGS],
    devices=("cpu", "gpu"), input_layouts=("HWC", "FHWC")), device=("cpu", "gpu"))
class Rotate(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, kshapes = _frames_hw(self, src)
        angles = ws.per_sample("angle", np.float64)
        keep_size = self.args["keep_size"]
        out_hw = _engine.rotated_sizes(angles, kshapes, keep_size)
        if not keep_size:
            out_hw = np.ascontiguousarray(_requested_size(ws, out_hw), np.int64)
        return warp_batch(self, ws, src, start, kshapes, out_hw, _engine.rotation_matrices(angles, kshapes, out_hw))


_PERSPECTIVE_INTERP = {DALIInterpType.INTERP_NN: 0, DALIInterpType.INTERP_LINEAR: 1, DALIInterpType.INTERP_CUBIC: 2}
_PERSPECTIVE_BORDERS = {"constant": 0, "replicate": 1, "reflect": 2, "reflect_101": 3, "wrap": 4}
_PIXEL_ORIGINS = ("corner", "center")
_REMAP_TYPES = (DALIDataType.UINT8, DALIDataType.UINT16, DALIDataType.INT16, DALIDataType.FLOAT)


def _corner_to_centre(m: np.ndarray) -> np.ndarray:
    """Matrices [N, 3, 3] for corner coordinates (pixel centres at +0.5) as matrices for centre
    coordinates, shift^-1 @ M @ shift, in float32 as DALI computes them: rounding the coefficients
    there moves the nearest-neighbour source pixel of points near a pixel's edge."""
    m = m.astype(np.float32)
    half = np.float32(0.5)
    out = m.copy()
    out[:, :, 2] = (m[:, :, 0] * half + m[:, :, 1] * half) + m[:, :, 2]
    out[:, :2, :] -= half * out[:, 2:3, :]
    return out


def _pixel_origin(op: Operator) -> str:
    origin = op.args["pixel_origin"]
    if origin not in _PIXEL_ORIGINS:
        raise ValueError(f"{op.label}: pixel_origin must be 'corner' or 'center', got '{origin}'")
    return origin


@register(OpSchema(
    "experimental.WarpPerspective",
    "Applies a perspective transform (a 3x3 matrix mapping output to input coordinates unless inverse_map=False) "
    "to images, as OpenCV's warpPerspective computes it.",
    args=[Arg("matrix", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="3x3 matrix, row-major, or one value for all nine (or the second input)"),
          Arg("size", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="output size (H, W), or one value for both; default: the input size"),
          Arg("border_mode", ArgType.STR, "constant", doc="constant, replicate, reflect, reflect_101 or wrap"),
          Arg("fill_value", ArgType.FLOAT_LIST, (), doc="constant border value, one or one per channel (default 0)"),
          Arg("interp_type", ArgType.INTERP_TYPE, DALIInterpType.INTERP_LINEAR,
              doc="INTERP_NN, INTERP_LINEAR or INTERP_CUBIC"),
          Arg("inverse_map", ArgType.BOOL, True, doc="the matrix maps output to input coordinates"),
          Arg("pixel_origin", ArgType.STR, "corner",
              doc="'corner': (0, 0) is the top-left pixel's corner; 'center': its centre (OpenCV)")],
    min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), input_layouts=("HW", "HWC", "FHWC", "CHW", "FCHW"),
    host_inputs=(1,)), device=("cpu", "gpu"))
class WarpPerspective(Operator):
    def setup(self):
        if self.args["border_mode"] not in _PERSPECTIVE_BORDERS:
            raise ValueError(f"{self.label}: border_mode must be one of {', '.join(_PERSPECTIVE_BORDERS)}, got "
                             f"'{self.args['border_mode']}'")
        if self.args["interp_type"] not in _PERSPECTIVE_INTERP:
            raise ValueError(f"{self.label}: interp_type {self.args['interp_type'].name} is not supported "
                             "(INTERP_NN, INTERP_LINEAR, INTERP_CUBIC)")
        _pixel_origin(self)

    def _matrices(self, ws, n: int) -> np.ndarray:
        if len(ws.inputs) > 1:
            mtx = contiguous(ws.inputs[1].as_cpu())
            if not (mtx._volumes() == 9).all():
                raise ValueError(f"{self.label}: the matrix input must hold 3x3 values per sample")
            return np.asarray(mtx._buf[:9 * n], np.float32).astype(np.float64).reshape(n, 3, 3)
        if not ws.has_arg("matrix") or ("matrix" not in ws.arg_inputs and len(self.args["matrix"]) not in (1, 9)):
            raise ValueError(f"{self.label}: the transform needs 9 values (3x3) as 'matrix' or a second input, got "
                             f"{len(self.args['matrix'] or ())}")
        return ws.per_sample("matrix", np.float32, 9).astype(np.float64).reshape(n, 3, 3)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, kshapes = _frames_hw(self, src)
        n = ws.batch_size
        m = self._matrices(ws, n)
        if _pixel_origin(self) == "corner":  # before the inversion, as DALI (OpenCV inverts what it is given)
            m = _corner_to_centre(m).astype(np.float64)
        if not self.args["inverse_map"]:
            if (np.abs(np.linalg.det(m)) < 1e-12).any():
                raise ValueError(f"{self.label}: the forward matrix is not invertible")
            m = np.linalg.inv(m)
        out_hw = kshapes[:, 1:3]
        if ws.has_arg("size"):
            if "size" not in ws.arg_inputs and len(self.args["size"]) not in (1, 2):
                raise RuntimeError(f"{self.label}: 'size' needs 2 values (H, W), got {len(self.args['size'])}")
            size = ws.per_sample("size", np.float64, 2)
            if (size <= 0).any():
                raise ValueError(f"{self.label}: 'size' must be positive")
            out_hw = np.maximum(np.floor(size + 0.5), 1).astype(np.int64)
        channels = int(kshapes[:, 3].max()) if n else 1
        fill = np.asarray(self.args["fill_value"], np.float64).reshape(-1)
        if fill.size == 0:
            fill = np.zeros(1)
        if fill.size != 1 and (fill.size != channels or (kshapes[:, 3] != fill.size).any()):
            raise ValueError(f"{self.label}: fill_value needs 1 value or one per channel ({channels}), got {fill.size}")
        fill = np.tile(np.resize(fill, channels), (n, 1))
        out_k = kshapes.copy()
        out_k[:, 1:3] = out_hw
        shapes = src._shapes.copy()
        shapes[:, start:start + 2] = out_hw
        out = ws.new_batch(shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.warp_perspective(ws.pool, src._buf, kshapes, src._offsets, out._buf, out_k, out._offsets,
                                    int(src.dtype), np.ascontiguousarray(m, np.float64),
                                    _PERSPECTIVE_INTERP[self.args["interp_type"]],
                                    _PERSPECTIVE_BORDERS[self.args["border_mode"]], fill)
        return [out]


@register(OpSchema(
    "experimental.Remap",
    "Output pixel (x, y) takes the input at (mapx[y, x], mapy[y, x]) (inputs 1 and 2, float); points outside "
    "the image are 0.",
    args=[Arg("interp", ArgType.INTERP_TYPE, DALIInterpType.INTERP_LINEAR, doc="INTERP_NN or INTERP_LINEAR"),
          Arg("pixel_origin", ArgType.STR, "corner",
              doc="'corner': coordinates count from the pixels' corners; 'center': from their centres (OpenCV)")],
    min_inputs=3, devices=("cpu", "gpu"), input_layouts=("HWC", "FHWC")), device=("cpu", "gpu"))
class Remap(Operator):
    def setup(self):
        if self.args["interp"] not in _INTERP_CODES:
            raise ValueError(f"{self.label}: interp {self.args['interp'].name} is not supported (INTERP_NN, "
                             "INTERP_LINEAR)")
        _pixel_origin(self)

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        start, kshapes = _frames_hw(self, src)
        mapx, mapy = contiguous(ws.inputs[1]), contiguous(ws.inputs[2])
        n = len(src)
        if src.dtype not in _REMAP_TYPES:
            raise TypeError(f"{self.label}: input type {src.dtype.name} is not supported "
                            f"({', '.join(t.name for t in _REMAP_TYPES)})")
        if mapx.dtype != DALIDataType.FLOAT or mapy.dtype != DALIDataType.FLOAT:
            raise TypeError(f"{self.label}: mapx and mapy must be FLOAT")
        if (mapx._shapes != mapy._shapes).any():
            raise ValueError(f"{self.label}: mapx and mapy must have the same shapes")
        planes = mapx._shapes[:, :3] if mapx.ndim() >= 3 and start == 1 else mapx._shapes[:, :2]
        map_hw = planes[:, -2:]
        frames_in_map = planes[:, 0] if planes.shape[1] == 3 else np.ones(n, np.int64)
        if ((frames_in_map != kshapes[:, 0]) & (frames_in_map != 1)).any() or (
                mapx._volumes() != frames_in_map * map_hw[:, 0] * map_hw[:, 1]).any():
            raise ValueError(f"{self.label}: the maps must be (H, W) or (frames, H, W) (with a unit channel)")
        if (frames_in_map != kshapes[:, 0]).any():
            raise NotImplementedError(f"{self.label}: one map for every frame of a sequence is not supported; give "
                                      "one map per frame")
        out_k = kshapes.copy()
        out_k[:, 1:3] = map_hw
        shapes = src._shapes.copy()
        shapes[:, start:start + 2] = map_hw
        out = ws.new_batch(shapes, src._buf.dtype, src._layout, src._source_info)
        ws.kernels.remap(ws.pool, src._buf, kshapes, src._offsets, out._buf, out_k, out._offsets, int(src.dtype),
                         mapx._buf, mapy._buf, mapx._offsets, _INTERP_CODES[self.args["interp"]],
                         _pixel_origin(self) == "center")
        return [out]
