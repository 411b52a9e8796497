"""Operator nodes, the one path that creates them, and graph building (pruning, ordering)."""
from __future__ import annotations

import itertools
import threading
from typing import Any, Iterable, Sequence

import numpy as np

from . import _hooks
from ._current import current_pipeline, eager_pipeline
from ._registry import ArgumentValueError, OpSchema, check_known, convert_arg, resolve_defaults, split_args
from .data_node import DataNode

_ids = itertools.count()
_ids_lock = threading.Lock()


def _next_id() -> int:
    with _ids_lock:
        return next(_ids)


class OpNode:
    """One operator instance in a graph."""
    scope: Any = None                   # the conditional branch it runs in (None: every sample)
    batch_ref: DataNode | None = None   # in a branch: the input whose sample count is its batch size
    selects_samples = False             # its outputs hold some of the samples (fn._conditional.split, or from one)

    def __init__(self, schema: OpSchema, device: str, args: dict, inputs: Sequence[DataNode],
                 arg_inputs: dict[str, DataNode], name: str | None):
        self.id = _next_id()
        self.schema = schema
        self.device = device
        self.args = args
        self.inputs = list(inputs)
        self.arg_inputs = dict(arg_inputs)
        self.explicit_name = name is not None
        self.name = name if name is not None else f"__{schema.class_name.lstrip('_')}_{self.id}"
        self.preserve = bool(args.get("preserve")) or schema.no_prune
        out_device = "gpu" if device in ("gpu", "mixed") else "cpu"
        n_out = schema.n_outputs(args, len(inputs))
        self.outputs = [DataNode(f"{self.name}[{i}]" if n_out > 1 else self.name, out_device, self, i)
                        for i in range(n_out)]
        self.resolved_seed: int = args.get("seed", -1) if args.get("seed", -1) is not None else -1
        self.py_object: Any = None  # Python callables etc. that the kernel needs (never serialized)
        pipe = current_pipeline()
        if pipe is not None:  # the pipeline keeps its nodes; a node must not keep its pipeline alive
            pipe._register_node(self)

    def __repr__(self) -> str:
        return f"OpNode({self.schema.fn_name}, name={self.name!r}, device={self.device!r})"


def _as_node(value: Any, what: str, device: str) -> DataNode:
    """A positional input: a DataNode, or a constant promoted to a constant node."""
    if isinstance(value, DataNode):
        return value
    if isinstance(value, (int, float, bool, list, tuple, np.ndarray, np.generic)):
        return _hooks.constant_node(value, device="cpu" if device == "mixed" else device)
    raise TypeError(f"{what}: an input must be a DataNode or a constant, got {type(value).__name__}")


def make_op(schema: OpSchema, inputs: Sequence[Any], kwargs: dict, *, default_device: str | None = None,
            py_object: Any = None) -> list[DataNode]:
    """Validates arguments and inputs and adds an operator node; returns its outputs."""
    debug = eager_pipeline()
    if debug is not None:  # debug mode: the operator runs now
        return debug.run_op(schema, inputs, kwargs, default_device, py_object)
    label = schema.fn_name
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None) or default_device
    if device is None:
        device = "gpu" if any(isinstance(i, DataNode) and i.device == "gpu" for i in inputs) else "cpu"
    if device not in ("cpu", "gpu", "mixed"):
        raise ValueError(f"{label}: argument 'device' expects str ('cpu', 'gpu' or 'mixed'), got {device!r}")
    if device not in schema.devices:
        raise ValueError(f"{label}: device '{device}' is not supported (supported: {', '.join(schema.devices)})")
    check_known(schema, kwargs, label)
    n = len(inputs)
    if n < schema.min_inputs or (schema.max_inputs != -1 and n > schema.max_inputs):
        hi = "any number of" if schema.max_inputs == -1 else str(schema.max_inputs)
        expect = (f"{schema.min_inputs}" if schema.min_inputs == schema.max_inputs
                  else f"from {schema.min_inputs} to {hi}")
        raise ValueError(f"{label}: operator expects {expect} inputs, but received {n}")
    nodes = [_as_node(x, label, device) for x in inputs]
    for i, node in enumerate(nodes):
        if device == "cpu" and node.device == "gpu":  # DALI's words, then how to fix it
            raise ArgumentValueError(f"The input {i} for cpu operator `penstock.fn.{label}` is stored on incompatible "
                                     'device "gpu". Valid device is "cpu". (Use .cpu() to move it, or run the '
                                     "operator with device='gpu'.)")
        if device == "mixed" and node.device == "gpu":
            raise ValueError(f"{label}: a 'mixed' operator takes CPU inputs; input {i} is on the GPU")
    if device == "gpu":  # host data for a GPU operator goes to the GPU first, unless the kernel reads it there
        nodes = [n.gpu() if n.device == "cpu" and i not in schema.host_inputs else n for i, n in enumerate(nodes)]
    name = kwargs.pop("name", None)
    if name is not None:
        name = convert_arg(schema.arguments["name"], name, label)
    scalars, tensors = split_args(schema, kwargs, label)
    for key, value in tensors.items():
        if not isinstance(value, DataNode):
            tensors[key] = _hooks.constant_node(value, device="cpu")
        elif value.device != "cpu":  # DALI's words
            raise ValueError(f"Invalid device \"{value.device}\" for argument '{key}' of operator "
                             f"'penstock.fn.{label}'. Named arguments must be on CPU.")
    args = resolve_defaults(schema, scalars, tensors, label)
    args["name"] = name
    nodes, tensors, scope, batch_ref = _hooks.place(schema, nodes, tensors)
    # an input holding some of the samples (an explicit split's, or computed from one) sets the batch size
    partial = None if batch_ref is not None else next(
        (d for d in (*nodes, *tensors.values()) if getattr(d.source, "selects_samples", False)), None)
    node = OpNode(schema, device, args, nodes, tensors, name)
    node.scope, node.batch_ref = scope, batch_ref if partial is None else partial
    node.selects_samples = partial is not None
    node.py_object = py_object
    return node.outputs


# ---- building ----------------------------------------------------------------------------

def collect(outputs: Iterable[DataNode], extra: Iterable[OpNode] = ()) -> list[OpNode]:
    """Every operator the outputs (and the extra, preserved nodes) depend on, in run order.

    Ordering is topological with ties broken by creation order, so the order (and the seeds
    derived from it) depends only on the pipeline definition.
    """
    seen: dict[int, OpNode] = {}
    stack = [o.source for o in outputs] + list(extra)
    while stack:
        node = stack.pop()
        if node is None or node.id in seen:
            continue
        seen[node.id] = node
        for d in list(node.inputs) + list(node.arg_inputs.values()):
            stack.append(d.source)
    order: list[OpNode] = []
    done: set[int] = set()

    def visit(node: OpNode, path: set[int]) -> None:
        if node.id in done:
            return
        if node.id in path:
            raise RuntimeError(f"the graph has a cycle through {node.name}")
        path.add(node.id)
        for d in sorted(list(node.inputs) + list(node.arg_inputs.values()), key=lambda d: d.source.id):
            visit(d.source, path)
        path.discard(node.id)
        done.add(node.id)
        order.append(node)

    for node in sorted(seen.values(), key=lambda n: n.id):
        visit(node, set())
    return order
