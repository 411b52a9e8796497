"""``resize`` (and ``experimental.resize``, the same operator under the name DALI gives its GPU
variant), ``resize_crop_mirror``: separable resampling of images, sequences and volumes
(`_engine.resize`). resize_crop_mirror resamples only the part of the source that the crop window
of the resized image covers, mirrored by swapping the window's ends: one kernel call.

Output size rules (per sample, over the ROI extent), given in exactly one way: explicit sizes
(`resize_x/y/z` or `size`; 0 = unset, negative = flip that axis), `resize_shorter` or
`resize_longer` (aspect kept). `mode` ("default": unset axes keep the aspect; "stretch": unset
axes keep their size; "not_larger" / "not_smaller": one scale for all axes so the result fits in /
covers the given sizes), `max_size` caps; sizes round half up. With `subpixel_scale` a fractional
size keeps its exact scale factor by widening the ROI about its centre.
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..types import DALIDataType, DALIInterpType, to_numpy_type
from .._batch import contiguous, empty_batch
from .._image_layout import input_layout
from .crop import CROP_ARGS, crop_window_sizes, default_layout, per_sample_columns, per_sample_list, round_half_away

RESAMPLE_TYPES = (DALIDataType.UINT8, DALIDataType.INT16, DALIDataType.UINT16, DALIDataType.FLOAT)

FILTER_ARGS = [
    Arg("interp_type", ArgType.INTERP_TYPE, optional=True, tensor=True,
        doc="filter for both directions (default INTERP_LINEAR)"),
    Arg("min_filter", ArgType.INTERP_TYPE, optional=True, tensor=True, doc="filter when downscaling"),
    Arg("mag_filter", ArgType.INTERP_TYPE, optional=True, tensor=True, doc="filter when upscaling"),
    Arg("antialias", ArgType.BOOL, True, doc="widen the filter by the scale factor when downscaling"),
    Arg("dtype", ArgType.DTYPE, optional=True, ignored_aliases=("image_type",),
        doc="output type: the input's type or FLOAT (default: input)"),
    Arg("minibatch_size", ArgType.INT, 32, doc="performance hint (no effect on results)"),
    Arg("temp_buffer_hint", ArgType.INT, 0, doc="performance hint (no effect on results)"),
]


def spatial_layout(op, layout: str, ndim: int) -> tuple[str, int, bool]:
    """(spatial letters, index of the first spatial dim, whether a channel dim follows them).

    The kernel sees [outer..., spatial..., C]; a layout without trailing C gets a unit channel
    (so CHW and FCHW resize each channel plane as a frame).
    """
    layout = layout or default_layout(ndim)
    letters = "".join(c for c in layout if c in "DHW")
    if letters not in ("HW", "DHW"):
        raise ValueError(f"{op.label}: cannot resize layout '{layout}': it needs H and W (and optionally D), "
                         "in that order")
    first = layout.index(letters[0])
    rest = layout[first + len(letters):]
    if layout[first:first + len(letters)] != letters or rest not in ("", "C"):
        raise ValueError(f"{op.label}: cannot resize layout '{layout}': spatial dims must be consecutive and "
                         "followed only by the channel dim")
    return letters, first, rest == "C"


def filters(ws) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (min_filter, mag_filter) codes; interp_type fills whichever is not given."""
    base = ws.per_sample("interp_type", np.int32) if ws.has_arg("interp_type") else \
        np.full(ws.batch_size, int(DALIInterpType.INTERP_LINEAR), np.int32)
    minf = ws.per_sample("min_filter", np.int32) if ws.has_arg("min_filter") else base
    magf = ws.per_sample("mag_filter", np.int32) if ws.has_arg("mag_filter") else base
    for f in (minf, magf):
        if ((f < 0) | (f > 5)).any():
            raise ValueError(f"{ws.op.label}: unknown interpolation type {int(f[(f < 0) | (f > 5)][0])}")
    return minf, magf


def resized(op, src, first: int, out_sizes: np.ndarray, dtype) -> tuple[np.ndarray, DALIDataType]:
    """The shapes and type of ``src`` resized to ``out_sizes`` (its spatial dims from ``first``);
    refuses the types the kernels do not take."""
    in_type = src.dtype
    out_type = in_type if dtype is None else dtype
    if in_type not in RESAMPLE_TYPES:
        raise TypeError(f"{op.label}: input type {in_type.name} is not supported "
                        f"(use {', '.join(x.name for x in RESAMPLE_TYPES)})")
    if out_type not in (in_type, DALIDataType.FLOAT):
        raise TypeError(f"{op.label}: dtype {out_type.name} is not supported: the output keeps the "
                        f"input's type ({in_type.name}) or is FLOAT")
    return _engine.with_columns(src._shapes, first, np.asarray(out_sizes, np.int64)), out_type


def resize_batch(ws, src, layout: str, out_sizes: np.ndarray, rois: np.ndarray, minf, magf, antialias: bool,
                 dtype):
    """Resamples a packed batch: out_sizes [N, S] or, the same for every sample, [S] (spatial, layout
    order), rois [N, 2S] (starts, ends)."""
    letters, first, has_c = spatial_layout(ws.op, layout, src.ndim())
    s = len(letters)
    in_type = src.dtype
    out_shapes, out_type = resized(ws.op, src, first, out_sizes, dtype)
    n = len(src)
    out = ws.new_batch(out_shapes, to_numpy_type(out_type), src._layout, src._source_info)
    in_k, out_k = src._shapes, out._shapes
    if not has_c:  # unit channel for the kernel; the packed buffers are the same
        in_k = np.concatenate([in_k, np.ones((n, 1), np.int64)], axis=1)
        out_k = np.concatenate([out_k, np.ones((n, 1), np.int64)], axis=1)
    ws.kernels.resize(ws.pool, src._buf, np.ascontiguousarray(in_k), src._offsets, int(in_type),
                   out._buf, np.ascontiguousarray(out_k), out._offsets, int(out_type), s,
                   np.ascontiguousarray(rois, np.float64),
                   np.ascontiguousarray(np.repeat(np.asarray(minf, np.int32).reshape(n, 1), s, axis=1)),
                   np.ascontiguousarray(np.repeat(np.asarray(magf, np.int32).reshape(n, 1), s, axis=1)),
                   bool(antialias))
    return out


RESIZE = OpSchema(
    "Resize", "Resizes images, sequences (per frame) and volumes with separable resampling filters.",
    # the size arguments have no default value: which of them are given picks the sizing method
    args=[Arg("resize_x", ArgType.FLOAT, optional=True, tensor=True, doc="output width (0 = unset, < 0 flips)"),
          Arg("resize_y", ArgType.FLOAT, optional=True, tensor=True, doc="output height (0 = unset, < 0 flips)"),
          Arg("resize_z", ArgType.FLOAT, optional=True, tensor=True,
              doc="output depth (0 = unset, < 0 flips); no effect on images"),
          Arg("size", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="output size, spatial dims in layout order"),
          Arg("resize_shorter", ArgType.FLOAT, optional=True, tensor=True, doc="shorter side, aspect kept"),
          Arg("resize_longer", ArgType.FLOAT, optional=True, tensor=True, doc="longer side, aspect kept"),
          Arg("max_size", ArgType.FLOAT_LIST, optional=True, doc="upper limit per dim (or one for all)"),
          Arg("mode", ArgType.STR, "default", doc="'default', 'stretch', 'not_larger' or 'not_smaller'"),
          Arg("roi_start", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="source ROI start (layout order)"),
          Arg("roi_end", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="source ROI end (layout order)"),
          Arg("roi_relative", ArgType.BOOL, False, doc="ROI is relative to the input extent"),
          Arg("subpixel_scale", ArgType.BOOL, True, doc="keep fractional sizes' exact scale (ROI adjusted)"),
          Arg("save_attrs", ArgType.BOOL, False, doc="second output: the input's spatial size (int32)")]
    + FILTER_ARGS,
    num_outputs=lambda args: 2 if args.get("save_attrs") else 1,
    devices=("cpu", "gpu"),
    # DALI's accepted layouts, in its order: a batch without a layout takes the first one with as
    # many dimensions (4-D -> FHWC, 5-D -> FDHWC); any other layout is an error
    input_layouts=("HWC", "FHWC", "CHW", "FCHW", "CFHW", "DHWC", "FDHWC", "CDHW", "FCDHW", "CFDHW"))


# the ways of giving the output size; exactly one must be used
SIZE_METHODS = {"resize_x/resize_y/resize_z": ("resize_x", "resize_y", "resize_z"), "size": ("size",),
                "resize_shorter": ("resize_shorter",), "resize_longer": ("resize_longer",)}


_MODES = {"default": 0, "stretch": 1, "not_larger": 2, "not_smaller": 3}  # as _engine.resize_output_sizes takes them


def size_column(ws, name: str) -> np.ndarray:
    """A per-axis or side-length size argument: [N] per-sample values, or [1] for every sample (0:
    unset)."""
    if name in ws.arg_inputs:
        return ws.per_sample(name, np.float64)
    value = ws.op.args.get(name) if ws.op is not None else None
    return np.array([0.0 if value is None else value], np.float64)


def round_half_up(x):
    return np.floor(np.asarray(x, np.float64) + 0.5).astype(np.int64)


@register(RESIZE, device=("cpu", "gpu"))
class Resize(Operator):
    pairs_iterations = True

    def setup(self):
        if self.args["mode"] not in ("default", "stretch", "not_larger", "not_smaller"):
            raise ValueError(f"{self.label}: mode must be 'default', 'stretch', 'not_larger' or 'not_smaller', "
                             f"got '{self.args['mode']}'")
        methods = [method for method, names in SIZE_METHODS.items() if any(map(self.given, names))]
        if len(methods) != 1:
            raise ValueError(f"{self.label}: give the output size in exactly one way: "
                             f"{', '.join(repr(m) for m in SIZE_METHODS)} (got "
                             f"{' and '.join(repr(m) for m in methods) if methods else 'none'})")
        given = [name for name in ("roi_start", "roi_end") if self.given(name)]
        if len(given) == 1:
            raise ValueError(f"{self.label}: 'roi_start' and 'roi_end' must be given together (got only '{given[0]}')")
        self._constant_sizes = self._constant_output_sizes()

    def _constant_output_sizes(self) -> dict[str, int] | None:
        """Per spatial letter, the output size when it is one whole number for every sample and the
        source is the whole input (resize_x/y/z as constants, no ROI, no cap, a mode that keeps given
        sizes as they are): plan() then skips the per-sample sizing rules, which are a training
        pipeline's per-batch work."""
        a = self.args
        if self.node.arg_inputs or a["mode"] not in ("default", "stretch") or a.get("max_size") is not None:
            return None
        if any(a.get(name) is not None for name in ("size", "resize_shorter", "resize_longer", "roi_start", "roi_end")):
            return None
        given = {letter: a.get(name) for letter, name in (("W", "resize_x"), ("H", "resize_y"), ("D", "resize_z"))}
        sizes = {letter: int(v) for letter, v in given.items() if v is not None and v > 0 and float(v).is_integer()}
        return sizes or None

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        layout, first, out_sizes, rois, minf, magf = self.planned(ws, src)
        out = resize_batch(ws, src, layout, out_sizes, rois, minf, magf, self.args["antialias"], self.args["dtype"])
        if not self.args.get("save_attrs"):
            return [out]
        # DALI's attributes: the input's spatial size
        spatial = np.shape(out_sizes)[-1]
        return [out, ws.from_host(empty_attrs(src._shapes[:, first:first + spatial].astype(np.float64)))]

    def planned(self, ws, src) -> tuple[str, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What resizing batch ``src`` takes: its layout, where its spatial dims start, the output
        sizes and source ROIs (``plan``) and the per-sample filters."""
        layout = input_layout(self, src)
        letters, first, _ = spatial_layout(self, layout, src.ndim())
        prescaled = getattr(src, "_prescaled", None)
        if prescaled is not None and letters == "HW":
            # The decoder shrank the image in the DCT domain: plan in the full-size region's
            # coordinates, then map the source window onto the decoded pixels.
            regions, region_origin, geometry = prescaled
            out_sizes, rois = self.plan(ws, letters, regions.astype(np.float64))
            shift = np.tile(region_origin - geometry[:, :2], 2)
            rois = (rois + shift) / geometry[:, 2:3]
        else:
            out_sizes, rois = self._plan_whole(ws, letters, src._shapes, first)
        minf, magf = filters(ws)
        return layout, first, out_sizes, rois, minf, magf

    def _plan_whole(self, ws, letters: str, shapes: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
        """``plan`` of whole samples (their spatial dims from ``first``). Resize plans them without the
        [N, S] tables on which numpy gives the GIL away (a pipeline's per-batch work): with constant
        sizes its plan is the sizes, [S] for every sample, and the whole extents; else the engine sizes
        the whole extents. An operator that plans otherwise (ResizeCropMirror) gets the extents."""
        if type(self).plan is Resize.plan and not ws.has_arg("roi_start"):
            regions = _engine.whole_regions(shapes, first, len(letters))
            constant = self._constant_sizes
            if constant is not None and all(letter in constant for letter in letters):
                return np.array([constant[letter] for letter in letters], np.int64), regions
            return self._sized(ws, letters, regions)
        return self.plan(ws, letters, shapes[:, first:first + len(letters)].astype(np.float64))

    def takes_prescaled_input(self) -> bool:
        """Whether this resize can take an image the decoder shrank in the DCT domain: one with
        constant arguments that downscales with antialiasing and a linear/triangular filter."""
        smooth = (DALIInterpType.INTERP_LINEAR, DALIInterpType.INTERP_TRIANGULAR)
        a = self.args
        min_filter = a.get("min_filter") if a.get("min_filter") is not None else a.get("interp_type")
        return (not self.node.arg_inputs and a["antialias"] and not a["save_attrs"]
                and (min_filter is None or min_filter in smooth))

    # -- output size -------------------------------------------------------------------------
    def plan(self, ws, letters: str, extents: np.ndarray):
        """Integer output sizes [N, S] and source ROIs [N, 2S] (starts then ends)."""
        n, s = extents.shape
        constant = self._constant_sizes
        if constant is not None and all(letter in constant for letter in letters):
            out = np.empty((n, s), np.int64)
            out[:] = [constant[letter] for letter in letters]
            rois = np.zeros((n, 2 * s))
            rois[:, s:] = extents
            return out, rois
        return self._sized(ws, letters, self.roi(ws, extents))

    def _sized(self, ws, letters: str, regions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``plan`` of source ``regions`` [N, 2S] (starts, then ends)."""
        _, out, rois = self.output_sizes(ws, regions, self.requested(ws, letters), self.args["subpixel_scale"])
        return out, rois

    def roi(self, ws, extents: np.ndarray) -> np.ndarray:
        """The source regions [N, 2S] (starts, then ends) of samples of spatial ``extents`` [N, S]."""
        n, s = extents.shape
        start, end = np.zeros_like(extents), extents.copy()
        for name, target in (("roi_start", start), ("roi_end", end)):
            v = per_sample_list(ws, name)
            if v is None:
                continue
            if v.shape[1] != s:
                raise ValueError(f"{self.label}: '{name}' needs {s} values (one per spatial dim)")
            target[...] = v * extents if self.args["roi_relative"] else v
        return np.concatenate([start, end], axis=1)

    def requested(self, ws, letters: str) -> list[np.ndarray]:
        """The requested float sizes, a column per spatial axis ([N], or [1] for every sample; 0 unset,
        negative flips)."""
        s = len(letters)
        size = per_sample_columns(ws, "size")
        if size is not None:
            if len(size) == 1:
                size = size * s
            if len(size) != s:
                raise ValueError(f"{self.label}: 'size' has {len(size)} values for {s} spatial dims")
            return size
        per_axis = {"W": "resize_x", "H": "resize_y", "D": "resize_z"}  # resize_z: ignored without a D
        return [size_column(ws, per_axis[c]) for c in letters]

    def output_sizes(self, ws, regions: np.ndarray, requested: list[np.ndarray],
                     subpixel_scale: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The float sizes [N, S], whole sizes [N, S] and source ROIs [N, 2S] of source ``regions``
        [N, 2S] for the ``requested`` sizes (a column per axis), by the mode, the side lengths and
        max_size (one native call: numpy on a batch's [N, S] tables gave the GIL away dozens of times)."""
        s = len(requested)
        max_size = self.args["max_size"]
        cap = np.zeros(0)
        if max_size is not None:
            cap = np.asarray(max_size, np.float64).reshape(-1)
            cap = np.repeat(cap, s) if cap.size == 1 else cap
            if cap.size != s:
                raise ValueError(f"{self.label}: 'max_size' has {cap.size} values for {s} spatial dims")
        return _engine.resize_output_sizes(regions, requested, size_column(ws, "resize_shorter"),
                                           size_column(ws, "resize_longer"), _MODES[self.args["mode"]], cap,
                                           subpixel_scale)


@register(OpSchema(RESIZE.name.replace("Resize", "experimental.Resize"), RESIZE.doc, args=RESIZE.args,
                   num_outputs=RESIZE.num_outputs, devices=("cpu", "gpu"), input_layouts=RESIZE.input_layouts),
          device=("cpu", "gpu"))
class ExperimentalResize(Resize):
    """DALI 2.4's GPU-only experimental resize: the same operator."""


_RCM_CROP = [a for a in CROP_ARGS if a.name not in ("out_of_bounds_policy", "fill_values")]
RESIZE_CROP_MIRROR = OpSchema(
    "ResizeCropMirror", "Resizes, then crops a window of the resized image and optionally mirrors it, in one "
    "resampling of the window's part of the source.",
    args=[a for a in RESIZE.args if a.name != "save_attrs"] + _RCM_CROP
    + [Arg("mirror", ArgType.INT, 0, tensor=True,
           doc="flip mask: 1 horizontal, 2 vertical, 4 depthwise, or a bitwise combination")],
    devices=("cpu", "gpu"), input_layouts=RESIZE.input_layouts, legacy_names=("FastResizeCropMirror",))


@register(RESIZE_CROP_MIRROR, device=("cpu", "gpu"))
class ResizeCropMirror(Resize):
    def setup(self):
        super().setup()
        if self.args["rounding"] not in ("round", "truncate"):
            raise ValueError(f"{self.label}: rounding must be 'round' or 'truncate', got '{self.args['rounding']}'")

    def takes_prescaled_input(self) -> bool:
        return False

    def plan(self, ws, letters: str, extents: np.ndarray):
        """The resize's sizes and ROIs narrowed to the crop window (mirrored where asked)."""
        sizes, rois = super().plan(ws, letters, extents)
        s = len(letters)
        start, end = rois[:, :s].copy(), rois[:, s:].copy()
        step = (end - start) / np.where(sizes > 0, sizes, 1)
        pos_arg = {"D": "crop_pos_z", "H": "crop_pos_y", "W": "crop_pos_x"}
        for axis, window in crop_window_sizes(ws, dict.fromkeys(letters)).items():
            if window is None:
                continue
            d = letters.index(axis)
            window = np.trunc(window).astype(np.int64)
            window = np.where(window > 0, window, sizes[:, d])
            pos = ws.per_sample(pos_arg[axis], np.float64)
            if ((pos < 0) | (pos > 1)).any():
                raise RuntimeError(f"{self.label}: {pos_arg[axis]} must be in [0, 1], got {pos[(pos < 0) | (pos > 1)][0]}")
            raw = pos * (sizes[:, d] - window)
            anchor = round_half_away(raw) if self.args["rounding"] == "round" else np.trunc(raw).astype(np.int64)
            start[:, d], end[:, d] = start[:, d] + anchor * step[:, d], start[:, d] + (anchor + window) * step[:, d]
            sizes[:, d] = window
        mirror = ws.per_sample("mirror", np.int64)
        for axis, bit in (("W", 1), ("H", 2), ("D", 4)):
            if axis in letters:
                d, flip = letters.index(axis), (mirror & bit) != 0
                start[:, d], end[:, d] = np.where(flip, end[:, d], start[:, d]), np.where(flip, start[:, d], end[:, d])
        return sizes, np.concatenate([start, end], axis=1)


TENSOR_RESIZE = OpSchema(
    "TensorResize", "Resizes tensors along any of their dimensions (at most 3 consecutive ones change) with "
    "separable resampling filters.",
    args=[Arg("sizes", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="output sizes of the axes"),
          Arg("scales", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="scale factors of the axes (output size: size_rounding(scale * input size))"),
          Arg("axes", ArgType.INT_LIST, optional=True, doc="the dimensions sizes/scales/ROI refer to (negative from "
              "the back); default all"),
          Arg("axis_names", ArgType.LAYOUT, optional=True, doc="the axes by layout name"),
          Arg("size_rounding", ArgType.STR, "round", doc="'round' (half away from zero), 'truncate' or 'ceil'"),
          Arg("alignment", ArgType.FLOAT_LIST, (0.5,), tensor=True,
              doc="the ROI point (0: start, 1: end) that keeps its place when sizes are rounded"),
          Arg("max_size", ArgType.FLOAT_LIST, optional=True, doc="upper limit per axis (or one for all)"),
          Arg("mode", ArgType.STR, "default", doc="'default', 'stretch', 'not_larger' or 'not_smaller'"),
          Arg("roi_start", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="source ROI start of the axes"),
          Arg("roi_end", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="source ROI end of the axes"),
          Arg("roi_relative", ArgType.BOOL, False, doc="ROI is relative to the input extent"),
          Arg("subpixel_scale", ArgType.BOOL, True, doc="keep fractional sizes' exact scale (ROI adjusted)")]
    + FILTER_ARGS,
    devices=("cpu", "gpu"), moved_from=("experimental",))

_ROUNDING = {"round": round_half_away, "truncate": lambda x: np.trunc(x).astype(np.int64),
             "ceil": lambda x: np.ceil(x).astype(np.int64)}


@register(TENSOR_RESIZE, device=("cpu", "gpu"))
class TensorResize(Resize):
    def setup(self):
        if self.args["mode"] not in ("default", "stretch", "not_larger", "not_smaller"):
            raise ValueError(f"{self.label}: mode must be 'default', 'stretch', 'not_larger' or 'not_smaller', "
                             f"got '{self.args['mode']}'")
        if self.args["size_rounding"] not in _ROUNDING:
            raise ValueError(f"{self.label}: size_rounding must be 'round', 'truncate' or 'ceil', got "
                             f"'{self.args['size_rounding']}'")
        if self.given("sizes") == self.given("scales"):
            raise ValueError(f"{self.label}: give exactly one of 'sizes' and 'scales'")
        if self.given("axes") and self.given("axis_names"):
            raise ValueError(f"{self.label}: 'axes' and 'axis_names' are mutually exclusive")
        if self.given("roi_start") != self.given("roi_end"):
            raise ValueError(f"{self.label}: 'roi_start' and 'roi_end' must be given together")

    def _axes(self, src) -> list[int]:
        nd = src.ndim()
        if self.args["axis_names"]:
            layout = src._layout
            missing = [c for c in self.args["axis_names"] if c not in layout]
            if missing:
                raise ValueError(f"{self.label}: axis_names '{self.args['axis_names']}' are not all in the layout "
                                 f"'{layout}'")
            return [layout.index(c) for c in self.args["axis_names"]]
        axes = list(self.args["axes"]) if self.args["axes"] is not None else list(range(nd))
        if any(not -nd <= a < nd for a in axes):
            raise IndexError(f"{self.label}: axes must be in [{-nd}, {nd - 1}], got {axes}")
        return [a % nd for a in axes]

    def _per_axis(self, ws, name: str, count: int) -> np.ndarray | None:
        v = per_sample_list(ws, name)
        if v is None:
            return None
        if v.shape[1] == 1:
            v = np.repeat(v, count, axis=1)
        if v.shape[1] != count:
            raise RuntimeError(f"{self.label}: argument '{name}' expects either a single value or a list of {count} "
                               f"elements, {v.shape[1]} given")
        return v

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n, nd = len(src), src.ndim()
        axes = self._axes(src)
        extents = src._shapes.reshape(n, nd).astype(np.float64)
        start, end = np.zeros_like(extents), extents.copy()
        for name, target in (("roi_start", start), ("roi_end", end)):
            v = self._per_axis(ws, name, len(axes))
            if v is not None:
                target[:, axes] = v * extents[:, axes] if self.args["roi_relative"] else v
        roi_ext = np.abs(end - start)
        scales = self._per_axis(ws, "scales", len(axes))
        if scales is not None:
            ideal = roi_ext.copy()
            ideal[:, axes] = scales * roi_ext[:, axes]
            out = _ROUNDING[self.args["size_rounding"]](ideal)
        else:
            req = self._per_axis(ws, "sizes", len(axes))
            flip = np.zeros(extents.shape, bool)
            flip[:, axes] = req < 0
            ideal = roi_ext.copy()  # the other axes keep their extent
            whole = np.concatenate([np.zeros((n, len(axes))), roi_ext[:, axes]], axis=1)
            ideal[:, axes] = self.output_sizes(ws, whole, list(np.abs(req).T), False)[0]
            out = np.where(ideal > 0, np.maximum(round_half_up(ideal), 1), 0)
            start, end = np.where(flip, end, start), np.where(flip, start, end)
        if self.args["subpixel_scale"]:  # keep the exact scale about the alignment point
            align = np.zeros_like(extents) + 0.5
            align[:, axes] = self._per_axis(ws, "alignment", len(axes))
            ratio = np.divide(out, ideal, out=np.ones_like(ideal), where=ideal > 0)
            anchor = (1 - align) * start + align * end
            start, end = anchor - (anchor - start) * ratio, anchor + (end - anchor) * ratio
        changed = (out != extents) | (start != 0) | (end != extents)
        cols = np.flatnonzero(changed.any(axis=0))
        first, last = (int(cols[0]), int(cols[-1])) if len(cols) else (nd - 1, nd - 1)
        if last - first + 1 > 3:
            raise ValueError(f"{self.label}: at most 3 consecutive dimensions can be resized; dimensions "
                             f"{first}..{last} change")
        first = min(first, max(last - 1, 0))  # the kernel resamples 2 or 3 dimensions
        span = list(range(first, last + 1))
        unit = len(span) == 1  # a single dimension (a 1-D tensor): a unit one goes before it
        in_k = self._kernel_shapes(src._shapes.reshape(n, nd), span, unit)
        out_shapes = np.where(np.isin(np.arange(nd), span), out, src._shapes.reshape(n, nd)).astype(np.int64)
        out_k = self._kernel_shapes(out_shapes, span, unit)
        rois = np.concatenate([start[:, span], end[:, span]], axis=1)
        if unit:
            rois = np.column_stack([np.zeros(n), rois[:, 0], np.ones(n), rois[:, 1]])
        in_type = src.dtype
        out_type = in_type if self.args["dtype"] is None else self.args["dtype"]
        if in_type not in RESAMPLE_TYPES or out_type not in (in_type, DALIDataType.FLOAT):
            raise TypeError(f"{self.label}: resizes {', '.join(x.name for x in RESAMPLE_TYPES)} into the same type or "
                            f"FLOAT, not {in_type.name} into {out_type.name}")
        dst = ws.new_batch(out_shapes, to_numpy_type(out_type), src._layout, src._source_info)
        minf, magf = filters(ws)
        k = in_k.shape[1] - 2
        ws.kernels.resize(ws.pool, src._buf, in_k, src._offsets, int(in_type), dst._buf, out_k, dst._offsets,
                          int(out_type), k, np.ascontiguousarray(rois, np.float64),
                          np.ascontiguousarray(np.repeat(minf.reshape(n, 1), k, axis=1)),
                          np.ascontiguousarray(np.repeat(magf.reshape(n, 1), k, axis=1)), bool(self.args["antialias"]))
        return [dst]

    @staticmethod
    def _kernel_shapes(shapes: np.ndarray, span: list[int], unit: bool) -> np.ndarray:
        """(outer, [1,] span..., inner) of [N, nd] shapes."""
        outer = shapes[:, :span[0]].prod(axis=1)
        inner = shapes[:, span[-1] + 1:].prod(axis=1)
        parts = [outer[:, None]] + ([np.ones((len(shapes), 1), np.int64)] if unit else []) + \
            [shapes[:, span], inner[:, None]]
        return np.ascontiguousarray(np.concatenate(parts, axis=1), np.int64)


def empty_attrs(sizes: np.ndarray):
    attrs = empty_batch(np.full((len(sizes), 1), sizes.shape[1], np.int64), np.int32)
    attrs._buf[...] = sizes.astype(np.int32).reshape(-1)
    return attrs
