"""Checkpoints: a pipeline's state after the last iteration the user consumed (api.md §14).

Every stateful operator has ``get_state()`` (small plain data) and ``set_state(state)``. Random
operators draw from streams keyed on (their seed, the iteration index), so their state is their
seed; readers keep their position, shuffle buffer and generator; external sources with callables
are indexed by the pipeline's (epoch, iteration in epoch). A checkpoint is those states plus the
pipeline's counters, serialized as compact JSON (bytes).

A checkpoint also describes the pipeline it belongs to (the operators and how they connect, the
batch size, each reader's dataset: its size and a digest of its samples' file names) and carries
a SHA-256 of everything in it. ``parse`` refuses a checkpoint whose digest does not match (damaged
after it was written) or whose counters are out of range, ``restore`` one of another pipeline or
dataset, and each operator a state out of range, each with one RuntimeError naming what does not
match: nothing restores into silently different data.

Iterations are prepared ahead of consumption (the prefetch queue, readers reading ahead), so the
operators' current states may already be past the consumed point. With ``enable_checkpointing``
each stateful operator records its state before each iteration it prepares (``History``) and
the pipeline its counters before each iteration it schedules; a checkpoint takes the states
recorded for the first iteration not yet consumed, so prefetched batches are neither skipped nor
repeated after a restore.
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
import warnings
import zlib
from typing import Any, Callable

import numpy as np

FORMAT = "penstock-checkpoint"
VERSION = 2
_INT64 = 1 << 63
_KEEP = 2  # states kept for iterations already consumed (an iterator's prepared first batch)


class History:
    """An operator's state before each iteration it prepared, by absolute iteration index.

    ``lock`` is held while the operator changes its state (on a pipeline worker thread) and while
    a checkpoint reads it (on the user's thread).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._states: dict[int, Any] = {}

    def record(self, iteration: int, state: Callable[[], Any]) -> None:
        """The state before ``iteration`` (the first record of an iteration wins: refills within
        an iteration change the state again)."""
        if iteration not in self._states:
            self._states[iteration] = state()

    def at(self, iteration: int, current: Callable[[], Any], label: str) -> Any:
        with self.lock:
            if iteration in self._states:
                return self._states[iteration]
            if self._states and max(self._states) > iteration:
                raise RuntimeError(f"{label}: no state recorded for iteration {iteration} (checkpointing "
                                   "lost track of the prefetched iterations)")
            return current()  # nothing prepared for that iteration yet: the current state is its

    def forget_before(self, iteration: int) -> None:
        with self.lock:
            for k in [k for k in self._states if k < iteration]:
                del self._states[k]

    def clear(self) -> None:
        with self.lock:
            self._states.clear()


# ---- plain-data encodings ----------------------------------------------------------------------
def encode_ints(values: Any) -> str:
    """A long list of ints (a dataset permutation) as compressed base64 text."""
    return base64.b64encode(zlib.compress(np.asarray(values, np.int32).tobytes(), 6)).decode("ascii")


def decode_ints(text: str) -> list[int]:
    try:
        return np.frombuffer(zlib.decompress(base64.b64decode(text, validate=True)), np.int32).tolist()
    except (ValueError, TypeError, zlib.error) as exc:
        raise ValueError(f"a malformed encoded list of integers ({exc})") from None


def serialize(state: dict) -> bytes:
    return json.dumps(state, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _digest(state: dict) -> str:
    """The SHA-256 of a checkpoint without its digest, in its serialized form."""
    return hashlib.sha256(serialize(state)).hexdigest()


def check_int(value: Any, what: str, low: int = 0, high: int = _INT64) -> int:
    """``value`` when it is an int in [low, high); else a ValueError naming ``what``."""
    if type(value) is not int or not low <= value < high:  # bool and float are not counters
        raise ValueError(f"{what} must be an integer in [{low}, {high}), got {value!r}")
    return value


def _check_document(state: dict) -> None:
    """The types and ranges of what a checkpoint holds beside the operators' own states."""
    for key in ("iter", "epoch_idx", "iter_in_epoch"):
        check_int(state.get(key), f"'{key}'")
    if not isinstance(state.get("iterator_data"), str):
        raise ValueError("'iterator_data' must be a string")
    pipeline = state.get("pipeline")
    if not isinstance(pipeline, dict) or not isinstance(pipeline.get("graph"), list) \
            or not isinstance(pipeline.get("readers"), list) or not all(
                isinstance(op, list) and len(op) == 3 and isinstance(op[0], str) for op in pipeline["graph"]):
        raise ValueError("'pipeline' must describe the graph and its readers")
    check_int(pipeline.get("batch_size"), "the batch size", 1)
    ops = state.get("operators")
    if not isinstance(ops, list) or len(ops) != len(pipeline["graph"]) or not all(
            isinstance(op, list) and len(op) == 2 and isinstance(op[0], str) for op in ops):
        raise ValueError("'operators' must hold one [name, state] pair per operator of the graph")


def parse(checkpoint: Any) -> Any:
    """A checkpoint as given to ``Pipeline(checkpoint=...)``: bytes or str of ``checkpoint()``, or a
    list of those of every shard of another sharding (elastic restore, see ``restore``)."""
    if isinstance(checkpoint, (list, tuple)):
        if not checkpoint:
            raise ValueError("checkpoint: an empty list of checkpoints")
        return [parse(c) for c in checkpoint]
    if isinstance(checkpoint, (bytes, bytearray, memoryview)):
        checkpoint = bytes(checkpoint).decode("utf-8", errors="replace")
    if not isinstance(checkpoint, str):
        raise TypeError(f"checkpoint must be the bytes (or str) returned by Pipeline.checkpoint(), "
                        f"got {type(checkpoint).__name__}")
    try:
        state = json.loads(checkpoint)
    except ValueError:
        state = None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise RuntimeError("checkpoint: the data is not a penstock checkpoint (Pipeline.checkpoint() output)")
    if state.get("version") != VERSION:
        raise RuntimeError(f"checkpoint: format version {state.get('version')!r} is not supported "
                           f"(this penstock reads version {VERSION}, which carries a checksum and a description "
                           "of its pipeline)")
    if state.pop("sha256", None) != _digest(state):
        raise RuntimeError("checkpoint: its SHA-256 does not match its contents: it was damaged (or edited) "
                           "after Pipeline.checkpoint() wrote it, and cannot be restored")
    try:
        _check_document(state)
    except ValueError as exc:
        raise RuntimeError(f"checkpoint: {exc}") from None
    return state


# ---- the pipeline side --------------------------------------------------------------------------
def scheduled(pipe: Any, index: int) -> None:
    """Records the pipeline's counters before iteration ``index`` is scheduled."""
    pipe._ckpt_counters[index] = (pipe._epoch, pipe._iter_in_epoch)


def consumed(pipe: Any, index: int) -> None:
    """Iteration ``index`` was handed to the user: older records are no longer needed."""
    keep = index + 1 - _KEEP
    for k in [k for k in pipe._ckpt_counters if k < keep]:
        del pipe._ckpt_counters[k]
    for op in pipe._ckpt_ops:
        op._history.forget_before(keep)


def enable(pipe: Any) -> None:
    """Gives every stateful operator of a built pipeline its state history."""
    pipe._ckpt_counters = {}
    pipe._ckpt_ops = [op for op in pipe._ops if op.tracks_state]
    for op in pipe._ckpt_ops:
        op._history = History()
    for op in pipe._ops:
        warning = op.unsaved_state_warning()
        if warning:
            warnings.warn(warning, UserWarning, 4)


def capture(pipe: Any, iterator_data: str = "", unconsumed: int = 0) -> bytes:
    """The checkpoint after the last consumed iteration, less ``unconsumed`` iterations the
    caller took from the pipeline but did not hand on (an iterator's prepared batch)."""
    if not pipe._enable_checkpointing:
        raise RuntimeError("Cannot save a checkpoint: checkpointing is not enabled for this pipeline "
                           "(create it with enable_checkpointing=True)")
    pipe.build()
    index = (pipe._pending[0].index if pipe._pending else pipe._iteration) - unconsumed
    epoch, in_epoch = pipe._ckpt_counters.get(index, (pipe._epoch, pipe._iter_in_epoch))
    if unconsumed and index not in pipe._ckpt_counters:
        raise RuntimeError(f"checkpoint: iteration {index} is no longer tracked")
    ops = []  # in the graph's order: automatic operator names differ between pipeline instances
    for op in pipe._ops:
        history = getattr(op, "_history", None)
        state = history.at(index, op.get_state, op.label) if history is not None else op.get_state()
        ops.append([op.schema.name, state])
    state = {"format": FORMAT, "version": VERSION, "pipeline": describe(pipe), "iter": index, "epoch_idx": epoch,
             "iter_in_epoch": in_epoch, "operators": ops, "iterator_data": iterator_data}
    return serialize(dict(state, sha256=_digest(state)))


def _graph(pipe: Any) -> list:
    """Per operator, in the graph's order: its kind, and where its inputs and argument inputs come
    from (operator position, output)."""
    position = {id(op.node): k for k, op in enumerate(pipe._ops)}

    def source(data: Any) -> list:
        return [position.get(id(data.source), -1), data.index]

    return [[op.schema.name, [source(d) for d in op.node.inputs],
             sorted([name] + source(d) for name, d in op.node.arg_inputs.items())] for op in pipe._ops]


def describe(pipe: Any) -> dict:
    """What a checkpoint must be restored into: the graph, the batch size, and per started reader
    its position, dataset size and a digest of its samples' names."""
    readers = [[k, op.size, op.dataset_digest()] for k, op in enumerate(pipe._ops)
               if op.schema.is_reader and getattr(op, "_samples", None) is not None]
    return {"batch_size": pipe.max_batch_size, "graph": _graph(pipe), "readers": readers}


def _check_pipeline(pipe: Any, state: dict) -> None:
    """The checkpoint was made of a pipeline like ``pipe``, over the same datasets."""
    saved, graph = state["pipeline"], _graph(pipe)
    kinds = [op[0] for op in saved["graph"]]
    if kinds != [op.schema.name for op in pipe._ops] or kinds != [name for name, _ in state["operators"]]:
        raise RuntimeError(f"checkpoint: it was made of a pipeline with the operators {kinds}, this pipeline "
                           f"has {[op.schema.name for op in pipe._ops]}; restore into the pipeline the "
                           "checkpoint was made of")
    for op, mine, theirs in zip(pipe._ops, graph, saved["graph"]):
        if mine != theirs:
            raise RuntimeError(f"checkpoint: it was made of a pipeline whose {op.label} takes other inputs "
                               f"(operator, output: {theirs[1:]}; here {mine[1:]}); restore into the pipeline "
                               "the checkpoint was made of")
    if saved["batch_size"] != pipe.max_batch_size:
        raise RuntimeError(f"checkpoint: it was made of a pipeline with batch_size={saved['batch_size']}, this "
                           f"pipeline has batch_size={pipe.max_batch_size}; restore with the batch size it was "
                           "made with")
    for entry in saved["readers"]:
        if not (isinstance(entry, list) and len(entry) == 3 and type(entry[0]) is int
                and 0 <= entry[0] < len(pipe._ops) and pipe._ops[entry[0]].schema.is_reader):
            raise RuntimeError(f"checkpoint: malformed reader entry {entry!r}")
        pipe._ops[entry[0]].check_dataset(entry[1], entry[2])


def _set_state(op: Any, state: Any, set_state: Callable[[Any], None]) -> None:
    """Applies one operator's saved state; a state of the wrong shape is one clear error."""
    try:
        set_state(state)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise RuntimeError(f"checkpoint: the saved state of {op.label} is invalid "
                           f"({type(exc).__name__}: {exc})") from None


def restore(pipe: Any, state: Any) -> None:
    """Applies a parsed checkpoint to a built pipeline (at build, or in place: see ``rewind``).

    Elastic restore (``state`` lists the checkpoints of every shard of another sharding, taken at
    the same iteration): readers continue the epoch under their own sharding (``set_elastic_state``),
    the pipeline's counters continue, and random operators keep this pipeline's own seeds (a
    sample's random draws then differ from the old run's; which samples the epoch holds does not).
    """
    if isinstance(state, list):
        for s in state:
            _check_pipeline(pipe, s)
        counters = {(s["iter"], s["epoch_idx"], s["iter_in_epoch"]) for s in state}
        if len(counters) > 1:
            raise RuntimeError("checkpoint: elastic restore needs the checkpoints of every shard taken at the "
                               f"same iteration; got (iteration, epoch, iteration in epoch) {sorted(counters)}")
        for k, op in enumerate(pipe._ops):
            if hasattr(op, "set_elastic_state"):
                _set_state(op, [s["operators"][k][1] for s in state], op.set_elastic_state)
        state = dict(state[0], iterator_data="")  # an iterator's position under the old sharding
    else:
        _check_pipeline(pipe, state)
        for op, (_, op_state) in zip(pipe._ops, state["operators"]):
            _set_state(op, op_state, op.set_state)
    pipe._iteration = int(state["iter"])
    pipe._epoch = int(state["epoch_idx"])
    pipe._iter_in_epoch = int(state["iter_in_epoch"])
    pipe._iterator_data = state.get("iterator_data", "")
    pipe._restored = True


def rewind(pipe: Any, checkpoint: Any) -> None:
    """Restores a built pipeline that may have run: iterations in flight are finished and dropped,
    then the checkpoint's state is applied and the pipeline starts prefetching again."""
    state = parse(checkpoint)
    pipe.build()
    while pipe._pending:
        it = pipe._pending.popleft()
        try:
            pipe._executor.wait(it)
        except Exception:  # noqa: BLE001 - a failed iteration the user never asked for
            pass
        finally:
            pipe._executor.release(it)
    pipe._owed = 0
    pipe._first_iter, pipe._last_iter, pipe._paired_depth = True, False, False
    pipe._shared_unreleased = False
    if pipe._enable_checkpointing:
        pipe._ckpt_counters.clear()
    restore(pipe, state)


def warn_restart(label: str, what: str) -> None:
    warnings.warn(f"{label}: {what} cannot be restored from a checkpoint; it starts again from its "
                  "beginning (use a callable source taking the iteration, BatchInfo or SampleInfo to resume "
                  "exactly)", RuntimeWarning, 3)
