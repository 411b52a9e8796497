"""Shape-only operators that never move data: ``reshape``, ``reinterpret``, ``squeeze``,
``expand_dims``. Outputs share the input's buffer."""
from __future__ import annotations

import numpy as np

from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ..types import to_numpy_type

_RESHAPE_ARGS = [
    Arg("shape", ArgType.INT_LIST, optional=True, tensor=True, doc="new shape; one -1 is inferred"),
    Arg("rel_shape", ArgType.FLOAT_LIST, optional=True, tensor=True,
        doc="new shape relative to the input's (to the input dims src_dims maps); one negative entry is inferred"),
    Arg("src_dims", ArgType.INT_LIST, optional=True, tensor=True,
        doc="input dims to keep, in order (-1 inserts a unit dim); per sample, as many for every sample"),
    Arg("layout", ArgType.LAYOUT, optional=True, doc="layout of the output"),
]
RESHAPE = OpSchema("Reshape", "Gives each sample a new shape of the same volume (no copy).",
                   args=_RESHAPE_ARGS, min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), host_inputs=(1,))
REINTERPRET = OpSchema("Reinterpret", "Reshape that may also reinterpret the bytes as another type.",
                       args=_RESHAPE_ARGS + [Arg("dtype", ArgType.DTYPE, optional=True, doc="new element type")],
                       min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), host_inputs=(1,))
SQUEEZE = OpSchema("Squeeze", "Removes unit dimensions.",
                   args=[Arg("axes", ArgType.INT_LIST, optional=True, tensor=True,
                             doc="input dims to remove (0..ndim-1); per sample, as many for every sample"),
                         Arg("axis_names", ArgType.LAYOUT, optional=True, doc="the same by layout letters")],
                   devices=("cpu", "gpu"))
EXPAND_DIMS = OpSchema("ExpandDims", "Inserts unit dimensions at the given output positions.",
                       args=[Arg("axes", ArgType.INT_LIST, doc="positions in the output"),
                             Arg("new_axis_names", ArgType.LAYOUT, "", doc="layout letters of the new axes")],
                       devices=("cpu", "gpu"))


def _volumes(shapes: np.ndarray) -> np.ndarray:
    return shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)


def _refuse_volume_change(label: str, shapes: np.ndarray, src_shapes: np.ndarray, why: str = "") -> None:
    """A new shape must hold the sample's elements: refused in DALI's words, naming the sample."""
    bad = np.nonzero(_volumes(shapes) != _volumes(src_shapes))[0]
    if len(bad):
        i = int(bad[0])
        raise SampleError(i, f"{label}: The volume of the new shape should match the one of the original shape. "
                             f"Requested a shape with {int(_volumes(shapes[i:i + 1])[0])} elements but the original "
                             f"shape has {int(_volumes(src_shapes[i:i + 1])[0])} elements. (sample {i} of shape "
                             f"{tuple(int(e) for e in src_shapes[i])}{'; ' + why if why else ''})")


def per_sample_dims(op: Operator, ws, name: str, n: int) -> np.ndarray | None:
    """A list-of-dims argument as [N, k] int64 (k the same for every sample: the output's rank follows
    from it), or None when it is not given."""
    if name in ws.arg_inputs:
        tl = ws.arg_inputs[name]
        counts = tl._volumes()
        if len(counts) and (counts != counts[0]).any():
            raise ValueError(f"{op.label}: '{name}' must give every sample as many dims, got {counts.tolist()}")
        return np.asarray(tl.as_array(), np.int64).reshape(n, -1)
    value = op.args[name]
    return None if value is None else np.tile(np.asarray(value, np.int64).reshape(1, -1), (n, 1))


def _picked(shapes: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Per sample the extents of the input dims ``dims`` picks ([N, k]; -1: a new dim of extent 1)."""
    if not dims.shape[1]:
        return np.zeros((len(shapes), 0), np.int64)
    return np.where(dims >= 0, np.take_along_axis(shapes, np.maximum(dims, 0), axis=1), 1)


def _dims_text(shape) -> str:
    # DALI's way of printing a requested shape: its inferred (negative) extents as 0
    return " x ".join(str(max(int(e), 0)) for e in shape)


def reshaped(src: TensorListCPU, shapes: np.ndarray, layout: str, label: str, buf=None) -> TensorListCPU:
    buf = src._buf if buf is None else buf
    in_size, out_size = src._buf.dtype.itemsize, buf.dtype.itemsize
    bad = np.nonzero(_volumes(shapes) * out_size != _volumes(src._shapes) * in_size)[0]
    if len(bad):
        i = int(bad[0])
        vol, new = int(_volumes(src._shapes[i:i + 1])[0]), int(_volumes(shapes[i:i + 1])[0])
        raise ValueError(f"{label}: Input and output samples must occupy the same size in bytes. Sample index: {i}, "
                         f"actual volume: {vol} ({vol * in_size} bytes), requested volume: {new} "
                         f"({new * out_size} bytes); input shape: {_dims_text(src._shapes[i])}, requested shape: "
                         f"{_dims_text(shapes[i])}")
    if layout and len(layout) != shapes.shape[1]:
        raise ValueError(f"{label}: Requested layout '{layout}' is not compatible with a {shapes.shape[1]}D shape")
    offsets = (src._offsets * in_size // out_size).astype(np.int64)
    return type(src)._from_packed(buf, shapes, offsets, layout, src._source_info)


class _ReshapeBase(Operator):
    """The new shape, as DALI 2.4 makes it (the refusals in its words): a shape (input or argument;
    one -1 is inferred, 0 is refused), a shape relative to the input's (rel_shape: per output dim,
    relative to the input dim that src_dims maps to it), or the input dims that src_dims picks."""

    def setup(self):
        given = [present for present in (len(self.node.inputs) > 1, self.given("shape"), self.given("rel_shape"))
                 if present]
        if len(given) > 1:
            raise ArgumentValueError(f"{self.label}: Shape input, `shape` argument and `rel_shape` argument are "
                                     "mutually exclusive")
        rel = self.args.get("rel_shape")
        if rel == ():
            raise ArgumentValueError(f"{self.label}: 'rel_shape' is an empty list")
        if rel is not None and 0 in rel:
            raise ArgumentValueError(f"{self.label}: Extent of 0 is illegal ('rel_shape' {list(rel)})")
        if rel is not None and sum(r < 0 for r in rel) > 1:
            raise ArgumentValueError(f"{self.label}: Only one negative extent is allowed; got: 'rel_shape' {list(rel)}")

    def _target_shapes(self, ws, src: TensorListCPU, out_itemsize: int) -> np.ndarray:
        """Per-sample output shapes; extents are inferred from the byte size for ``out_itemsize``-byte
        output elements."""
        n, a, nd = len(src), self.args, src.ndim()
        out_volumes = _volumes(src._shapes) * src._buf.dtype.itemsize // out_itemsize
        src_dims = self._src_dims = per_sample_dims(self, ws, "src_dims", n)
        # src_dims are checked even where a shape makes them unused, as DALI does
        bad = np.argwhere((src_dims < -1) | (src_dims >= nd)) if src_dims is not None else ()
        if len(bad):
            k, d = int(bad[0][1]), int(src_dims[tuple(bad[0])])
            raise ValueError(f"{self.label}: `src_dims[{k}] == {d}` is out of bounds. The indices in `src_dims` "
                             f"should be either valid dimension indices in range [0..{nd - 1}] or -1 to insert a "
                             "new dimension.")
        if len(ws.inputs) > 1 or ws.has_arg("shape"):
            return self._given_shapes(ws, src, out_volumes)
        if ws.has_arg("rel_shape"):
            rel = ws.arg_inputs["rel_shape"].as_array().astype(np.float32).reshape(n, -1) if "rel_shape" in ws.arg_inputs \
                else np.tile(np.array(a["rel_shape"], np.float32), (n, 1))
            # one more extent than the input's dims, a trailing wildcard: a new innermost dim, inferred
            trailing_wildcard = src_dims is None and rel.shape[1] == nd + 1 and (rel[:, -1] < 0).all()
            if src_dims is None and rel.shape[1] > nd and not trailing_wildcard:
                raise ValueError(f"{self.label}: `rel_shape` has more elements ({rel.shape[1]}) than there are "
                                 f"dimensions in the input ({nd}). To add new dimensions, use `src_dims` to specify "
                                 "the mapping between input and output dimensions.")
            if src_dims is not None and src_dims.shape[1] != rel.shape[1]:
                raise ValueError(f"{self.label}: `src_dims` and `rel_shape` have different lengths: "
                                 f"{src_dims.shape[1]} vs {rel.shape[1]}")
            dims = src_dims if src_dims is not None else np.tile(np.arange(rel.shape[1]), (n, 1))
            if trailing_wildcard:
                dims[:, -1] = -1
            return self._relative_shapes(src, rel, dims, out_volumes)
        if src_dims is not None:
            shapes = _picked(src._shapes, src_dims)
            _refuse_volume_change(self.label, shapes, src._shapes)
            return shapes
        shapes = src._shapes.copy()
        if out_itemsize != src._buf.dtype.itemsize and nd:  # reinterpret: the innermost extent takes the change
            inner = shapes[:, -1] * src._buf.dtype.itemsize
            if (inner % out_itemsize).any():
                raise ValueError(f"{self.label}: The size, in bytes, of the innermost dimension is not divisible by "
                                 "the sizes of the requested output type.")
            shapes[:, -1] = inner // out_itemsize
        return shapes

    def _given_shapes(self, ws, src: TensorListCPU, out_volumes: np.ndarray) -> np.ndarray:
        n = len(src)
        if len(ws.inputs) > 1:
            tl = ws.inputs[1].as_cpu()  # shapes are host data on either device
            if np.dtype(tl._buf.dtype).kind not in "iu":
                raise TypeError(f"{self.label}: Shape input must have integral type; got: {tl.dtype.name.lower()}")
            shape = tl.as_array().astype(np.int64).reshape(n, -1)
        elif "shape" in ws.arg_inputs:
            shape = ws.arg_inputs["shape"].as_array().astype(np.int64).reshape(n, -1)
        else:
            shape = np.tile(np.array(self.args["shape"], np.int64), (n, 1))
        shape = shape.copy()
        for row in shape:
            if (row == 0).any():
                raise ValueError(f"{self.label}: Extent of 0 is illegal; got: {_dims_text(row)}")
            if (row < 0).sum() > 1:
                raise ValueError(f"{self.label}: Only one negative extent is allowed; got: {_dims_text(row)}")
        wild = shape < 0
        rows = wild.any(axis=1)
        if rows.any():
            known = np.where(wild, 1, shape).prod(axis=1)
            shape[wild] = (out_volumes // known)[rows]  # a volume that does not divide is the size check's error
        return shape

    def _relative_shapes(self, src: TensorListCPU, rel: np.ndarray, dims: np.ndarray,
                         out_volumes: np.ndarray) -> np.ndarray:
        """Extents of the mapped input dims ([N, k]; 1 for a new one) scaled by ``rel`` (float32, as DALI,
        rounded half up); a negative entry is inferred from the volume and the other extents."""
        base = _picked(src._shapes, dims)
        scaled = base.astype(np.float32) * rel
        shape = np.floor(scaled).astype(np.int64)
        shape += (scaled - np.floor(scaled)) >= 0.5
        wild = rel < 0
        if (wild.sum(axis=1) > 1).any():
            i = int(np.nonzero(wild.sum(axis=1) > 1)[0][0])
            raise ValueError(f"{self.label}: Only one negative extent is allowed; got: 'rel_shape' {rel[i].tolist()} "
                             f"for sample {i}")
        for i, d in zip(*np.nonzero(wild)):
            known = int(np.delete(shape[i], d).prod())
            if known == 0:
                raise ValueError(f"{self.label}: Cannot infer the extent of dimension {d} when the volume of remaining "
                                 f"dimensions is 0. Input shape: {_dims_text(src._shapes[i])}")
            shape[i, d] = out_volumes[i] // known
        return shape

    def _layout(self, src: TensorListCPU, shapes: np.ndarray) -> str:
        a = self.args
        if a["layout"] is not None:
            return a["layout"]
        # DALI: without `layout` the input layout is kept when the number of dimensions matches (also
        # when src_dims reorders them); otherwise src_dims picks its letters (none for a new dim)
        if shapes.shape[1] == src.ndim():
            return src._layout
        dims = self._src_dims  # per sample: letters only where every sample picks the same dims
        if dims is not None and len(dims) and src._layout and (dims >= 0).all() and (dims == dims[0]).all():
            return "".join(src._layout[d] for d in dims[0])
        return ""


@register(RESHAPE, device=("cpu", "gpu"))
class Reshape(_ReshapeBase):
    def run(self, ws):
        src = ws.inputs[0]
        shapes = self._target_shapes(ws, src, src._buf.dtype.itemsize)
        return [reshaped(src, shapes, self._layout(src, shapes), self.label)]


@register(REINTERPRET, device=("cpu", "gpu"))
class Reinterpret(_ReshapeBase):
    def run(self, ws):
        src = ws.inputs[0]
        buf = src._buf
        if self.args["dtype"] is not None:
            new = np.dtype(to_numpy_type(self.args["dtype"]))
            if src._buf.nbytes % new.itemsize:
                raise ValueError(f"{self.label}: the data size is not a multiple of {new.name}'s size")
            buf = src._buf.view(new)
        shapes = self._target_shapes(ws, src, buf.dtype.itemsize)
        return [reshaped(src, shapes, self._layout(src, shapes), self.label, buf)]


@register(SQUEEZE, device=("cpu", "gpu"))
class Squeeze(Operator):
    """Axes are positions in the input, 0..ndim-1 (DALI 2.4 documents that range and silently
    skips others, negative ones included; here they are an error). A removed dim has extent 1,
    unless the sample is empty before and after."""

    def setup(self):
        if self.given("axes") and self.args["axis_names"] is not None:
            raise ArgumentValueError(f"{self.label}: Provided both ``axes`` and ``axis_names`` arguments")
        if not self.given("axes") and self.args["axis_names"] is None:
            raise ArgumentValueError(f"{self.label}: give 'axes' or 'axis_names'")

    def run(self, ws):
        src = ws.inputs[0]
        n, nd, layout = len(src), src.ndim(), src._layout
        if self.args["axis_names"] is not None:
            missing = [c for c in self.args["axis_names"] if c not in layout]
            if missing:
                raise ArgumentValueError(f"{self.label}: Axis '{missing[0]}' is not present in the input layout "
                                         f"'{layout}'")
            axes = np.tile([layout.index(c) for c in self.args["axis_names"]], (n, 1)).astype(np.int64)
        else:
            axes = per_sample_dims(self, ws, "axes", n)  # [N, k]: each sample's own
        for row in axes:
            bad = [int(a) for a in row if not 0 <= a < nd]
            if bad:
                raise ArgumentValueError(f"{self.label}: axes {bad} out of range for {nd}-D input (valid: 0..{nd - 1})")
            if len(set(row.tolist())) != len(row):
                raise ArgumentValueError(f"{self.label}: Specified at least twice same dimension to remove. (axes "
                                         f"{row.tolist()})")
        keep = np.ones((n, nd), bool)
        np.put_along_axis(keep, axes, False, axis=1)
        shapes = src._shapes[keep].reshape(n, nd - axes.shape[1])
        _refuse_volume_change(self.label, shapes, src._shapes, f"only dimensions of extent 1 can be squeezed "
                                                                f"(axes {sorted(axes[0].tolist()) if n else []})")
        # a layout where every sample removes the same dims
        removed = axes[0].tolist() if n and (axes == axes[0]).all() else None
        if not n and "axes" not in ws.arg_inputs:
            removed = [layout.index(c) for c in self.args["axis_names"]] if self.args["axis_names"] is not None \
                else list(self.args["axes"])
        out_layout = "".join(c for d, c in enumerate(layout) if d not in removed) if layout and removed is not None \
            else ""
        return [reshaped(src, shapes, out_layout, self.label)]


@register(EXPAND_DIMS, device=("cpu", "gpu"))
class ExpandDims(Operator):
    """Axes are positions in the output (non-negative, each once; DALI refuses negative ones);
    new_axis_names[i] names axes[i]. The output has a layout when the input has one (or is 0-D)
    and the new axes are named; without names, none (no axes: the input's)."""

    def setup(self):
        # DALI's words, then what was given
        axes, names = list(self.args["axes"]), self.args["new_axis_names"]
        if any(a < 0 for a in axes):
            raise ArgumentValueError(f"{self.label}: Axis value can't be negative (axes {axes} are output positions)")
        if names and len(names) != len(axes):
            raise ArgumentValueError(f"{self.label}: Specified {len(axes)} new dimensions, but layout contains only "
                                     f"{len(names)} new dimension names (new_axis_names '{names}')")
        if len(set(axes)) != len(axes):
            raise ArgumentValueError(f"{self.label}: axes {axes} name a position more than once")

    def run(self, ws):
        src = ws.inputs[0]
        axes, names = list(self.args["axes"]), self.args["new_axis_names"]
        nd = src.ndim() + len(axes)
        if any(a >= nd for a in axes):
            raise ArgumentValueError(f"{self.label}: Data has not enough dimensions to add new axes at specified "
                                     f"indices. (axes {axes}: a {src.ndim()}-D input expanded by {len(axes)} has "
                                     f"positions 0..{nd - 1})")
        if names and not src._layout and src.ndim():
            raise ArgumentValueError(f"{self.label}: Specifying ``new_axis_names`` requires an input with a proper "
                                     "layout.")
        new = dict(zip(axes, names or [""] * len(axes)))
        old = iter(range(src.ndim()))
        dims = [None if d in new else next(old) for d in range(nd)]
        cols = [np.ones(len(src), np.int64) if d is None else src._shapes[:, d] for d in dims]
        if not axes:
            layout = src._layout
        else:
            layout = "".join(new[i] if d is None else src._layout[d] for i, d in enumerate(dims)) if names else ""
        shapes = np.stack(cols, axis=1) if cols else np.zeros((len(src), 0), np.int64)
        return [reshaped(src, shapes, layout, self.label)]
