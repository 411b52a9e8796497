"""Building a pipeline: its operators in DALI's seed order, their kernels, stages and executor."""
from __future__ import annotations

import collections
import warnings
from typing import Any, Sequence

import numpy as np

from .. import _checkpoint, _engine
from .._executor import Executor
from .._graph import OpNode, collect
from .._registry import ArgumentValueError, as_argument_error, kernel_for
from .._sources import parallel_spec
from .._std_random import seed_seq
from ..data_node import DataNode
from ..operators._resize_normalize import fuse
from . import _process
from ._serialize import serialize


def _dali_order(outputs: Sequence[DataNode], extra: Sequence[OpNode]) -> list[OpNode]:
    """Operators in the order DALI's Python front end adds them: depth first from each output in
    turn, an operator after its inputs and argument inputs."""
    order: list[OpNode] = []
    seen: set[int] = set()

    def visit(node: OpNode) -> None:
        if node is None or node.id in seen:
            return
        seen.add(node.id)
        for d in list(node.inputs) + list(node.arg_inputs.values()):
            visit(d.source)
        order.append(node)

    for o in outputs:
        visit(o.source)
    for node in extra:
        visit(node)
    return order


def check_size_and_threads(batch_size: Any, num_threads: Any) -> None:
    """What build() needs of the constructor's batch_size and num_threads (DALI's words)."""
    for name, value in (("batch_size", batch_size), ("num_threads", num_threads)):
        if value is not None and not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if batch_size is None:
        raise ArgumentValueError("The batch size must be set.")
    if batch_size < 1:
        raise ArgumentValueError(f"Invalid batch size: {batch_size}. Please set a positive integer.")
    if num_threads is None or num_threads < 1:
        raise ArgumentValueError("Pipeline created with `num_threads` < 1 can only be used for serialization.")


class PipelineBuild:
    """Building: a base of Pipeline, working on the state its constructor sets."""

    def _uses_gpu(self, nodes: Sequence[OpNode]) -> bool:
        return any(n.device in ("gpu", "mixed") for n in nodes)

    def build(self) -> None:
        if self._built:
            return
        check_size_and_threads(self._max_batch_size, self._num_threads)
        self._define()
        self.start_py_workers()
        preserved = [n for n in self._nodes if n.preserve] + self._sinks
        nodes = collect(self._outputs, preserved)
        names = collections.Counter(n.name for n in nodes)
        dup = [n for n, c in names.items() if c > 1]
        if dup:
            raise RuntimeError(f"operator name '{dup[0]}' is used by more than one operator")
        if self._uses_gpu(nodes):
            self._require_gpu()
        # DALI's seeds: the pipeline seed's std::seed_seq gives 1024 values, handed out in the
        # order DALI adds operators (depth first from the outputs) to those without their own
        # seed, so a reader shuffles as DALI's does under the same pipeline seed
        seeds = seed_seq([self._effective_seed & 0xFFFFFFFF], 1024)
        k = 0
        for n in _dali_order(self._outputs, preserved):
            if not n.schema.is_random:
                continue
            explicit = n.args.get("seed", -1)
            if explicit is not None and explicit >= 0:
                n.resolved_seed = int(explicit)
            else:
                n.resolved_seed = seeds[k % len(seeds)]
                k += 1
        self._pool = _engine.ThreadPool(self._num_threads, "penstock-work")
        self._ops = [kernel_for(n.schema, n.device)(n, self) for n in nodes]
        for op in self._ops:
            try:
                op.setup()
            except (ValueError, TypeError) as e:  # DALI reports these from its backend as RuntimeError
                if isinstance(e, RuntimeError):
                    raise
                raise as_argument_error(e) from e
        self._link_consumers()
        self._source_ops = [op for op in self._ops if op.schema.is_source]
        self._readers = {op.name: op for op in self._ops if op.schema.is_reader}
        stages = [[op for op in self._ops if op.device == dev] for dev in ("cpu", "mixed", "gpu")]
        if not self._stages_are_ordered(stages):
            stages = [self._ops]
        output_refs = [(o.source.id, o.index) for o in self._outputs]
        if not self._enable_memory_stats:  # (those are per operator of the graph, as the user declared it)
            stages = fuse(stages, output_refs)  # (self._ops keeps the graph's operators, for serializing)
        self._executor = self._process_executor(nodes) or Executor(
            stages, output_refs, self._pool, self._exec_async, self._exec_pipelined, self._gpu,
            (self._cpu_queue_size, self._gpu_queue_size), self._enable_memory_stats)
        if self._enable_checkpointing:
            _checkpoint.enable(self)
        if self._checkpoint is not None:
            _checkpoint.restore(self, self._checkpoint)
        self._built = True

    def _process_executor(self, nodes: Sequence[OpNode]) -> _process.ProcessExecutor | None:
        """An executor that runs the iterations in a process of their own (``_process``) where the
        setting asks for it and the pipeline allows it; None otherwise (with a warning that says
        why, when the setting asked for it)."""
        if _process.mode() == "off" or not self._process_allowed:
            return None
        why = _process.refusal(self, nodes)
        if why is None:
            try:
                serialized = serialize(self, seeds=True)
            except (RuntimeError, TypeError) as exc:
                why = f"its graph does not serialize ({exc})"
        if why is None:
            # an iteration's outputs wait in a slot from the child's answer until run() takes them:
            # as many as the prefetch queue holds, and one more that the child fills meanwhile
            slots = max(self._cpu_queue_size, self._gpu_queue_size) + 1
            try:
                return _process.ProcessExecutor(serialized, {"seed": self._effective_seed}, self._gpu, slots,
                                                "the pipeline")
            except _process.StartFailure as exc:
                why = f"its process did not start: {exc}"
        warnings.warn(f"{_process.ENV}=on, but the pipeline runs in this process: {why}", RuntimeWarning, 4)
        return None

    def _link_consumers(self) -> None:
        consumers = {op.node.id: [[] for _ in op.node.outputs] for op in self._ops}
        for op in self._ops:
            for d in op.node.inputs:
                consumers[d.source.id][d.index].append(op)
            for d in op.node.arg_inputs.values():
                consumers[d.source.id][d.index].append(None)
        for o in self._outputs:
            consumers[o.source.id][o.index].append(None)
        for op in self._ops:
            op.link(consumers[op.node.id])

    @staticmethod
    def _stages_are_ordered(stages: list[list]) -> bool:
        rank = {}
        for k, ops in enumerate(stages):
            for op in ops:
                rank[op.node.id] = k
        for k, ops in enumerate(stages):
            for op in ops:
                for d in list(op.node.inputs) + list(op.node.arg_inputs.values()):
                    if rank[d.source.id] > k:
                        return False
        return True

    def _require_gpu(self) -> None:
        from .. import _cuda
        reason = _cuda.unavailable_reason()
        if reason is not None:
            # DALI's words: its tests match them (with a device_id, DALI refuses at construction, where
            # penstock runs pipelines of CPU operators)
            asked = ("" if self._device_id is None else " You are trying to create a GPU DALI pipeline while CUDA "
                     "is not available. Please install CUDA or set `device_id = None` in Pipeline constructor.")
            reason = reason if reason.endswith(".") else reason + "."  # a sentence follows
            raise RuntimeError(f"The pipeline requires a CUDA-capable GPU but {reason}{asked} (It has GPU or mixed "
                               "operators: run them with device='cpu' to use it without a GPU.)")
        if self._device_id is None:
            self._device_id = int(_cuda.require().cuda.runtime.getDevice())
        self._gpu = _cuda.DeviceContext(self._device_id)

    def start_py_workers(self) -> None:
        """Starts the worker processes of parallel external sources (call before touching CUDA
        when they are forked)."""
        self._define()
        if self._py_pool is not None:
            return
        from .._parallel import WorkerPool
        preserved = [n for n in self._nodes if n.preserve] + self._sinks
        specs = [parallel_spec(n, self._max_batch_size, self._source_timeout)
                 for n in collect(self._outputs, preserved) if n.schema.is_source and n.args.get("parallel")]
        if specs:
            self._py_pool = WorkerPool(specs, self._py_num_workers, self._py_start_method,
                                       self._py_callback_pickler)
