"""What converted code calls: ``if``/``else``, conditional expressions and ``and``/``or``/``not``.

With a plain Python condition these behave exactly like Python. With a DataNode condition both
branches are traced, each in its own scope (only the samples that reach it), and every variable
a branch assigned is merged back into sample order.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _hooks
from .._graph import make_op
from ..data_node import DataNode
from ..types import ScalarConstant
from . import _scope
from ._schemas import MERGE, PREDICATE
from ._scope import Scope, bring, entered, scope_of

_ABSENT = object()


class Undefined(DataNode):
    """A variable assigned on one side of a data-dependent ``if`` only: any use is an error."""

    def __init__(self, name: str, side: str):  # noqa: D107 - no DataNode state on purpose
        object.__setattr__(self, "_var", (name, side))

    def _fail(self) -> None:
        name, side = object.__getattribute__(self, "_var")
        other = "else" if side == "if" else "if"
        raise ValueError(f"variable '{name}' is assigned only in the `{side}` branch of a conditional whose "
                         f"condition is a DataNode, and is used after it: it must also be assigned in the "
                         f"`{other}` branch (or before the `if`)")

    def __getattr__(self, item: str) -> Any:
        self._fail()

    def __repr__(self) -> str:
        name, _ = object.__getattribute__(self, "_var")
        return f"<undefined variable '{name}'>"

    __str__ = __repr__

    def __bool__(self) -> bool:
        self._fail()
        return False

    def _bin(self, op: str, other: Any, reflected: bool = False) -> Any:
        self._fail()


def check_defined(value: Any) -> None:
    if isinstance(value, Undefined):
        value._fail()


def pick(variables: dict, names: tuple) -> dict:
    return {n: variables[n] for n in names if n in variables}


def _predicate(test: DataNode, kind: str) -> DataNode:
    check_defined(test)
    if test.device != "cpu":
        raise RuntimeError(f"the condition of `{kind}` is on the GPU ({test!r}); conditions are restricted to "
                           "scalar (0-d tensors) inputs, that are placed on CPU")
    test = bring(test, _scope.current())
    if kind in ("and", "or"):
        test = make_op(PREDICATE, (test,), {"kind": kind})[0]
    return test


def _is_plain(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number, np.bool_, np.ndarray, ScalarConstant))


def _as_node(value: Any, scope: Scope, name: str) -> DataNode:
    if isinstance(value, DataNode):
        return bring(value, scope)
    if not _is_plain(value):
        raise ValueError(f"variable '{name}' is a DataNode in one branch of a conditional and a "
                         f"{type(value).__name__} in the other; both branches must produce data")
    with entered(scope):
        if isinstance(value, ScalarConstant):
            return _hooks.constant_node(value.value, dtype=value.dtype, device="cpu")
        return _hooks.constant_node(value, device="cpu")


def _merge(name: str, predicate: DataNode, true: tuple, false: tuple) -> Any:
    (ts, t), (fs, f) = true, false
    if name not in t and name not in f:
        return _ABSENT
    if name not in f:
        return Undefined(name, "if")
    if name not in t:
        return Undefined(name, "else")
    tv, fv = t[name], f[name]
    if tv is fv:
        return tv
    for v, side in ((tv, "if"), (fv, "else")):
        if isinstance(v, Undefined):
            return Undefined(name, side)
    if not isinstance(tv, DataNode) and not isinstance(fv, DataNode):
        simple = (str, bytes, int, float, bool, type(None))
        if isinstance(tv, simple) and isinstance(fv, simple) and type(tv) is type(fv) and tv == fv:
            return tv
        if not (_is_plain(tv) and _is_plain(fv)):
            raise ValueError(f"variable '{name}' gets different Python values ({tv!r}, {fv!r}) in the branches "
                             "of a conditional whose condition is a DataNode; only data (DataNodes and numbers) "
                             "can differ per sample")
    return make_op(MERGE, (_branch_value(fv, fs, name), _branch_value(tv, ts, name), predicate), {"what": name})[0]


def _branch_value(value: Any, scope: Scope, name: str) -> DataNode:
    """A branch's result for the merge: a value the branch left as it was before the `if` is
    given whole (the merge picks its samples), anything else as the branch's samples."""
    parent = scope.parent
    if isinstance(value, DataNode):
        owner = scope_of(value)
        if owner is None if parent is None else parent.contains(owner):
            return bring(value, parent)
    return _as_node(value, scope, name)


def if_stmt(test: Any, body: Callable, orelse: Callable, variables: dict, names: tuple) -> dict:
    """``if test: body else: orelse``; the branches take and return the variables they assign."""
    if not isinstance(test, DataNode):
        return (body if test else orelse)(variables)
    predicate = _predicate(test, "if")
    sides = []
    for branch, fn in ((True, body), (False, orelse)):
        scope = Scope(_scope.current(), predicate, branch)
        with entered(scope):
            sides.append((scope, fn(dict(variables))))
    merged = {n: _merge(n, predicate, sides[0], sides[1]) for n in names}
    return {n: v for n, v in merged.items() if v is not _ABSENT}


def if_exp(test: Any, body: Callable, orelse: Callable) -> Any:
    """``body() if test else orelse()``."""
    if not isinstance(test, DataNode):
        return body() if test else orelse()
    return if_stmt(test, lambda _: {"<conditional expression>": body()},
                   lambda _: {"<conditional expression>": orelse()}, {}, ("<conditional expression>",)
                   )["<conditional expression>"]


def _logical(kind: str, a: Any, b: Callable) -> Any:
    pred = _predicate(a, kind)

    def rest(_: dict) -> dict:
        value = b()
        return {kind: _predicate(value, kind) if isinstance(value, DataNode) else value}

    def short(_: dict) -> dict:
        return {kind: pred}

    yes, no = (rest, short) if kind == "and" else (short, rest)
    return if_stmt(pred, yes, no, {}, (kind,))[kind]


def and_(a: Any, b: Callable) -> Any:
    """``a and b()`` (short-circuit: b runs only for the samples where a is true)."""
    if not isinstance(a, DataNode):
        return b() if a else a
    return _logical("and", a, b)


def or_(a: Any, b: Callable) -> Any:
    """``a or b()`` (short-circuit: b runs only for the samples where a is false)."""
    if not isinstance(a, DataNode):
        return a if a else b()
    return _logical("or", a, b)


def not_(a: Any) -> Any:
    if not isinstance(a, DataNode):
        return not a
    check_defined(a)
    if a.device != "cpu":
        raise RuntimeError(f"logical expression `not` is restricted to scalar (0-d tensors) inputs, that are "
                           f"placed on CPU; got a GPU input {a!r}")
    return make_op(PREDICATE, (a,), {"kind": "not"})[0]


def jump_cond(test: Any) -> bool:
    """The condition of an ``if`` whose branches return/break/continue: Python values only."""
    if isinstance(test, DataNode):
        raise NotImplementedError("an `if` on a DataNode whose branches contain `return`, `break` or "
                                  "`continue` is not supported; assign a variable in both branches instead")
    return bool(test)
