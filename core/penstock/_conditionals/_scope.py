"""Conditional scopes while a graph is defined: which samples an operator sees.

A scope is one side (``branch``) of a predicate evaluated in its parent scope. An operator
created inside a scope reads its inputs through split operators (only the samples that reach
the branch), created once per (value, scope); input-less operators get the scope's own batch
as a hidden ``_scope`` argument input, so every operator knows its (smaller) batch size.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from .. import _hooks
from .._graph import make_op
from ..data_node import DataNode
from ._schemas import MERGE, SPLIT

_local = threading.local()


class Scope:
    def __init__(self, parent: "Scope | None", predicate: DataNode, branch: bool):
        self.parent = parent
        self.predicate = predicate  # lives in the parent scope
        self.branch = branch
        self._splits: dict[int, tuple[DataNode, DataNode]] = {}

    def contains(self, other: "Scope | None") -> bool:
        """Whether ``other`` is this scope or one it is nested in."""
        s: Scope | None = self
        while s is not None:
            if s is other:
                return True
            s = s.parent
        return other is None

    def batch_node(self) -> DataNode:
        """A value with exactly this scope's samples (the predicate, split by itself)."""
        return bring(self.predicate, self)


def current() -> Scope | None:
    return getattr(_local, "scope", None)


def enabled() -> bool:
    """Whether a conditional pipeline is being defined on this thread."""
    return getattr(_local, "depth", 0) > 0


@contextlib.contextmanager
def defining() -> Iterator[None]:
    """Marks the definition of a pipeline with enable_conditionals=True."""
    _hooks.install(place=place)  # from now on every new operator is placed in the current scope
    saved = current()
    _local.depth = getattr(_local, "depth", 0) + 1
    _local.scope = None
    try:
        yield
    finally:
        _local.depth -= 1
        _local.scope = saved


@contextlib.contextmanager
def entered(scope: Scope | None) -> Iterator[None]:
    saved = current()
    _local.scope = scope
    try:
        yield
    finally:
        _local.scope = saved


def scope_of(node: DataNode) -> Scope | None:
    return getattr(node.source, "scope", None)


def bring(node: Any, scope: Scope | None) -> Any:
    """``node`` as seen from ``scope``: split down from the scope it was produced in."""
    if not isinstance(node, DataNode):
        return node
    owner = scope_of(node)
    if owner is scope:
        return node
    if scope is None or not scope.contains(owner):
        raise ValueError(f"{node!r} was produced inside a branch of a conditional and is used outside "
                         "of it; assign the variable in every branch (or before the `if`) to use it after")
    outer = bring(node, scope.parent)
    hit = scope._splits.get(id(outer))
    if hit is None:
        with entered(scope.parent):
            split = make_op(SPLIT, (outer, scope.predicate), {"branch": scope.branch})[0]
        split.source.scope = scope  # runs in the parent scope (batch_ref), its output belongs here
        hit = scope._splits[id(outer)] = (outer, split)  # keeps `outer` alive: the key is its id
    return hit[1]


def place(schema: Any, nodes: list, tensors: dict) -> tuple[list, dict, Scope | None, DataNode | None]:
    """Called for every new operator: moves its inputs into the current scope.

    Returns the inputs, the argument inputs, the scope and the value whose sample count is the
    operator's batch size (None: the pipeline's).
    """
    scope = current()
    if scope is None:
        return nodes, tensors, None, None
    if schema is MERGE:  # reads both branches; its batch is the predicate's
        return nodes, tensors, scope, nodes[2]
    if schema.is_source:
        raise NotImplementedError(f"{schema.fn_name}: source operators (readers, external_source) inside a "
                                  "branch of a conditional are not supported; create them before the `if`")
    nodes = [bring(n, scope) for n in nodes]
    tensors = {k: bring(v, scope) for k, v in tensors.items()}
    if not nodes and not tensors:
        tensors["_scope"] = scope.batch_node()
    ref = nodes[0] if nodes else next(iter(tensors.values()))
    return nodes, tensors, scope, ref
