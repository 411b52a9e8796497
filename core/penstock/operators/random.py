"""Random number generators: ``random.uniform``, ``coin_flip``, ``normal``, ``choice``, ``beta``.

Each operator draws from a counter-based stream keyed on its seed and the iteration index, so
results do not depend on threads or timing. Draws for the whole batch are made in one call.
"""
from __future__ import annotations

import numpy as np

from .. import _engine
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType as T, _is_float, to_dali_type, to_numpy_type
from .._batch import contiguous, empty_batch

_SHAPE = Arg("shape", ArgType.INT_LIST, optional=True, tensor=True, doc="shape of each sample (default: scalar)")


def _schema(name: str, doc: str, args: list, dtype: T, legacy: tuple = (), min_inputs: int = 0) -> OpSchema:
    return OpSchema(f"random.{name}", doc,
                    args=args + [_SHAPE, Arg("dtype", ArgType.DTYPE, dtype, doc="output type")],
                    min_inputs=min_inputs, max_inputs=1, devices=("cpu", "gpu"), is_random=True,
                    legacy_names=legacy)


def sample_shapes(op: Operator, ws) -> np.ndarray:
    """[batch, ndim] output shapes: from ``shape`` (constant or per sample) or the shape_like input."""
    n = ws.batch_size
    if ws.inputs and op.schema.min_inputs == 0:
        return ws.inputs[0]._shapes.copy()
    if "shape" in ws.arg_inputs:
        tl = ws.arg_inputs["shape"]
        if not tl.is_dense_tensor() or tl.ndim() > 1:
            raise ValueError(f"{op.label}: per-sample 'shape' must be a 1-D list of extents of equal length")
        return tl.as_array().astype(np.int64).reshape(n, -1)
    shape = op.args.get("shape")
    shape = () if shape is None else tuple(shape)
    out = np.empty((n, len(shape)), np.int64)  # (np.tile makes a dozen numpy calls of it)
    out[:] = shape
    return out


def _per_element(values: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """Repeats a per-sample value over each sample's elements."""
    if not shapes.shape[1]:  # scalars: one element each
        return values
    return np.repeat(values, shapes.prod(axis=1), axis=0)


def uniform_doubles(rng: np.random.Generator, count: int) -> np.ndarray:
    """``rng.random(count)``, drawn by the engine with the GIL held (numpy gives it away to draw)."""
    bits = rng.bit_generator
    with bits.lock:
        return _engine.random_doubles(bits.capsule, count)


def uniform_integers(rng: np.random.Generator, count: int, high: int) -> np.ndarray:
    """``rng.integers(0, high, count)`` (int64), drawn by the engine with the GIL held."""
    if high < 1:
        raise ValueError(f"uniform_integers: high must be positive, got {high}")
    bits = rng.bit_generator
    with bits.lock:
        return _engine.random_integers(bits.capsule, count, high - 1)


def _volume(shapes: np.ndarray) -> int:
    return int(shapes.prod(axis=1).sum()) if shapes.shape[1] else len(shapes)


class _RandomOp(Operator):
    dtypes: tuple = ()  # the output types this generator supports (empty: any)

    def setup(self):
        dtype = self.args["dtype"]
        if self.dtypes and dtype not in self.dtypes:
            raise ValueError(f"{self.label}: dtype {dtype.name} is not supported "
                             f"({', '.join(t.name for t in self.dtypes)})")

    def _out(self, ws, draws: np.ndarray, shapes: np.ndarray):
        dtype = self.args["dtype"]
        out = empty_batch(shapes, to_numpy_type(dtype))
        if _is_float(dtype):
            out._buf[...] = draws
        else:
            np.copyto(out._buf, np.round(draws) if draws.dtype.kind == "f" else draws, casting="unsafe")
        return [ws.from_host(out)]  # drawn on the host: the same numbers on either device


@register(_schema("Uniform", "Uniformly distributed numbers in [range[0], range[1]) (integer dtype: both "
                  "ends included, the ends truncated to integers) or from `values`.",
                  [Arg("range", ArgType.FLOAT_LIST, (-1.0, 1.0), tensor=True, doc="[lo, hi)"),
                   Arg("values", ArgType.FLOAT_LIST, optional=True, tensor=True, doc="discrete set to pick from")],
                  T.FLOAT, legacy=("Uniform",), min_inputs=0), device=("cpu", "gpu"))
class UniformCPU(_RandomOp):
    def run(self, ws):
        shapes = sample_shapes(self, ws)
        rng, total = ws.rng, _volume(shapes)
        if ws.has_arg("values"):
            values = np.asarray(self.args["values"], np.float64) if "values" not in ws.arg_inputs else None
            if values is None:
                raise NotImplementedError(f"{self.label}: per-sample 'values' are not supported")
            if not len(values):
                raise ValueError(f"{self.label}: 'values' must not be empty")
            draws = values[uniform_integers(rng, total, len(values))]
        else:
            lohi = ws.per_sample("range", np.float64, 2)
            lo, hi = _per_element(lohi[:, 0], shapes), _per_element(lohi[:, 1], shapes)
            if (hi <= lo).any():  # an empty range is an error for integer dtypes too (DALI)
                raise ValueError(f"{self.label}: 'range' must be [lo, hi) with lo < hi")
            if _is_float(self.args["dtype"]):
                ftype = to_numpy_type(self.args["dtype"])
                draws = (lo + (hi - lo) * uniform_doubles(rng, total)).astype(ftype)
                # [lo, hi) in the output type too: a draw rounded up to hi takes the last value below it
                top = hi.astype(ftype)
                draws = np.where(draws >= top, np.nextafter(top, lo.astype(ftype)), draws)
            else:  # integers in [trunc(lo), trunc(hi)], both ends included (DALI)
                draws = rng.integers(np.trunc(lo).astype(np.int64), np.trunc(hi).astype(np.int64), endpoint=True)
        return self._out(ws, draws, shapes)


@register(_schema("CoinFlip", "0/1 with P(1) = probability.",
                  [Arg("probability", ArgType.FLOAT, 0.5, tensor=True, doc="chance of 1")],
                  T.INT32, legacy=("CoinFlip",)), device=("cpu", "gpu"))
class CoinFlipCPU(_RandomOp):
    dtypes = (T.BOOL, T.UINT8, T.INT32)

    def run(self, ws):
        shapes = sample_shapes(self, ws)
        # a probability below 0 or above 1 acts as 0 or 1 (DALI accepts them)
        p = _per_element(ws.per_sample("probability", np.float64), shapes)
        return self._out(ws, (uniform_doubles(ws.rng, _volume(shapes)) < p).astype(np.int64), shapes)


@register(_schema("Normal", "Normally distributed numbers.",
                  [Arg("mean", ArgType.FLOAT, 0.0, tensor=True), Arg("stddev", ArgType.FLOAT, 1.0, tensor=True)],
                  T.FLOAT, legacy=("NormalDistribution",)), device=("cpu", "gpu"))
class NormalCPU(_RandomOp):
    def run(self, ws):
        shapes = sample_shapes(self, ws)
        mean = _per_element(ws.per_sample("mean", np.float64), shapes)
        std = _per_element(ws.per_sample("stddev", np.float64), shapes)
        return self._out(ws, mean + std * ws.rng.standard_normal(_volume(shapes)), shapes)


@register(_schema("Beta", "Beta-distributed numbers in [0, 1].",
                  [Arg("alpha", ArgType.FLOAT, 1.0, tensor=True), Arg("beta", ArgType.FLOAT, 1.0, tensor=True)],
                  T.FLOAT), device=("cpu", "gpu"))
class BetaCPU(_RandomOp):
    dtypes = (T.FLOAT, T.FLOAT64)

    def run(self, ws):
        shapes = sample_shapes(self, ws)
        a = _per_element(ws.per_sample("alpha", np.float64), shapes)
        b = _per_element(ws.per_sample("beta", np.float64), shapes)
        if (a <= 0).any() or (b <= 0).any():
            raise ValueError(f"{self.label}: 'alpha' and 'beta' must be positive")
        return self._out(ws, ws.rng.beta(a, b), shapes)


CHOICE = OpSchema(
    "random.Choice", "Random picks from `a`: an integer n (picks 0..n-1) or the elements of a tensor along its "
                     "first axis (each output element then has the shape of one of them).",
    # no `dtype`: the output has the type of `a`, and DALI 2.4 has no such argument either
    args=[Arg("p", ArgType.FLOAT_LIST, optional=True, tensor=True,
              doc="probabilities of the elements (one value: the same for each)"), _SHAPE],
    min_inputs=1, max_inputs=2, devices=("cpu",), is_random=True)

_INTEGERS = "uint8, uint16, uint32, uint64, int8, int16, int32, int64"


@register(CHOICE)
class ChoiceCPU(Operator):
    """Input 0 is `a`; an optional input 1 gives the output shape (shape_like)."""

    def _probabilities(self, ws, counts: np.ndarray) -> np.ndarray | None:
        """[N, max count] cumulative probabilities of each sample's elements (inf past its count)."""
        if "p" in ws.arg_inputs:
            tl = contiguous(ws.arg_inputs["p"])
            rows = [np.asarray(tl._sample_array(i), np.float64).reshape(-1) for i in range(len(counts))]
        elif self.args["p"] is not None:
            rows = [np.asarray(self.args["p"], np.float64).reshape(-1)] * len(counts)
        else:
            return None
        cdf = np.full((len(counts), int(counts.max())), np.inf)
        for i, (p, c) in enumerate(zip(rows, counts.tolist())):  # argument values: a few per sample
            if p.size == 1:
                p = np.repeat(p, c)
            if p.size != c:
                raise ArgumentValueError(f'{self.label}: Unexpected shape for argument "p". Expected {{{c}}}, but got '
                                         f"{{{p.size}}}")
            bad = np.nonzero((p < 0) | (p > 1))[0]
            if bad.size:
                raise ArgumentValueError(f"{self.label}: Probabilities must be in range [0, 1], but got: "
                                         f"{p[bad[0]]:g} for sample: {i} at index {int(bad[0])}.")
            if not np.isclose(p.sum(), 1.0, atol=1e-6):
                raise ArgumentValueError(f"{self.label}: Sum of probabilities must be 1.0, but got {p.sum():g} for "
                                         f"sample: {i}.")
            cdf[i, :c] = np.cumsum(p)
        return cdf

    def run(self, ws):
        src = contiguous(ws.inputs[0])
        n = len(src)
        scalar = src.ndim() == 0
        if scalar and src._buf.dtype.kind not in "iu":
            raise ArgumentValueError(f"{self.label}: Data type {to_dali_type(src._buf.dtype).name.lower()} is not "
                                     f"supported for 0D inputs. Supported types are: {_INTEGERS}")
        counts = (src._buf[src._offsets] if scalar else src._shapes[:, 0]).astype(np.int64)
        bad = np.nonzero(counts <= 0)[0]
        if bad.size:
            raise ArgumentValueError(f"{self.label}: Expected positive number of elements for sampling, got: "
                                     f"{int(counts[bad[0]])} for sample: {int(bad[0])}.")
        picks = ws.inputs[1]._shapes.copy() if len(ws.inputs) > 1 else sample_shapes(self, ws)
        vols = picks.prod(axis=1) if picks.shape[1] else np.ones(n, np.int64)
        rows = np.repeat(np.arange(n), vols)
        u = ws.rng.random(int(vols.sum()))
        cdf = self._probabilities(ws, counts)
        if cdf is None:
            idx = np.floor(u * counts[rows]).astype(np.int64)
        else:
            idx = np.minimum((u[:, None] >= cdf[rows]).sum(axis=1), counts[rows] - 1)
        elems = src._shapes[:, 1:]
        out = empty_batch(np.concatenate([picks, elems], axis=1), src._buf.dtype, self._layout(src, picks.shape[1]))
        if scalar:
            out._buf[...] = idx
            return [out]
        ev = elems.prod(axis=1) if elems.shape[1] else np.ones(n, np.int64)  # one element's volume
        lens = ev[rows]
        starts = src._offsets[rows] + idx * lens
        take = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
        out._buf[...] = src._buf[take]
        return [out]

    @staticmethod
    def _layout(src, pick_ndim: int) -> str:
        """As DALI: a 1-D shape of picks replaces the chosen axis (the layout stays), no shape drops it,
        more axes have no names."""
        layout = src._layout
        if not layout or pick_ndim > 1:
            return ""
        return layout if pick_ndim == 1 else layout[1:]
