"""Window copies: ``crop``, ``pad`` and ``flip`` (one slice kernel per device; ``slice`` is in slice.py).

Also the crop-window arithmetic shared with ``crop_mirror_normalize``: window sizes from
``crop`` / ``crop_h|w|d`` (cut to whole numbers toward zero; a size <= 0 keeps the whole extent,
and no size at all the whole input), anchors ``round(crop_pos * (extent - size))`` (ties away from
zero), and the out-of-bounds policies ("error", "pad", "trim_to_shape"). Fill values for integer
outputs are cut toward zero, as DALI converts them (values out of range are clamped), and so is
floating-point data converted to an integer output type (``dtype``).
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._image_layout import input_layout
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentTypeError, ArgumentValueError, OpSchema, register
from ..types import DALIDataType as T, to_numpy_type
from .._batch import contiguous, zero_rows
from .cast import cast_batch

SPATIAL = "DHW"  # crop / crop_pos order for volumes; images use "HW"
# the layouts crop and crop_mirror_normalize take (DALI's list, in its order: a layout-less input is
# read as the first one with as many dimensions)
WINDOW_LAYOUTS = ("HWC", "CHW", "DHWC", "CDHW", "FHWC", "FCHW", "CFHW", "FDHWC", "FCDHW", "CFDHW")


def default_layout(ndim: int) -> str:
    """Layout assumed for a batch without one (DALI treats 3-D images as HWC)."""
    return {2: "HW", 3: "HWC", 4: "DHWC"}.get(ndim, "")


def layout_of(tl) -> str:
    return tl._layout or default_layout(tl.ndim())


def _dims(values) -> str:
    return "{" + " x ".join(str(int(v)) for v in values) + "}"


def refuse_out_of_bounds(shapes: np.ndarray, anchors: np.ndarray, windows: np.ndarray) -> None:
    """The "error" policy: a window that reaches outside its sample is an error (DALI's words)."""
    i = _engine.first_window_outside(shapes, anchors, windows)
    if i >= 0:
        raise SampleError(i, "Slice can't be placed out of bounds with current policy. Got: "
                             f"input_shape={_dims(shapes[i])}, slice_anchor={_dims(anchors[i])}, "
                             f"slice_shape={_dims(windows[i])} (out_of_bounds_policy 'pad' or 'trim_to_shape' "
                             "takes such windows)")


def round_half_away(x):
    x = np.asarray(x, np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def per_sample_list(ws, name: str, dtype=np.float64) -> np.ndarray | None:
    """A list argument as [N, k] (k from the constant or the per-sample tensor); None if unset."""
    if name in ws.arg_inputs:
        tl = ws.arg_inputs[name]
        return ws.per_sample(name, dtype, int(tl._volumes()[0]) if len(tl) else 0)
    value = ws.op.args.get(name)
    if value is None:
        return None
    v = np.asarray(value, dtype).reshape(-1)
    return np.broadcast_to(v, (ws.batch_size, v.size)).copy()


def per_sample_columns(ws, name: str) -> list[np.ndarray] | None:
    """A list argument as its k columns of float64 values, [N] per sample or [1] for a constant (k
    from the constant or the per-sample tensor); None if unset. A constant's [N, k] table would give
    the GIL away for a batch of a few hundred."""
    if name in ws.arg_inputs:
        return list(per_sample_list(ws, name).T)
    value = ws.op.args.get(name)
    if value is None:
        return None
    return list(np.asarray(value, np.float64).reshape(-1, 1))


def per_channel(ws, name: str, channels: int, spare: int = 0) -> np.ndarray:
    """A per-channel list argument as [N, channels] float32 (one value broadcasts); ``spare`` more
    values are taken and ignored (as DALI does for crop_mirror_normalize's pad_output channel)."""
    v = per_sample_list(ws, name, np.float32)
    if v.shape[1] == 1:
        return np.repeat(v, channels, axis=1)
    if v.shape[1] not in (channels, channels + spare):
        raise ValueError(f"{ws.op.label}: '{name}' has {v.shape[1]} values; the input has {channels} channels")
    return v[:, :channels]


# ---- crop windows ---------------------------------------------------------------------------

CROP_ARGS = [
    Arg("crop", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="window size (h, w) or (d, h, w)"),
    # optional (no default) so that giving one, even as 0, is seen: DALI refuses a lone crop_h or crop_w
    Arg("crop_h", ArgType.FLOAT, optional=True, tensor=True, doc="window height (<= 0: whole; with crop_w)"),
    Arg("crop_w", ArgType.FLOAT, optional=True, tensor=True, doc="window width (<= 0: whole; with crop_h)"),
    Arg("crop_d", ArgType.FLOAT, optional=True, tensor=True,
        doc="window depth (<= 0: whole; with crop_h and crop_w)"),
    Arg("crop_pos_x", ArgType.FLOAT, 0.5, tensor=True, doc="relative horizontal position of the window"),
    Arg("crop_pos_y", ArgType.FLOAT, 0.5, tensor=True, doc="relative vertical position of the window"),
    Arg("crop_pos_z", ArgType.FLOAT, 0.5, tensor=True, doc="relative depth position of the window"),
    Arg("out_of_bounds_policy", ArgType.STR, "error", doc="'error', 'pad' or 'trim_to_shape'"),
    Arg("fill_values", ArgType.FLOAT_LIST, (0.0,), doc="per-channel values of padded areas"),
    Arg("rounding", ArgType.STR, "round", doc="anchor rounding: 'round' or 'truncate'"),
]


def crop_window_sizes(ws, axes: dict) -> dict:
    """{axis letter: [N] sizes as given, or None (the whole extent)} for the spatial axes present;
    a depth given for a sequence of images (F, no D) crops its frames, as DALI does."""
    op = ws.op
    if "D" not in axes and "F" in axes and (ws.has_arg("crop_d") or _crop_values(ws) == 3):
        axes = {("D" if a == "F" else a): d for a, d in axes.items()}
    present = [a for a in SPATIAL if a in axes]
    separate = {"D": "crop_d", "H": "crop_h", "W": "crop_w"}
    if ws.has_arg("crop_h") != ws.has_arg("crop_w"):
        raise ArgumentValueError(f"{op.label}: give 'crop_h' and 'crop_w' together")
    if ws.has_arg("crop_d") and not ws.has_arg("crop_w"):
        raise ArgumentValueError(f"{op.label}: `crop_d` argument must be provided together with `crop_w` and "
                                 "`crop_h`")
    crop = per_sample_columns(ws, "crop")
    if crop is not None:
        if ws.has_arg("crop_w") or ws.has_arg("crop_d"):
            raise ArgumentValueError(f"{op.label}: give either 'crop' or 'crop_h'/'crop_w'/'crop_d', not both")
        k = len(crop)
        if k not in (2, 3):
            raise ArgumentValueError(f"{op.label}: 'crop' needs 2 values (h, w) or 3 (d, h, w), got {k}")
        # a depth given for an image is not used; a constant's column stands for every sample
        given = {a: np.broadcast_to(size, ws.batch_size) for a, size in zip(SPATIAL[-k:], crop)}
    else:
        given = {a: ws.per_sample(separate[a], np.float64) for a in present if ws.has_arg(separate[a])}
    return {a: given.get(a) for a in present}


def _crop_values(ws) -> int:
    crop = per_sample_columns(ws, "crop")
    return 0 if crop is None else len(crop)


def crop_windows(ws, shapes: np.ndarray, layout: str, allow_trim: bool = True):
    """Anchors and window shapes [N, ndim] of the crop arguments for samples of ``shapes``
    (non-spatial dims: whole)."""
    op = ws.op
    n, nd = shapes.shape
    axes = {c: i for i, c in enumerate(layout)}
    policy = op.args["out_of_bounds_policy"]
    if policy not in ("error", "pad", "trim_to_shape"):
        raise ValueError(f"{op.label}: out_of_bounds_policy must be 'error', 'pad' or 'trim_to_shape', got '{policy}'")
    rounding = op.args["rounding"]
    if rounding not in ("round", "truncate"):
        raise ValueError(f"{op.label}: rounding must be 'round' or 'truncate', got '{rounding}'")
    pos_arg = {"D": "crop_pos_z", "H": "crop_pos_y", "W": "crop_pos_x"}
    sizes = crop_window_sizes(ws, axes)
    if all(size is None for size in sizes.values()):  # nothing cropped: the whole samples, read only
        whole = shapes.view()
        whole.flags.writeable = False
        return zero_rows(n, nd), whole
    # the tables take their columns through the engine: numpy on a batch's [N, D] tables gives the
    # GIL away, which costs a GPU pipeline's thread a switch interval each time a training loop runs
    anchors, out = zero_rows(n, nd), shapes
    dims = {a: axes["F" if a == "D" and "D" not in axes else a] for a in sizes}
    for a in sorted(sizes, key=dims.get):  # DALI checks the positions in the order of the dims
        if sizes[a] is None:
            continue
        pos = ws.per_sample(pos_arg[a], np.float64)
        bad = (pos < 0) | (pos > 1)
        if bad.any():
            i = int(np.nonzero(bad)[0][0])
            raise SampleError(i, f"Anchor for dimension {dims[a]} ({pos[i]:.6f}) is out of range [0.0, 1.0] "
                                 f"({pos_arg[a]} is a position relative to the free room)")
    for a, size in sizes.items():
        if size is None:
            continue
        d = dims[a]
        size_i = np.trunc(size).astype(np.int64)  # DALI reads the sizes as integers
        size_i = np.where(size_i > 0, size_i, shapes[:, d])
        pos = ws.per_sample(pos_arg[a], np.float64)
        raw = pos * (shapes[:, d] - size_i)
        anchor = round_half_away(raw) if rounding == "round" else np.trunc(raw).astype(np.int64)
        anchors = _engine.with_columns(anchors, d, anchor.reshape(n, 1))
        out = _engine.with_columns(out, d, size_i.reshape(n, 1))
    if policy == "error":
        refuse_out_of_bounds(shapes, anchors, out)
    if policy == "trim_to_shape" and allow_trim:
        lo, hi = np.clip(anchors, 0, shapes), np.clip(anchors + out, 0, shapes)
        anchors, out = lo, np.maximum(hi - lo, 0)
    return anchors, out


# ---- the kernel call ------------------------------------------------------------------------

def slice_batch(ws, src, anchors, out_shapes, flips=None, fill=None, channel_dim: int = -1):
    """The slice kernel over a packed batch: fill is [N, F] (any numeric), cast to the data type."""
    n, nd = src._shapes.shape
    flips = zero_rows(n, nd) if flips is None else np.ascontiguousarray(flips, np.int64)
    dtype = src._buf.dtype
    fill = zero_rows(n, 1) if fill is None else np.asarray(fill, np.float64).reshape(n, -1)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        fill = np.clip(np.trunc(fill), info.min, info.max)
    with np.errstate(over="ignore"):  # to float16, too large a fill value becomes inf, as in DALI
        fill = np.ascontiguousarray(fill.astype(dtype))
    out = ws.new_batch(np.ascontiguousarray(out_shapes, np.int64), dtype, src._layout, src._source_info)
    ws.kernels.slice(ws.pool, src._buf, src._shapes, src._offsets, out._buf, out._shapes, out._offsets,
                  np.ascontiguousarray(anchors, np.int64), flips, fill, channel_dim)
    return out


def fill_for(ws, layout: str, values, policy: str, out_shapes: np.ndarray) -> tuple[np.ndarray, int]:
    """Per-channel fill values as [N, F] and the channel dim (-1 if the layout has none). Only the
    'pad' policy fills, so only then must there be one value or one per output channel (as in
    DALI); an empty list fills with zeros."""
    values = np.asarray(values, np.float64).reshape(-1)
    cdim = layout.find("C")
    if policy != "pad" or values.size == 0:
        values = np.zeros(1)
    if values.size > 1:
        if cdim < 0:
            raise ArgumentValueError(f"{ws.op.label}: several 'fill_values' need a layout with a channel dim ('C')")
        wrong = out_shapes[:, cdim] != values.size
        if wrong.any():
            i = int(np.nonzero(wrong)[0][0])
            raise SampleError(i, f"{ws.op.label}: 'fill_values' has {values.size} values for "
                                 f"{int(out_shapes[i, cdim])} output channels (give 1 or one per channel)")
    return np.tile(values, (ws.batch_size, 1)), cdim


# output types of crop and slice besides the input's own
WINDOW_OUT_TYPES = (T.UINT8, T.FLOAT16, T.FLOAT)
_HALF_MAX = 65504.0  # the largest finite float16


def window_with_dtype(ws, src, anchors, shapes, fill, cdim, dtype):
    """slice_batch, then conversion to `dtype`. The window is cut in the input type (cheaper:
    only the window is converted) unless a fill value does not survive that type (e.g. 0.5 for
    uint8 data with a float output): then the input is converted first."""
    if dtype is not None and int(dtype) != int(src.dtype) and dtype not in WINDOW_OUT_TYPES:
        raise ArgumentTypeError(f"{ws.op.label}: output type {dtype.name} is not supported (use the input type "
                                f"or {', '.join(t.name for t in WINDOW_OUT_TYPES)})")
    if dtype is None or int(dtype) == int(src.dtype):
        return slice_batch(ws, src, anchors, shapes, fill=fill, channel_dim=cdim)
    if np.dtype(to_numpy_type(dtype)).kind in "iu":
        fill = np.trunc(fill)  # as DALI converts them; whole values also let integer data be cut first
    in_type = src._buf.dtype
    exact = in_type.kind == "f" or (np.all(fill == np.round(fill)) and np.iinfo(in_type).min <= fill.min()
                                     and fill.max() <= np.iinfo(in_type).max)
    # DALI saturates the data converted to float16 but converts the fill values plainly (inf where
    # too large for a half), so those are filled in after the conversion
    exact &= not (dtype == T.FLOAT16 and np.abs(fill).max() > _HALF_MAX)
    # the data converts as DALI's crop and slice convert it (truncating to integers, saturating
    # float16), as do the fill values where they are cut in the input type
    if exact:
        return cast_batch(ws, slice_batch(ws, src, anchors, shapes, fill=fill, channel_dim=cdim), dtype,
                          crop_conversion=True)
    return slice_batch(ws, cast_batch(ws, src, dtype, crop_conversion=True), anchors, shapes, fill=fill,
                       channel_dim=cdim)


# ---- crop ----------------------------------------------------------------------------------

CROP = OpSchema(
    "Crop", "Cuts a window out of each image (or volume / each frame of a sequence).",
    args=CROP_ARGS + [Arg("dtype", ArgType.DTYPE, optional=True, aliases=("output_dtype",),
                          ignored_aliases=("image_type",), doc="output type (default: input type)")],
    devices=("cpu", "gpu"), input_layouts=WINDOW_LAYOUTS)


@register(CROP, device=("cpu", "gpu"))
class Crop(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = input_layout(self, src)
        anchors, shapes = crop_windows(ws, src._shapes, layout)
        fill, cdim = fill_for(ws, layout, self.args["fill_values"], self.args["out_of_bounds_policy"], shapes)
        out = window_with_dtype(ws, src, anchors, shapes, fill, cdim, self.args["dtype"])
        out._layout = layout  # a batch without a layout comes out with the one it was read as (DALI's)
        return [out]


# ---- pad -----------------------------------------------------------------------------------

PAD = OpSchema(
    "Pad", "Pads samples at the end of the chosen axes: to `shape` (never below a sample's own extent), "
           "or to the batch maximum, optionally rounded up to a multiple of `align`.",
    args=[Arg("axes", ArgType.INT_LIST, optional=True, tensor=True,
              doc="dims to pad (default or []: all); per sample, each sample's own"),
          Arg("axis_names", ArgType.LAYOUT, optional=True, doc="dims to pad, by layout letters"),
          Arg("shape", ArgType.INT_LIST, optional=True, tensor=True,
              doc="target extents (-1: batch maximum; below the sample's extent: the extent)"),
          Arg("align", ArgType.INT_LIST, optional=True, tensor=True, doc="round extents up to a multiple"),
          Arg("fill_value", ArgType.FLOAT, 0.0, tensor=True, doc="value of the padding")],
    devices=("cpu", "gpu"))


@register(PAD, device=("cpu", "gpu"))
class Pad(Operator):
    def _checked_axes(self, a: np.ndarray, nd: int) -> np.ndarray:
        """One sample's axes (a list argument's values) as dims 0..nd-1; [] is every dim."""
        if not a.size:
            return np.arange(nd)
        bad = a[(a < -nd) | (a >= nd)]
        if bad.size:
            raise ArgumentValueError(f"{self.label}: Axis {int(bad[0])} out of range. Expected range is "
                                     f"[{-nd}, {nd - 1}] for a {nd}D input")
        return np.where(a < 0, a + nd, a)

    def _batch_axes(self, src) -> np.ndarray | None:
        """The dims every sample pads, when they are the same for all (axis_names, or constant axes)."""
        layout, nd = src._layout, src.ndim()
        if self.args["axis_names"]:
            if any(c not in layout for c in self.args["axis_names"]):
                raise ValueError(f"{self.label}: axis_names '{self.args['axis_names']}' not in layout '{layout}'")
            return np.array([layout.index(c) for c in self.args["axis_names"]], np.int64)
        if "axes" in self.node.arg_inputs:
            return None
        return self._checked_axes(np.asarray(self.args["axes"] or (), np.int64), nd)

    def _axes(self, ws, src) -> np.ndarray:
        """[N, k] the dims each sample pads (-1 after a sample's own, where samples pad different counts)."""
        n, nd = src._shapes.shape
        uniform = self._batch_axes(src)
        if uniform is not None:
            return np.tile(uniform, (n, 1))
        tl = contiguous(ws.arg_inputs["axes"])
        lists = [np.asarray(tl._sample_array(i), np.int64).reshape(-1) for i in range(len(tl))]
        if not any(a.size for a in lists):  # none given, or []: every dim
            return np.tile(np.arange(nd), (n, 1))
        lists = [self._checked_axes(a, nd) for a in lists]  # a sample's []: its every dim
        k = max(len(a) for a in lists)
        axes = np.full((n, k), -1, np.int64)
        for i, a in enumerate(lists):
            axes[i, :len(a)] = a
        return axes

    def _uniform_target(self, src, dims: np.ndarray) -> np.ndarray:
        """The output shapes [N, nd] when every sample pads the same ``dims`` by constant arguments,
        worked out a column at a time (a Python loop over the samples gave the GIL away twice a
        sample, numpy's [N, nd] tables once each)."""
        ext = src._shapes
        n, nd = ext.shape
        rows = {}
        for name in ("shape", "align"):
            v = np.asarray(self.args.get(name) if self.args.get(name) is not None else (), np.int64).reshape(-1)
            if not v.size:  # [] is none
                continue
            if v.size not in (1, dims.size):
                raise ArgumentValueError(f'{self.label}: Argument "{name}" expected shape {dims.size} but got '
                                         f"{v.size} values, which can't be interpreted as the expected shape.")
            rows[name] = dict(zip(dims.tolist(), np.broadcast_to(v, dims.shape).tolist()))
        if "align" in rows and min(rows["align"].values()) <= 0:
            raise ArgumentValueError(f"{self.label}: Values of `align` argument must be positive.")
        target = np.empty_like(ext)
        for d in range(nd):
            extent = ext[:, d]
            if d not in set(dims.tolist()):
                target[:, d] = extent
                continue
            given = rows.get("shape", {}).get(d, -1)
            size = np.maximum(given, extent) if given >= 0 else np.full(n, extent.max() if n else 0)
            align = rows.get("align", {}).get(d)
            target[:, d] = size if align is None else -(-size // align) * align
        return target

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n, nd = src._shapes.shape
        dims = self._batch_axes(src)
        if dims is not None and not any(name in ws.arg_inputs for name in ("shape", "align")):
            fill = ws.per_sample("fill_value", np.float64).reshape(n, 1)
            return [slice_batch(ws, src, zero_rows(n, nd), self._uniform_target(src, dims), fill=fill)]
        axes = self._axes(ws, src)
        given = axes >= 0
        rows = np.nonzero(given)[0]
        padded = np.zeros((n, nd), bool)
        padded[rows, axes[given]] = True
        ext = src._shapes
        target = np.where(padded, ext.max(axis=0) if n else 0, ext)  # the batch maximum of each padded dim

        def per_axis(name: str) -> np.ndarray | None:
            """A per-axis argument spread over the dims each sample pads ([N, nd], -1 where not given;
            None: not given). Per sample, its values match that sample's own axes (or are one value,
            or none)."""
            if name in ws.arg_inputs:
                tl = contiguous(ws.arg_inputs[name])
                lists = [np.asarray(tl._sample_array(i), np.int64).reshape(-1) for i in range(n)]
            elif self.args.get(name) is not None:
                lists = [np.asarray(self.args[name], np.int64).reshape(-1)] * n
            else:
                return None
            if not any(v.size for v in lists):  # [] is none
                return None
            full = np.full((n, nd), -1, np.int64)
            for i, v in enumerate(lists):  # argument values, not data: a few per sample
                dims = axes[i][given[i]]
                if v.size not in (0, 1, dims.size):
                    if name in ws.arg_inputs:
                        raise ArgumentValueError(f'{self.label}: Unexpected shape for argument "{name}". Expected '
                                                 f"{{{dims.size}}} or empty, but got {{{v.size}}} (sample {i})")
                    raise ArgumentValueError(f'{self.label}: Argument "{name}" expected shape {dims.size} but got '
                                             f"{v.size} values, which can't be interpreted as the expected shape.")
                full[i, dims] = v if v.size else -1
            return full

        shape = per_axis("shape")
        if shape is not None:
            target = np.where(padded & (shape >= 0), np.maximum(shape, ext), target)
        align = per_axis("align")
        if align is not None:
            if (align[padded] <= 0).any():
                raise ArgumentValueError(f"{self.label}: Values of `align` argument must be positive.")
            target = np.where(padded, -(-target // np.where(padded, align, 1)) * np.where(padded, align, 1), target)
        fill = ws.per_sample("fill_value", np.float64).reshape(n, 1)
        return [slice_batch(ws, src, zero_rows(n, nd), target, fill=fill)]


# ---- flip ----------------------------------------------------------------------------------

FLIP = OpSchema(
    "Flip", "Mirrors samples horizontally (default), vertically and/or depthwise; flags per sample "
           "(a flag for a dim the layout lacks is ignored).",
    args=[Arg("horizontal", ArgType.INT, 1, tensor=True, doc="flip along W"),
          Arg("vertical", ArgType.INT, 0, tensor=True, doc="flip along H"),
          Arg("depthwise", ArgType.INT, 0, tensor=True, doc="flip along D")],
    devices=("cpu", "gpu"), input_layouts=("FDHWC", "FHWC", "DHWC", "HWC", "FCDHW", "FCHW", "CDHW", "CHW"))


@register(FLIP, device=("cpu", "gpu"))
class Flip(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout = layout_of(src)
        n, nd = src._shapes.shape
        flips, flipped = zero_rows(n, nd), False
        for letter, arg in (("W", "horizontal"), ("H", "vertical"), ("D", "depthwise")):
            if letter in layout:  # a flag for a dim the layout lacks (depthwise for images) does nothing
                flags = ws.per_sample(arg, np.int64)
                flipped = flipped or bool(flags.any())
                flips = _engine.with_columns(flips, layout.index(letter), flags.reshape(n, 1))
        if not flipped:
            return [src]
        return [slice_batch(ws, src, zero_rows(n, nd), src._shapes, flips=flips)]
