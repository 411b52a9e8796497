"""``fn._conditional``: the operators that data-dependent conditionals insert (penstock._conditionals),
callable by hand as DALI 2.4's are: split a batch by a predicate, merge two branches back into
sample order, negate a predicate and check one side of ``and``/``or``."""
from __future__ import annotations

from typing import Any

from .._conditionals._schemas import MERGE, PREDICATE, SPLIT
from .._graph import make_op
from ..data_node import DataNode


def split(input: DataNode, *, predicate: DataNode, **kwargs: Any) -> tuple[DataNode, DataNode]:
    """(the samples where ``predicate`` is true, those where it is false), each in sample order."""
    sides = tuple(make_op(SPLIT, (input, predicate), {**kwargs, "branch": branch})[0] for branch in (True, False))
    for side in sides:
        side.source.selects_samples = True  # what reads it runs on its samples only
    return sides


def merge(input_true: DataNode, input_false: DataNode, *, predicate: DataNode, **kwargs: Any) -> DataNode:
    """The samples of the two sides of ``split`` interleaved back into the order of ``predicate``."""
    merged = make_op(MERGE, (input_false, input_true, predicate), kwargs)[0]
    merged.source.batch_ref = predicate  # every sample of the predicate, not those of a side
    merged.source.selects_samples = getattr(predicate.source, "selects_samples", False)
    return merged


def not_(input: DataNode, **kwargs: Any) -> DataNode:
    """The negation of a predicate (0-d samples, any type: nonzero is true)."""
    return make_op(PREDICATE, (input,), {**kwargs, "kind": "not"})[0]


def validate_logical(input: DataNode, *, expression_name: str, expression_side: str, **kwargs: Any) -> DataNode:
    """``input`` unchanged once checked as a side of ``and``/``or``: 0-d boolean samples."""
    if expression_name not in ("and", "or"):
        raise ValueError(f"_conditional.validate_logical: expression_name must be 'and' or 'or', got "
                         f"{expression_name!r}")
    if expression_side not in ("left", "right"):
        raise ValueError(f"_conditional.validate_logical: expression_side must be 'left' or 'right', got "
                         f"{expression_side!r}")
    return make_op(PREDICATE, (input,), {**kwargs, "kind": expression_name, "side": expression_side})[0]
