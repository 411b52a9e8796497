"""Readers as objects (``ndd.readers.File(file_root=...)``), generated from the reader declarations.

A reader keeps its place across epochs: ``next_epoch(batch_size=...)`` goes once over its shard
(the next shard in the next epoch unless ``stick_to_shard``, as in a pipeline), in full batches
of Batches, or sample by sample (Tensors) without a batch size. Its kernel is the pipeline's, run
through the same executor, so it reads, shuffles and shards sample for sample as
``fn.readers.*`` with the same seed. With ``enable_checkpointing=True``, ``get_state()`` saves
the position after the last batch handed out and ``set_state()`` (on a new reader, before it
reads) resumes there exactly.
"""
from __future__ import annotations

import base64
import inspect
import json
import types as _pytypes
from typing import Any, Iterator

from ... import _current
from ..._checkpoint import History
from ..._generate import _submodule
from ..._graph import make_op
from ..._registry import OpSchema, as_argument_error, kernel_for, schemas
from . import random
from ._batch import Batch
from ._eval_context import EvalContext
from ._invocation import KernelHost, run_reader
from ._ops import argument
from ._tensor import Tensor, sample_view

_STATE_FORMAT = "penstock-reader"


class ReaderState:
    """A reader's saved position: ``str(state)`` is its portable text (``set_state`` takes either)."""

    def __init__(self, text: str):
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"ReaderState({self._text!r})"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (ReaderState, str)):
            return self._text == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)


class Reader:
    """Base of the generated reader classes (``schema`` names the operator)."""
    schema: OpSchema

    def __init__(self, max_batch_size: int | None = None, name: str | None = None, device: Any = "cpu", *,
                 enable_checkpointing: bool = False, **kwargs: Any):
        label = f"readers.{self.schema.class_name}"
        for key in ("batch_size", "preserve", "bytes_per_sample_hint"):  # not arguments of a reader object
            if key in kwargs:
                raise TypeError(f"{self.schema.class_name}.__init__() got an unexpected keyword argument '{key}'")
        if str(device) not in self.schema.devices:
            raise ValueError(f'Invalid device "{device}" for operator `{label}`')
        if kwargs.get("seed") is None:
            kwargs["seed"] = random.draw_seed()  # reproducible under ndd.random.set_seed
        kwargs = {k: argument(k, v, label) for k, v in kwargs.items() if v is not None}
        with _current.eager(None):
            self._node = make_op(self.schema, (), {**kwargs, "device": "cpu", "name": name})[0].source
        self._label = label
        self._max_batch = max_batch_size
        self._op: Any = None
        self._op_batch: int | None = None
        self._iteration = 0      # batches read so far
        self._epochs = 0         # epochs finished (a sharded reader moves on one shard per epoch)
        self._style: str | None = None
        self._checkpointing = bool(enable_checkpointing)
        self._pending_state: dict | None = None

    # -- the kernel
    def _kernel(self, batch_size: int) -> Any:
        if self._op is None:
            op = kernel_for(self.schema, "cpu")(self._node, KernelHost(batch_size))
            try:
                op.setup()
            except (ValueError, TypeError) as e:
                raise as_argument_error(e) from e
            if self._checkpointing:
                op._history = History()
            if self._pending_state is not None:
                op.check_dataset(self._pending_state["size"], self._pending_state["digest"])
                op.set_state(self._pending_state["reader"])
                self._pending_state = None
            self._op, self._op_batch = op, batch_size
        elif batch_size != self._op_batch:
            if self._iteration:
                raise ValueError(f"`batch_size` {batch_size} is different than the batch size {self._op_batch} "
                                 "used in the previous call")
            self._op_batch = batch_size  # nothing read yet: the size may still change
        return self._op

    def _read(self, batch_size: int, context: EvalContext) -> list:
        outs = run_reader(self._op, context, self._iteration, self._epochs, batch_size)
        self._iteration += 1
        return outs

    def _named(self, values: tuple) -> Any:
        features = self._node.args.get("features")
        if self.schema.name == "readers.TFRecord" and isinstance(features, dict):
            return dict(zip(features, values))  # as fn.readers.tfrecord: outputs by feature name
        return values

    def _use(self, style: str) -> None:
        if self._style is None:
            self._style = style
        elif self._style != style:
            raise RuntimeError("Cannot mix sample-by-sample epochs, batch epochs and direct calls on the same reader")

    def _checked(self, batch_size: int | None) -> int | None:
        if batch_size is not None and self._max_batch is not None and batch_size > self._max_batch:
            raise ValueError(f"`batch_size` {batch_size} is larger than the `max_batch_size` {self._max_batch} "
                             "specified when the operator was created")
        return batch_size

    # -- epochs
    def next_epoch(self, batch_size: int | None = None, ctx: EvalContext | None = None,
                   capture: bool = False) -> Iterator[Any]:
        """An iterator over the next epoch: tuples of Batches (of ``batch_size``, else
        ``max_batch_size``), else tuples of Tensors, one sample at a time. Finish it before the next."""
        size = self._checked(batch_size) if batch_size is not None else self._max_batch
        if capture:
            if size is None:
                raise ValueError("capture=True requires a non-None batch_size")
            raise NotImplementedError("penstock's dynamic mode does not offer capture mode (next_epoch(capture=True)"
                                      "); a pipeline runs a captured graph ahead of the loop")
        self._use("samples" if size is None else "batches")
        return self._epoch(size, ctx or EvalContext.current())

    def _epoch(self, batch_size: int | None, context: EvalContext) -> Iterator[Any]:
        step = 1 if batch_size is None else batch_size
        op = self._kernel(step)
        meta = op.reader_meta()
        shards, first = meta["number_of_shards"], self._node.args["shard_id"]
        shard = first if meta["stick_to_shard"] else (first + self._epochs) % shards
        padded = meta["epoch_size_padded"]
        remaining = (shard + 1) * padded // shards - shard * padded // shards
        while remaining > 0:
            outs = self._read(step, context)
            remaining -= step
            if batch_size is None:
                yield self._named(tuple(Tensor._wrap(sample_view(o, 0)) for o in outs))
            else:
                yield self._named(tuple(Batch._wrap(o) for o in outs))
        self._epochs += 1

    def __call__(self, *, batch_size: int | None = None) -> Any:
        """The next batch (or sample, without a batch size) of the reader's stream."""
        self._use("calls")
        size = self._checked(batch_size)
        self._kernel(size or 1)
        outs = self._read(size or 1, EvalContext.current())
        if size is None:
            return self._named(tuple(Tensor._wrap(sample_view(o, 0)) for o in outs))
        return self._named(tuple(Batch._wrap(o) for o in outs))

    def get_metadata(self, batch_size: int | None = None) -> dict:
        """epoch_size, epoch_size_padded, number_of_shards, shard_id, pad_last_batch, stick_to_shard."""
        return dict(self._kernel(self._checked(batch_size) or self._op_batch or self._max_batch or 1).reader_meta())

    # -- checkpoints
    def _enable_checkpointing(self) -> None:
        """Turns checkpointing on (for ``Checkpoint.register``) before the reader has read."""
        if self._checkpointing:
            return
        if self._iteration:
            raise RuntimeError(f"The reader '{self._label}' has read with checkpointing disabled; pass "
                               "enable_checkpointing=True to its constructor")
        self._checkpointing = True
        if self._op is not None:  # built by get_metadata(): its history starts now, before any read
            self._op._history = History()

    def get_state(self, *, cuda_stream: Any = None) -> ReaderState:
        """The position after the last batch handed out."""
        if not self._checkpointing:
            raise RuntimeError(f"The reader '{self._label}' was made with checkpointing disabled; pass "
                               "enable_checkpointing=True to its constructor")
        if self._op is None or not self._iteration:
            raise RuntimeError("Cannot get the reader's state before its first batch: call `next_epoch` "
                               "and read a batch first")
        op = self._op
        state = {"format": _STATE_FORMAT, "size": op.size, "digest": op.dataset_digest(),
                 "reader": op._history.at(self._iteration, op.get_state, self._label)}
        op._history.forget_before(self._iteration)
        return ReaderState(base64.b64encode(json.dumps(state, sort_keys=True).encode()).decode("ascii"))

    def set_state(self, state: Any) -> None:
        """Resumes from a saved position; only on a reader that has not read yet."""
        if not isinstance(state, (ReaderState, str, bytes)):
            raise TypeError(f"state must be a ReaderState, str or bytes, got {type(state).__name__}")
        if self._iteration:
            raise RuntimeError("Cannot set the reader's state after it has read: set it on a new reader, "
                               "before its first `next_epoch` or call")
        text = state.decode("ascii") if isinstance(state, bytes) else str(state)
        try:
            parsed = json.loads(base64.b64decode(text, validate=True))
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or parsed.get("format") != _STATE_FORMAT:
            raise ValueError("not a reader state (what get_state() returned, or its str())")
        self._checkpointing = True
        self._pending_state = parsed
        if self._op is not None:  # built (by get_metadata) but not read yet: rebuilt from the state
            built, self._op = self._op, None
            built.close()
            self._kernel(self._op_batch or 1)


def _signature(schema: OpSchema) -> inspect.Signature:
    """A reader's constructor: ``max_batch_size``, ``name``, ``device``, then its arguments by keyword."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD), P("max_batch_size", P.POSITIONAL_OR_KEYWORD, default=None),
              P("name", P.POSITIONAL_OR_KEYWORD, default=None), P("device", P.POSITIONAL_OR_KEYWORD, default="cpu")]
    skip = {"name", "device", "preserve", "bytes_per_sample_hint"}
    params += [P(a, P.KEYWORD_ONLY, default=None) for a in sorted(schema.arguments) if a not in skip]
    return inspect.Signature(params + [P("enable_checkpointing", P.KEYWORD_ONLY, default=False)])


def reader_class(schema: OpSchema) -> type:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Reader.__init__(self, *args, **kwargs)

    __init__.__signature__ = _signature(schema)
    return type(schema.class_name, (Reader,), {"schema": schema, "__init__": __init__, "__doc__": schema.doc,
                                               "__module__": "penstock.experimental.dynamic.readers"})


def reader_classes() -> list[type]:
    return [reader_class(s) for s in schemas().values() if s.is_reader and not s.internal]


def fill(root: _pytypes.ModuleType) -> None:
    """Adds ``readers.<Name>`` classes to the dynamic mode's module."""
    for cls in reader_classes():
        setattr(_submodule(root, cls.schema.module), cls.__name__, cls)
