"""Shape-only operators that never move data: ``reshape``, ``reinterpret``, ``squeeze``,
``expand_dims``. Outputs share the input's buffer."""
from __future__ import annotations

import numpy as np

from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..tensors import TensorListCPU
from ..types import to_numpy_type

_RESHAPE_ARGS = [
    Arg("shape", ArgType.INT_LIST, optional=True, tensor=True, doc="new shape; one -1 is inferred, 0 copies the input extent"),
    Arg("rel_shape", ArgType.FLOAT_LIST, optional=True, tensor=True,
        doc="new shape relative to the input's; one negative entry is inferred"),
    Arg("src_dims", ArgType.INT_LIST, optional=True, doc="input dims to keep, in order (-1 inserts a unit dim)"),
    Arg("layout", ArgType.LAYOUT, optional=True, doc="layout of the output"),
]
RESHAPE = OpSchema("Reshape", "Gives each sample a new shape of the same volume (no copy).",
                   args=_RESHAPE_ARGS, min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), host_inputs=(1,))
REINTERPRET = OpSchema("Reinterpret", "Reshape that may also reinterpret the bytes as another type.",
                       args=_RESHAPE_ARGS + [Arg("dtype", ArgType.DTYPE, optional=True, doc="new element type")],
                       min_inputs=1, max_inputs=2, devices=("cpu", "gpu"), host_inputs=(1,))
SQUEEZE = OpSchema("Squeeze", "Removes unit dimensions.",
                   args=[Arg("axes", ArgType.INT_LIST, optional=True, doc="input dims to remove (0..ndim-1)"),
                         Arg("axis_names", ArgType.LAYOUT, optional=True, doc="the same by layout letters")],
                   devices=("cpu", "gpu"))
EXPAND_DIMS = OpSchema("ExpandDims", "Inserts unit dimensions at the given output positions.",
                       args=[Arg("axes", ArgType.INT_LIST, doc="positions in the output"),
                             Arg("new_axis_names", ArgType.LAYOUT, "", doc="layout letters of the new axes")],
                       devices=("cpu", "gpu"))


def _volumes(shapes: np.ndarray) -> np.ndarray:
    return shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), np.int64)


def reshaped(src: TensorListCPU, shapes: np.ndarray, layout: str, label: str, buf=None) -> TensorListCPU:
    buf = src._buf if buf is None else buf
    scale = buf.dtype.itemsize / src._buf.dtype.itemsize
    in_vol = _volumes(src._shapes) / scale
    bad = np.nonzero(_volumes(shapes) != in_vol)[0]
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"{label}: sample {i} of shape {tuple(int(e) for e in src._shapes[i])} cannot take shape "
                         f"{tuple(int(e) for e in shapes[i])}: the number of elements differs")
    offsets = (src._offsets / scale).astype(np.int64)
    return type(src)._from_packed(buf, shapes, offsets, layout, src._source_info)


class _ReshapeBase(Operator):
    def setup(self):
        a = self.args
        given = [what for what, present in (("a shape input", len(self.node.inputs) > 1),
                                            ("'shape'", self.given("shape")),
                                            ("'rel_shape'", self.given("rel_shape")))
                 if present]
        if len(given) > 1:
            raise ArgumentValueError(f"{self.label}: {' and '.join(given)} are mutually exclusive")
        rel = a.get("rel_shape")
        if rel == ():
            raise ArgumentValueError(f"{self.label}: 'rel_shape' is an empty list")
        if rel is not None and 0 in rel:
            raise ArgumentValueError(f"{self.label}: 'rel_shape' {list(rel)} has an extent of 0")
        if rel is not None and sum(r < 0 for r in rel) > 1:
            raise ArgumentValueError(f"{self.label}: 'rel_shape' {list(rel)} has more than one negative "
                                     "(inferred) extent")

    def _target_shapes(self, ws, src: TensorListCPU) -> np.ndarray:
        n, a = len(src), self.args
        # src_dims are checked even where a shape makes them unused, as DALI does
        bad_dims = [d for d in a["src_dims"] or () if not -1 <= d < src.ndim()]
        if bad_dims:
            raise ValueError(f"{self.label}: src_dims {bad_dims} out of range for {src.ndim()}-D input "
                             f"(valid: -1 for a new unit dim, 0..{src.ndim() - 1})")
        if len(ws.inputs) > 1:
            tl = ws.inputs[1].as_cpu()  # shapes are host data on either device
            return tl.as_array().astype(np.int64).reshape(n, -1)
        if ws.has_arg("shape"):
            shape = ws.arg_inputs["shape"].as_array().astype(np.int64).reshape(n, -1) if "shape" in ws.arg_inputs \
                else np.tile(np.array(a["shape"], np.int64), (n, 1))
            shape = shape.copy()
            zero = shape == 0
            if zero.any():
                if shape.shape[1] > src.ndim():
                    raise ValueError(f"{self.label}: 0 (copy the input extent) needs a matching input dimension")
                shape[zero] = src._shapes[:, :shape.shape[1]][zero]
            wild = shape == -1
            if (wild.sum(axis=1) > 1).any():
                raise ValueError(f"{self.label}: at most one -1 is allowed in 'shape'")
            if wild.any():
                known = np.where(wild, 1, shape).prod(axis=1)
                rows = wild.any(axis=1)
                vol = _volumes(src._shapes)
                if (vol[rows] % np.maximum(known[rows], 1)).any():
                    raise ValueError(f"{self.label}: the input volume is not divisible by the known extents of 'shape'")
                shape[wild] = (vol // np.maximum(known, 1))[rows]
            return shape
        if ws.has_arg("rel_shape"):
            rel = ws.arg_inputs["rel_shape"].as_array().astype(np.float32).reshape(n, -1) if "rel_shape" in ws.arg_inputs \
                else np.tile(np.array(a["rel_shape"], np.float32), (n, 1))
            if rel.shape[1] > src.ndim():
                raise ValueError(f"{self.label}: rel_shape has more entries than the input has dimensions")
            return self._rel_target_shapes(src, rel)
        if a["src_dims"] is not None:
            dims = list(a["src_dims"])
            cols = [src._shapes[:, d] if d >= 0 else np.ones(n, np.int64) for d in dims]
            return np.stack(cols, axis=1) if cols else np.zeros((n, 0), np.int64)
        return src._shapes.copy()

    def _rel_target_shapes(self, src: TensorListCPU, rel: np.ndarray) -> np.ndarray:
        """Extents scaled by ``rel`` (float32, as DALI, rounded half up); a negative entry is
        inferred: the input volume divided (rounding down) by the other output extents."""
        scaled = src._shapes[:, :rel.shape[1]].astype(np.float32) * rel
        shape = np.floor(scaled).astype(np.int64)
        shape += (scaled - np.floor(scaled)) >= 0.5
        wild = rel < 0
        if (wild.sum(axis=1) > 1).any():
            raise ValueError(f"{self.label}: 'rel_shape' has more than one negative (inferred) extent")
        for i, d in zip(*np.nonzero(wild)):
            known = int(np.delete(shape[i], d).prod())
            if known == 0:
                raise ValueError(f"{self.label}: sample {i} of shape {tuple(int(e) for e in src._shapes[i])}: "
                                 f"cannot infer the extent of dimension {d} of 'rel_shape' when the other "
                                 "extents have a volume of 0")
            shape[i, d] = _volumes(src._shapes[i:i + 1])[0] // known
        return shape

    def _layout(self, src: TensorListCPU, shapes: np.ndarray) -> str:
        a = self.args
        if a["layout"] is not None:
            return a["layout"]
        if a["src_dims"] is not None and src._layout:
            return "".join(src._layout[d] if d >= 0 else "" for d in a["src_dims"]) if -1 not in a["src_dims"] else ""
        # DALI: without `layout` the input layout is kept when the number of dimensions matches,
        # and reset to empty when it does not
        return src._layout if shapes.shape[1] == src.ndim() else ""


@register(RESHAPE, device=("cpu", "gpu"))
class Reshape(_ReshapeBase):
    def run(self, ws):
        src = ws.inputs[0]
        shapes = self._target_shapes(ws, src)
        return [reshaped(src, shapes, self._layout(src, shapes), self.label)]


@register(REINTERPRET, device=("cpu", "gpu"))
class Reinterpret(_ReshapeBase):
    def run(self, ws):
        src = ws.inputs[0]
        buf = src._buf
        shapes = self._target_shapes(ws, src)
        if self.args["dtype"] is not None:
            new = np.dtype(to_numpy_type(self.args["dtype"]))
            if src._buf.nbytes % new.itemsize:
                raise ValueError(f"{self.label}: the data size is not a multiple of {new.name}'s size")
            buf = src._buf.view(new)
            if np.array_equal(shapes, src._shapes) and new.itemsize != src._buf.dtype.itemsize and shapes.shape[1]:
                shapes = shapes.copy()
                shapes[:, -1] = shapes[:, -1] * src._buf.dtype.itemsize // new.itemsize
        return [reshaped(src, shapes, self._layout(src, shapes), self.label, buf)]


@register(SQUEEZE, device=("cpu", "gpu"))
class Squeeze(Operator):
    """Axes are positions in the input, 0..ndim-1 (DALI 2.4 documents that range and silently
    skips others, negative ones included; here they are an error). A removed dim has extent 1,
    unless the sample is empty before and after."""

    def setup(self):
        if self.args["axes"] is not None and self.args["axis_names"] is not None:
            raise ArgumentValueError(f"{self.label}: 'axes' and 'axis_names' are mutually exclusive")
        if self.args["axes"] is None and self.args["axis_names"] is None:
            raise ArgumentValueError(f"{self.label}: give 'axes' or 'axis_names'")

    def run(self, ws):
        src = ws.inputs[0]
        nd, layout = src.ndim(), src._layout
        if self.args["axis_names"] is not None:
            missing = [c for c in self.args["axis_names"] if c not in layout]
            if missing:
                raise ArgumentValueError(f"{self.label}: axis_names '{self.args['axis_names']}': "
                                         f"'{''.join(missing)}' not in the input layout '{layout}'")
            axes = [layout.index(c) for c in self.args["axis_names"]]
        else:
            axes = list(self.args["axes"])
        bad = [a for a in axes if not 0 <= a < nd]
        if bad:
            raise ArgumentValueError(f"{self.label}: axes {bad} out of range for {nd}-D input (valid: 0..{nd - 1})")
        if len(set(axes)) != len(axes):
            raise ArgumentValueError(f"{self.label}: axes {axes} name a dimension more than once")
        keep = [d for d in range(nd) if d not in axes]
        shapes = src._shapes[:, keep]
        wrong = (src._shapes[:, axes] != 1).any(axis=1) & ((_volumes(src._shapes) != 0) | (_volumes(shapes) != 0))
        if wrong.any():
            i = int(np.nonzero(wrong)[0][0])
            raise SampleError(i, f"{self.label}: sample {i} of shape {tuple(int(e) for e in src._shapes[i])}: only "
                                 f"dimensions of extent 1 can be squeezed (axes {sorted(axes)})")
        return [reshaped(src, shapes, "".join(layout[d] for d in keep) if layout else "", self.label)]


@register(EXPAND_DIMS, device=("cpu", "gpu"))
class ExpandDims(Operator):
    """Axes are positions in the output (non-negative, each once; DALI refuses negative ones);
    new_axis_names[i] names axes[i]. The output has a layout when the input has one (or is 0-D)
    and the new axes are named; without names, none (no axes: the input's)."""

    def setup(self):
        axes, names = list(self.args["axes"]), self.args["new_axis_names"]
        if any(a < 0 for a in axes):
            raise ArgumentValueError(f"{self.label}: axes {axes} must not be negative (they are output positions)")
        if len(set(axes)) != len(axes):
            raise ArgumentValueError(f"{self.label}: axes {axes} name a position more than once")
        if names and len(names) != len(axes):
            raise ArgumentValueError(f"{self.label}: new_axis_names '{names}' has {len(names)} letters for "
                                     f"{len(axes)} axes")

    def run(self, ws):
        src = ws.inputs[0]
        axes, names = list(self.args["axes"]), self.args["new_axis_names"]
        nd = src.ndim() + len(axes)
        if any(a >= nd for a in axes):
            raise ArgumentValueError(f"{self.label}: axes {axes} do not fit: a {src.ndim()}-D input expanded by "
                                     f"{len(axes)} has positions 0..{nd - 1}")
        if names and not src._layout and src.ndim():
            raise ArgumentValueError(f"{self.label}: new_axis_names needs an input with a layout")
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
