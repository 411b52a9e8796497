"""The internal operators that data-dependent conditionals insert into the graph: split a batch by
a predicate, merge the branches' results back into sample order, and check (or negate) a
predicate. Declared here, where they are inserted; their kernels are in operators/conditional.py.
They are not exported to ``fn``/``ops``."""
from __future__ import annotations

from .._registry import Arg, ArgType, OpSchema

SPLIT = OpSchema(
    "_conditional.Split", "The samples whose predicate equals `branch` (zero-copy view, order kept).",
    args=[Arg("branch", ArgType.BOOL, True, doc="which side of the predicate to keep")],
    min_inputs=2, devices=("cpu", "gpu"), host_inputs=(1,), internal=True)

MERGE = OpSchema(
    "_conditional.Merge", "Interleaves the false-branch and true-branch batches back into sample order.",
    args=[Arg("what", ArgType.STR, "", doc="the variable being merged (for error messages)")],
    min_inputs=3, devices=("cpu", "gpu"), host_inputs=(2,), internal=True)

PREDICATE = OpSchema(
    "_conditional.Predicate", "Checks a predicate (0-d CPU samples) and applies `not` to it.",
    args=[Arg("kind", ArgType.STR, "if", doc="'if', 'not', 'and' or 'or' (the expression checked)"),
          Arg("side", ArgType.STR, "", doc="'left' or 'right': the side of `and`/`or` checked (for error messages)")],
    devices=("cpu",), internal=True)
