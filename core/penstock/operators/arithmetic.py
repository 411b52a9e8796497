"""Element-wise arithmetic on DataNodes (Python operators and ``penstock.math``).

Type promotion follows DALI (api.md §6.2): Python ints are INT32 and floats FLOAT; mixed
signed/unsigned integers widen; integer arithmetic wraps; ``/`` of integers gives FLOAT. The
promoted operands are computed by one native call per operation.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _engine, _hooks
from .._graph import make_op
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from ..data_node import DataNode
from ..tensors import TensorListCPU
from ..types import (DALIDataType as T, ScalarConstant, _is_float, _is_int, _is_signed,
                     _python_scalar_type, _type_size, to_numpy_type)

BINARY_CODES = {name: i for i, name in enumerate(
    ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "eq", "ne", "lt", "le",
     "gt", "ge", "bitand", "bitor", "bitxor", "shl", "shr", "atan2", "fpow"])}
UNARY_CODES = {name: i for i, name in enumerate(
    ["neg", "abs", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "floor", "ceil",
     "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
     "bitnot", "logicalnot"])}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
BITWISE = {"bitand", "bitor", "bitxor", "shl", "shr"}
FLOAT_RESULT = {"div", "atan2", "fpow"}
# operations that refuse operands which are all booleans (DALI: a product, bitwise operations and
# comparisons of booleans are allowed)
NOT_FOR_BOOLEANS = {"add", "sub", "div", "floordiv", "mod", "pow", "min", "max", "fpow", "atan2", "clamp"}
# how DALI's messages name an operation: by its Python symbol, else by its name
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "neg": "-",
           "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "bitand": "&",
           "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>", "bitnot": "~"}
# DALI's names of the operations where they differ from ours (its layout messages use them)
DALI_NAMES = {"div": "fdiv", "floordiv": "div", "ne": "neq", "le": "leq", "ge": "geq", "shl": "lshift",
              "shr": "rshift", "neg": "minus"}
# operations computed by another kernel operation: fabs is abs in a floating-point type
KERNEL_OPS = {"fabs": "abs"}

_INT_OF_SIZE = {(1, True): T.INT8, (2, True): T.INT16, (4, True): T.INT32, (8, True): T.INT64,
                (1, False): T.UINT8, (2, False): T.UINT16, (4, False): T.UINT32, (8, False): T.UINT64}


def promote(a: T, b: T) -> T:
    """The common type of two operands."""
    if a == b:
        return a
    if a == T.BOOL:
        return b
    if b == T.BOOL:
        return a
    if _is_float(a) or _is_float(b):
        if _is_float(a) and _is_float(b):
            return a if _type_size(a) >= _type_size(b) else b
        return a if _is_float(a) else b
    sa, sb = _is_signed(a), _is_signed(b)
    if sa == sb:
        return a if _type_size(a) >= _type_size(b) else b
    signed, unsigned = (a, b) if sa else (b, a)
    if _type_size(signed) <= _type_size(unsigned):
        return _INT_OF_SIZE[(min(8, 2 * _type_size(unsigned)), True)]
    return signed


def _symbol(op: str) -> str:
    return SYMBOLS.get(op, op)


def _float16_refused(types: list[T]) -> None:
    if T.FLOAT16 in types:
        if len(types) == 1:
            raise TypeError("Unsupported type: float16 (arithmetic on FLOAT16 is not supported)")
        side = "Left" if types[0] == T.FLOAT16 else "Right"
        raise TypeError(f"{side} operand data type not supported, DALIDataType: float16 "
                        "(arithmetic on FLOAT16 is not supported)")


def result_type(op: str, types: list[T]) -> tuple[T, T]:
    """(compute type, output type) of an operation on operands of ``types``; the refusals use
    DALI's words, which code written for it matches."""
    compute = types[0]
    for t in types[1:]:
        compute = promote(compute, t)
    if op in BITWISE and any(_is_float(t) for t in types):
        raise TypeError(f"Inputs to bitwise operator `{_symbol(op)}` must be of integral type. "
                        f"Got {', '.join(t.name for t in types)}")
    if op in NOT_FOR_BOOLEANS and all(t == T.BOOL for t in types):
        raise TypeError(f"Inputs to arithmetic operator `{_symbol(op)}` cannot be booleans. Consider using "
                        "bitwise operators `|`, `&`, `^` or a numeric type as one of the inputs to force type "
                        "promotions of the booleans. Note: using `*` (multiplication) is still allowed for "
                        "boolean inputs.")
    _float16_refused(types)
    if op in FLOAT_RESULT and not _is_float(compute):
        compute = T.FLOAT
    return compute, (T.BOOL if op in COMPARISONS else compute)


def unary_types(op: str, t: T) -> tuple[T, T]:
    if op == "bitnot" and _is_float(t):
        raise TypeError(f"Inputs to bitwise operator `~` must be of integral type. Got {t.name}")
    if t == T.BOOL and op not in ("bitnot", "logicalnot"):
        raise TypeError(f"Input to arithmetic operator `{_symbol(op)}` cannot be a boolean. Consider using "
                        "bitwise operator `~` or a numeric type.")
    _float16_refused([t])
    if op in ("neg", "abs", "bitnot", "logicalnot"):
        return t, t
    compute = t if _is_float(t) else T.FLOAT
    return compute, compute


ARITHMETIC = OpSchema(
    "_Arithmetic", "Element-wise arithmetic (generated by DataNode operators and penstock.math).",
    args=[Arg("op", ArgType.STR, doc="operation name"),
          Arg("operands", ArgType.ANY, doc="per operand: ('input', k) or ('scalar', value, type code)")],
    min_inputs=0, max_inputs=-1, devices=("cpu", "gpu"), internal=True)


def _operand(value: Any, inputs: list) -> tuple:
    if isinstance(value, DataNode):
        inputs.append(value)
        return ("input", len(inputs) - 1)
    if isinstance(value, ScalarConstant):
        return ("scalar", value.value, int(value.dtype))
    if isinstance(value, (bool, int, float, np.generic)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        v = value[()] if isinstance(value, np.ndarray) else value
        return ("scalar", v.item() if isinstance(v, np.generic) else v, int(_python_scalar_type(v)))
    if isinstance(value, (list, tuple, np.ndarray)):
        from .constant import constant_node
        inputs.append(constant_node(value))
        return ("input", len(inputs) - 1)
    raise TypeError(f"Expected scalar value of type 'bool', 'int' or 'float', got {type(value)}. (An arithmetic "
                    "operand is a DataNode, a number or an array constant.)")


def _refuse_nested_nodes(op: str, values: tuple) -> None:
    """A list or tuple holding DataNodes (an operator's several outputs, most often) is not an
    operand; refused in DALI's words, naming the operation as Python code spells it."""
    for k, value in enumerate(values):
        if isinstance(value, (list, tuple)) and any(isinstance(x, DataNode) for x in value):
            name = "**" if op == "pow" else _symbol(op)
            raise TypeError(f"The input {k} of operator `{name}` must be a `DataNode` or a compatible constant. "
                            f"Got a `{type(value).__name__}` with nested `DataNode`(s).\n"
                            "Did you pass a return value of an operator producing multiple outputs?")


def expression(op: str, *values: Any) -> DataNode:
    """``op`` (a name of BINARY_CODES or UNARY_CODES, "fabs" or "clamp") over DataNodes and constants."""
    _refuse_nested_nodes(op, values)
    inputs: list[DataNode] = []
    operands = tuple(_operand(v, inputs) for v in values)
    if not inputs:
        raise TypeError("an arithmetic expression needs at least one DataNode operand")
    device = "gpu" if any(i.device == "gpu" for i in inputs) else "cpu"
    return make_op(ARITHMETIC, inputs, {"op": op, "operands": operands, "device": device})[0]


def binary(op: str, a: Any, b: Any) -> DataNode:
    return expression(op, a, b)


def unary(op: str, a: Any) -> DataNode:
    return expression(op, a)


_hooks.install(binary=binary, unary=unary)  # DataNode's arithmetic, comparison and bitwise operators


def _broadcast_shapes(shapes: list[np.ndarray], n: int) -> np.ndarray:
    """Per-sample numpy broadcasting of operand shapes ([1 or n, nd_k] each) -> [n, nd]."""
    a, b = shapes[0], shapes[-1]
    # the common cases: the same shapes, or a scalar (a constant, or one value a sample) beside a batch;
    # the rows compared by the engine (numpy's comparison of [N, D] tables gives the GIL away)
    if len(shapes) == 2 and a.shape[0] == n and (b.shape[1] == 0 or (b.shape == a.shape and
                                                                     _engine.first_differing_row(a, b) < 0)):
        return a
    if len(shapes) == 2 and b.shape[0] == n and a.shape[1] == 0:
        return b
    nd = max(s.shape[1] for s in shapes)
    out = np.ones((n, nd), np.int64)
    padded = []
    for s in shapes:
        p = np.ones((s.shape[0], nd), np.int64)
        if s.shape[1]:
            p[:, nd - s.shape[1]:] = s
        padded.append(np.broadcast_to(p, (n, nd)))
        out = np.where(out == 1, padded[-1], out)
    bad = np.zeros((n, nd), bool)
    for p in padded:
        bad |= ~((p == out) | (p == 1))
    if bad.any():
        i = int(np.nonzero(bad.any(axis=1))[0][0])
        from_right = nd - 1 - int(np.nonzero(bad[i])[0][-1])  # DALI names the innermost conflict
        # DALI's words: each operand's shape and the index of the conflicting dimension in it
        lines = [f"{' x '.join(str(int(e)) for e in s[min(i, len(s) - 1)])} "
                 f"(d={s.shape[1] - 1 - from_right}, belonging to sample_idx={i})" for s in shapes]
        raise ValueError("Can't broadcast shapes:\n" + "\n".join(lines))
    _refuse_complex_broadcasting(padded, out)
    return out


KERNEL_MAX_DIMS = 8  # the element-wise kernels' limit (csrc/kernels/elementwise.cpp, csrc/cuda)


def _kernel_shapes(operand_shapes: list[np.ndarray], out: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The shapes the element-wise kernels read the operands and the output with: their own, up to
    the kernels' dimension limit; beyond it, adjacent dimensions in which the same operands are
    broadcast merge into one (the data stays where it is: samples are contiguous), as many as
    the broadcast groups, which _refuse_complex_broadcasting keeps at 6 or fewer."""
    n, nd = out.shape
    if nd <= KERNEL_MAX_DIMS:
        return operand_shapes, out
    padded = []
    for s in operand_shapes:
        p = np.ones((s.shape[0], nd), np.int64)
        if s.shape[1]:
            p[:, nd - s.shape[1]:] = s
        padded.append(p)
    live = out != 1
    broadcast = [(np.broadcast_to(p, (n, nd)) == 1) & live for p in padded]
    groups: list[list[int]] = []
    current = np.full((len(padded), n), -1, np.int64)  # per operand and sample: the group's pattern
    for d in range(nd):
        here = np.stack([np.where(live[:, d], b[:, d], -1) for b in broadcast])
        fits = groups and np.all((here == -1) | (current == -1) | (here == current))
        if fits:
            groups[-1].append(d)
        else:
            groups.append([d])
            current = np.full_like(current, -1)
        current = np.where(here == -1, current, here)
    views = [np.stack([p[:, g].prod(axis=1) for g in groups], axis=1) for p in padded]
    return views, np.stack([out[:, g].prod(axis=1) for g in groups], axis=1)


MAX_BROADCAST_GROUPS = 6


def _refuse_complex_broadcasting(padded: list[np.ndarray], out: np.ndarray) -> None:
    """DALI computes a broadcast over runs of dimensions in which the same operands are
    broadcast (dimensions of extent 1 dropped) and refuses more than 6 such runs: so does
    penstock, in DALI's words, so that a pipeline it accepts DALI accepts too."""
    n, nd = out.shape
    live = out != 1
    pattern = np.zeros((n, nd), np.int64)  # per dimension: which operands it broadcasts, as bits
    for k, p in enumerate(padded):
        pattern |= ((p == 1) & live).astype(np.int64) << k
    previous = np.full(n, -1, np.int64)
    groups = np.zeros(n, np.int64)
    for d in range(nd):
        current = np.where(live[:, d], pattern[:, d], previous)
        groups += current != previous
        previous = current
    worst = int(groups.max(initial=0))
    if worst > MAX_BROADCAST_GROUPS:
        raise ValueError(f"Broadcasting pattern too complex. Can't operate with simplified shapes with more than "
                         f"{MAX_BROADCAST_GROUPS} groups of dimensions. Got {worst} groups. For more details see "
                         "https://docs.nvidia.com/deeplearning/dali/user-guide/docs/math.html")


def _output_layout(op: str, layouts: list[str], ndims: list[int], out_nd: int) -> str:
    """The layout of the result: operand layouts must agree (equal, or one a suffix of the other);
    the longest one is the result's when it has the result's dimensions."""
    merged = ""
    for k, (layout, nd) in enumerate(zip(layouts, ndims)):
        if not layout:
            continue
        if merged and not (merged.endswith(layout) or layout.endswith(merged)):
            raise ValueError(f"Layouts of subexpressions {k - 1} and {k} for arithmetic operation "
                             f"{DALI_NAMES.get(op, op)} do not match. They must be equal or one must be a suffix "
                             f"of the other. Got {merged} and {layout}.")
        merged = max(merged, layout, key=len)
    return merged if len(merged) == out_nd else ""


@register(ARITHMETIC, device=("cpu", "gpu"))
class Arithmetic(Operator):
    def setup(self) -> None:
        self.op = self.args["op"]
        self.operands = [tuple(o) for o in self.args["operands"]]
        self._types: dict = {}     # operand types -> (compute, output) type
        self._scalars: dict = {}   # (operand index, compute type) -> one-element batch

    def _operand_batch(self, ws, k: int, compute: T, n: int):
        operand = self.operands[k]
        if operand[0] == "scalar":
            key = (k, compute)
            if key not in self._scalars:
                arr = np.array([operand[1]], dtype=to_numpy_type(compute))
                self._scalars[key] = ws.from_host(TensorListCPU._from_packed(
                    arr, np.zeros((1, 0), np.int64), np.zeros(1, np.int64)))
            return self._scalars[key]
        tl = ws.inputs[operand[1]]
        if tl.dtype != compute:
            tl = type(tl)._from_packed(tl._buf.astype(to_numpy_type(compute)), tl._shapes, tl._offsets)
        return tl

    def _types_of(self, ws) -> tuple[T, T]:
        types = [T(o[2]) if o[0] == "scalar" else ws.inputs[o[1]].dtype for o in self.operands]
        key = tuple(types)
        if key not in self._types:
            self._types[key] = (unary_types(self.op, types[0]) if len(types) == 1
                                else result_type(self.op, types))
        return self._types[key]

    def run(self, ws):
        n = ws.batch_size
        for tl in ws.inputs:
            if len(tl) != n:
                raise ValueError(f"arithmetic '{_symbol(self.op)}' ('{self.name}'): an operand has {len(tl)} "
                                 f"samples, the batch has {n}")
        compute, out_type = self._types_of(ws)
        operands = [self._operand_batch(ws, k, compute, n) for k in range(len(self.operands))]
        if len(operands) == 1:
            src = operands[0]
            out = ws.new_batch(src._shapes, to_numpy_type(out_type), ws.inputs[0]._layout, like=src)
            ws.kernels.unary(ws.pool, UNARY_CODES[KERNEL_OPS.get(self.op, self.op)], int(compute), src._buf, out._buf)
            return [out]
        shapes = _broadcast_shapes([o._shapes for o in operands], n)
        layouts = [ws.inputs[o[1]]._layout if o[0] == "input" else "" for o in self.operands]
        layout = _output_layout(self.op, layouts, [o._shapes.shape[1] for o in operands], shapes.shape[1])
        if self.op in ("floordiv", "mod") and not _is_float(compute) and self.device == "cpu" and \
                not operands[1]._buf.all():
            raise ValueError("Integer division by zero.")  # as DALI's CPU operator; a GPU kernel cannot raise: x // 0 is 0 there
        like = next((o for o in operands if shapes is o._shapes), None)
        out = ws.new_batch(shapes, to_numpy_type(out_type), layout, like=like)
        views, out_view = _kernel_shapes([o._shapes for o in operands], shapes)
        if self.op == "clamp":  # max(x, lo), then min(that, hi), in the promoted type
            low = ws.new_batch(shapes, to_numpy_type(compute), layout)
            self._binary(ws, "max", compute, (operands[0], views[0]), (operands[1], views[1]), (low, out_view))
            self._binary(ws, "min", compute, (low, out_view), (operands[2], views[2]), (out, out_view))
        else:
            self._binary(ws, self.op, compute, (operands[0], views[0]), (operands[1], views[1]), (out, out_view))
        return [out]

    @staticmethod
    def _binary(ws, op: str, compute: T, a: tuple, b: tuple, out: tuple) -> None:
        """``a``, ``b``, ``out``: (batch, the shapes the kernel reads it with)."""
        (a, a_shapes), (b, b_shapes), (out, out_shapes) = a, b, out
        ws.kernels.binary(ws.pool, BINARY_CODES[op], int(compute), a._buf, a_shapes, a._offsets,
                          b._buf, b_shapes, b._offsets, out._buf, out_shapes, out._offsets)
