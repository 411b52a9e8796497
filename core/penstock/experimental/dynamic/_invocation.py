"""Recorded operator calls (``Invocation``) and their evaluation through the pipeline's executor.

A dynamic-mode call builds its graph nodes exactly as a pipeline definition does (``make_op``:
the same argument checks, device placement, constants and transfers), with DataNodes standing for
the data it was given: ``Given`` for data already there, ``Pending`` for an output of a call not
evaluated yet. The nodes between those and the call's outputs, with their kernels (built and set
up at once, so bad arguments fail at the call), are the invocation.

Evaluating takes a target's pending closure (every pending call it depends on, transitively) and
runs it as one graph through ``Executor``: the same workspace, kernels, one native call or GPU
launch per operator and batch, error messages and GPU stream ordering as a pipeline iteration,
with the given data placed in the iteration's values beforehand. Consecutive calls thus run
together, and kernels see their consumers (``Operator.link``), so a decoder whose only reader is a
downscaling resize decodes smaller, as in a pipeline. An output that no Tensor or Batch refers to
any more, and that no pending call reads, is not kept; a call none of whose outputs is wanted is
skipped.

Each invocation is claimed by one thread (under ``_claim``) before it runs; a thread needing one
claimed by another waits for it. Claims take whole pending closures at once, so a group only ever
waits for groups claimed before it.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Sequence

from ..._executor import Executor, Iteration
from ..._registry import as_argument_error, kernel_for
from ...data_node import DataNode
from ...pipeline._pipeline import MAX_IMAGE_PIXELS

_leaf_ids = itertools.count(-1, -1)  # negative: never an OpNode's id, so never a key the graph uses
_claim = threading.Lock()

PENDING, CLAIMED, DONE = "pending", "claimed", "done"


class _Leaf:
    """The producer of data known before evaluation, as the executor's plans see producers."""
    __slots__ = ("id", "value")

    def __init__(self, value: Any):
        self.id = next(_leaf_ids)
        self.value = value


class Given(DataNode):
    """Data given to a call (an array, a finished call's result), standing where a DataNode goes."""

    def __init__(self, value: Any):
        super().__init__("given", "gpu" if getattr(value, "_device", "cpu") == "gpu" else "cpu", _Leaf(value), 0)


class Pending(DataNode):
    """Output ``index`` of a call not evaluated when this node was made."""

    def __init__(self, invocation: "Invocation", index: int):
        out = invocation.outputs[index]
        super().__init__(out.name, out.device, out.source, out.index)
        self.invocation = invocation
        self.output = index


class KernelHost:
    """What kernels read from the pipeline that builds them, for kernels built by the dynamic mode."""
    max_image_pixels = MAX_IMAGE_PIXELS
    exec_dynamic = True
    _py_pool = None

    def __init__(self, batch_size: int):
        self.max_batch_size = batch_size


class Invocation:
    """One recorded call: its graph nodes and kernels until it runs, its results after."""

    def __init__(self, outputs: Sequence[DataNode], batch_size: int, context: Any):
        self.outputs = list(outputs)
        self.batch_size = batch_size
        self.context = context
        nodes: dict[int, Any] = {}
        self._deps: list[DataNode] = []
        stack = [o.source for o in self.outputs]
        while stack:
            node = stack.pop()
            if node.id in nodes:
                continue
            nodes[node.id] = node
            for d in list(node.inputs) + list(node.arg_inputs.values()):
                if isinstance(d, (Given, Pending)):
                    self._deps.append(d)
                else:
                    stack.append(d.source)
        self._nodes = [nodes[k] for k in sorted(nodes)]  # ids grow with creation: producers first
        host = KernelHost(batch_size)
        self._ops = [kernel_for(n.schema, n.device)(n, host) for n in self._nodes]
        for op in self._ops:
            try:
                op.setup()
            except (ValueError, TypeError) as e:  # as from a pipeline's build
                raise as_argument_error(e) from e
        self._consumers: "weakref.WeakSet[Invocation]" = weakref.WeakSet()
        for d in self._deps:
            if isinstance(d, Pending):
                d.invocation._consumers.add(self)
        self._holders: list[list[weakref.ref]] = [[] for _ in self.outputs]
        self.state = PENDING
        self.values: list | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()

    # -- results
    def hold(self, index: int, holder: Any) -> None:
        """``holder`` (a Tensor or Batch) refers to output ``index``: it is kept while that lives."""
        self._holders[index].append(weakref.ref(holder))

    def value(self, index: int) -> Any:
        """Output ``index``, evaluating (or waiting for) this call and what it depends on."""
        if self.state is not DONE:
            evaluate([self])
        if self.error is not None:
            raise self.error
        return self.values[index]

    def _wanted(self, index: int, group: set) -> bool:
        if any(ref() is not None for ref in self._holders[index]):
            return True
        return any(c not in group and c.state is not DONE and any(
            isinstance(d, Pending) and d.invocation is self and d.output == index for d in c._deps)
            for c in list(self._consumers))

    def _finish(self, values: list | None, error: BaseException | None) -> None:
        self.values, self.error = values, error
        for node in self._nodes:  # the graph is spent: upstream data is no longer held through it
            node.inputs, node.arg_inputs = [], {}
        for op in self._ops:
            op.close()
        self._nodes, self._ops, self._deps = [], [], []
        self.state = DONE
        self._done.set()


# ---- evaluation --------------------------------------------------------------------------------

def evaluate(targets: Sequence[Invocation]) -> None:
    """Makes every target done (with values or an error)."""
    group, waits = _claim_closure(targets)
    for inv in waits:
        inv._done.wait()
    if group:
        _run_group(group)


def _claim_closure(targets: Sequence[Invocation]) -> tuple[list[Invocation], list[Invocation]]:
    """Claims the pending invocations the targets need; returns them (in creation order) and the
    ones other threads claimed, which must finish first."""
    group: dict[int, Invocation] = {}
    waits: dict[int, Invocation] = {}
    with _claim:
        stack = list(targets)
        while stack:
            inv = stack.pop()
            key = id(inv)
            if inv.state is DONE or key in group or key in waits:
                continue
            if inv.state is CLAIMED:
                waits[key] = inv
                continue
            inv.state = CLAIMED
            group[key] = inv
            stack.extend(d.invocation for d in inv._deps if isinstance(d, Pending))
    order = sorted(group.values(), key=lambda inv: inv._nodes[0].id)
    return order, list(waits.values())


def _dep_error(inv: Invocation, failed: dict[int, BaseException]) -> BaseException | None:
    for d in inv._deps:
        if isinstance(d, Pending):
            src = d.invocation
            if id(src) in failed:
                return failed[id(src)]
            if src.state is DONE and src.error is not None:
                return src.error
    return None


def _run_group(group: list[Invocation]) -> None:
    members = set(group)
    failed: dict[int, BaseException] = {}
    runnable = []
    for inv in group:  # calls reading a failed call fail with its error, without running
        err = _dep_error(inv, failed)
        if err is not None:
            failed[id(inv)] = err
        else:
            runnable.append(inv)
    for inv in group:
        if id(inv) in failed:
            inv._finish(None, failed[id(inv)])
    if not runnable:
        return
    by_size: dict[int, list[Invocation]] = {}
    for inv in runnable:
        by_size.setdefault(inv.batch_size, []).append(inv)
    for part in by_size.values():
        try:
            _execute(part, members)
        except BaseException as exc:  # noqa: BLE001 - becomes the calls' error, raised where read
            for inv in part:
                if inv.state is not DONE:
                    inv._finish(None, exc)


def _execute(part: list[Invocation], members: set) -> None:
    """Runs one batch size's calls of a group as one executor iteration."""
    wanted = {id(inv): [inv._wanted(i, members) for i in range(len(inv.outputs))] for inv in part}
    needed = _needed(part, wanted)
    for inv in part:
        if id(inv) not in needed:
            inv._finish([None] * len(inv.outputs), None)  # nothing reads it: skipped
    part = [inv for inv in part if id(inv) in needed]
    if not part:
        return
    values: dict[tuple[int, int], Any] = {}
    for inv in part:
        for d in inv._deps:
            if isinstance(d, Given):
                values[(d.source.id, 0)] = d.source.value
            elif d.invocation.state is DONE:
                values[(d.source.id, d.index)] = d.invocation.values[d.output]
    refs = [(o.source.id, o.index) for inv in part for o, keep in zip(inv.outputs, wanted[id(inv)]) if keep]
    ops = [op for inv in part for op in inv._ops]
    ops.sort(key=lambda op: op.node.id)
    _link(ops, set(refs))
    context = part[0].context
    gpu = context._gpu() if any(op.device != "cpu" for op in ops) else None
    executor = Executor([ops], refs, context.thread_pool._pool, False, False, gpu)
    it = Iteration(0, 0, part[0].batch_size, {})
    it.values.update(values)
    executor.submit(it)
    try:
        results = dict(zip(refs, executor.wait(it)))
    finally:
        executor.shutdown()
    for inv in part:
        inv._finish([results.get((o.source.id, o.index)) for o in inv.outputs], None)


def _needed(part: list[Invocation], wanted: dict) -> set:
    """The calls whose outputs are wanted, and the calls of ``part`` those read."""
    in_part = {id(inv): inv for inv in part}
    needed = {key for key, keep in wanted.items() if any(keep)}
    stack = [in_part[k] for k in needed]
    while stack:
        for d in stack.pop()._deps:
            if isinstance(d, Pending) and id(d.invocation) in in_part and id(d.invocation) not in needed:
                needed.add(id(d.invocation))
                stack.append(d.invocation)
    return needed


def _link(ops: list, outputs: set) -> None:
    """Tells each kernel who reads its outputs (None: kept for the caller), as a pipeline's build does."""
    consumers = {op.node.id: [[] for _ in op.node.outputs] for op in ops}
    for op in ops:
        for d in op.node.inputs:
            if d.source.id in consumers:
                consumers[d.source.id][d.index].append(op)
        for d in op.node.arg_inputs.values():
            if d.source.id in consumers:
                consumers[d.source.id][d.index].append(None)
    for node_id, index in outputs:
        consumers[node_id][index].append(None)
    for op in ops:
        op.link(consumers[op.node.id])


def run_reader(op: Any, context: Any, iteration: int, epoch: int, batch_size: int) -> list:
    """One batch of a reader kernel, through the executor like any operator."""
    node = op.node
    refs = [(node.id, i) for i in range(len(node.outputs))]
    executor = Executor([[op]], refs, context.thread_pool._pool, False, False, None)
    it = Iteration(iteration, epoch, batch_size, {})
    executor.submit(it)
    try:
        return list(executor.wait(it))
    finally:
        executor.shutdown()
