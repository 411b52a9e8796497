"""``on_error="skip"`` (opt-in, beyond DALI): a reader or decoder drops a sample it cannot read or
decode, and the batch is refilled from the next samples of the stream, so every batch stays full.

Each skipped sample is recorded on its operator (``Pipeline.skipped_samples`` gathers them) with
its ``source``: the sample's source_info, as its outputs carry it (``readers.file``: the path as
listed, relative to ``file_root``), whether a reader or a decoder skipped it; and warned about
once per file. An operator keeps its latest SKIPPED_KEPT records (a damaged file is skipped again
every epoch, so a long run would otherwise grow without bound) and counts all of them
(``Pipeline.skipped_count``). The default, ``"raise"``, is DALI's behaviour: the iteration fails
naming the operator and the file.

* A reader that cannot read a file replaces it with the next index of its stream.
* A decoder (any non-reader operator declaring ``on_error``) that rejects sample i has that
  sample removed from every value of the iteration computed so far; the operators before it
  (readers and what they feed) are run again for one sample, spliced in, and the decoder runs
  again. So the operators before it must all be able to give more samples: readers, not
  external sources (checked at build).

Epoch accounting: a replacement is the next sample of the reader's stream, so the reader's
``epoch_size`` (and ``Pipeline.epoch_size``, ``reader_meta``) still counts every listed file,
skipped or not, and the iterators' ``len()`` and last-batch policies are computed from it as
without skipping: an epoch is still ``len()`` full batches. Each skip moves the stream on by one
sample, so the next batch (and epoch) starts one sample later in the reader's order; with
``pad_last_batch``/``stick_to_shard`` the replacement follows those rules (it may be a padding
repeat or come from the start of the shard). ``Pipeline.skipped_samples`` also lists samples of
iterations already prefetched but not yet returned.
"""
from __future__ import annotations

import collections
import threading
import warnings
from typing import Any, Sequence

import numpy as np

from ._operator import Operator, SampleError, sample_error_from_engine
from ._registry import Arg, ArgType

POLICIES = ("raise", "skip")
SKIPPED_KEPT = 10_000  # records kept per operator, the latest

ON_ERROR_ARG = Arg(
    "on_error", ArgType.STR, "raise",
    "a sample that cannot be read or decoded: 'raise' (DALI's behaviour: the iteration fails naming "
    "the file) or 'skip' (dropped, replaced by the next sample so batches stay full, recorded in "
    "Pipeline.skipped_samples, one warning per file)")

_lock = threading.Lock()


def policy(op: Operator) -> str:
    value = op.args.get("on_error", "raise")
    if value not in POLICIES:
        raise ValueError(f"{op.label}: argument 'on_error' expects 'raise' or 'skip', got {value!r}")
    return value


def as_sample_error(exc: BaseException) -> SampleError | None:
    return exc if isinstance(exc, SampleError) else sample_error_from_engine(exc)


def record(op: Operator, source: str, reason: str, iteration: int) -> None:
    """Keeps what was skipped on the operator and warns once per file."""
    with _lock:
        if "skipped" not in op.__dict__:
            op.skipped = collections.deque(maxlen=SKIPPED_KEPT)
            op.skipped_count = 0
            op.skipped_sources = set()  # warned about: as many as the dataset's damaged files
        op.skipped.append({"operator": op.name, "source": source, "reason": reason, "iteration": iteration})
        op.skipped_count += 1
        first = source not in op.skipped_sources
        op.skipped_sources.add(source)
    if first:
        warnings.warn(f"{op.label}: skipped '{source or '<unnamed sample>'}': {reason}", RuntimeWarning, 2)


def give_up_after(ops: Sequence[Operator]) -> int:
    """Consecutive failures in one batch after which every sample is taken to be bad."""
    sizes = [getattr(op, "size", 0) for op in ops if op.schema.is_reader]
    return max(sizes + [1]) + 1


def reader_load(reader: Any, ws: Any, indices: np.ndarray) -> list:
    """Reader.load with on_error='skip': an unreadable file is replaced by the next index."""
    indices = np.array(indices, np.int64)
    for _ in range(give_up_after([reader])):
        try:
            return reader.load(ws, indices)
        except BaseException as exc:  # noqa: BLE001 - anything that is not a sample's fault re-raises
            err = as_sample_error(exc)
            if err is None or not 0 <= err.sample < len(indices):
                raise
            record(reader, reader.sources([indices[err.sample]])[0], str(err.args[0] if err.args else err),
                   ws.iteration)
            indices = np.concatenate([np.delete(indices, err.sample), reader.next_indices(1)])
    raise RuntimeError(f"{reader.label}: on_error='skip' gave up: every sample of the dataset failed "
                       "(see Pipeline.skipped_samples)")


# ---- decoders: refill through the operators before them -------------------------------------

def refill_prefix(flat: Sequence[Operator], pos: int) -> list[Operator]:
    """The operators run again to refill the batch of ``flat[pos]``; checked at build."""
    op = flat[pos]
    prefix = list(flat[:pos])
    bad = [o for o in prefix if o.schema.is_source and not o.schema.is_reader]
    if bad:
        raise ValueError(f"{op.label}: on_error='skip' refills the batch from the readers before it, "
                         f"but {bad[0].label} cannot give extra samples")
    if any(o.device != "cpu" for o in prefix + [op]):  # one stage: the refill runs in its thread
        raise NotImplementedError(f"{op.label}: on_error='skip' is implemented for CPU pipelines "
                                  "(every operator before it on the CPU, device_id=None)")
    if any(getattr(o.node, "batch_ref", None) is not None for o in prefix + [op]):
        # inside a conditional branch values hold the branch's samples, not the whole batch
        raise NotImplementedError(f"{op.label}: on_error='skip' is not implemented inside (or after "
                                  "operators inside) a conditional branch")
    return prefix


def _take(tl: Any, keep: np.ndarray) -> Any:
    """The samples ``keep`` of a batch (no copy of the data)."""
    return type(tl)._from_packed(tl._buf, tl._shapes[keep], tl._offsets[keep], tl._layout,
                                 [tl._source_info[i] for i in keep])


def _concat(a: Any, b: Any) -> Any:
    samples = [a._sample_array(i) for i in range(len(a))] + [b._sample_array(i) for i in range(len(b))]
    out = type(a)(samples, a._layout or b._layout)
    out._source_info = list(a._source_info) + list(b._source_info)
    return out


def refill(ex: Any, op: Operator, prefix: Sequence[Operator], it: Any, err: SampleError,
           inputs: Sequence[Any]) -> None:
    """Removes sample ``err.sample`` from the iteration and appends one fresh sample made by
    running ``prefix`` again; ``op`` is then run again by the caller."""
    i = err.sample
    infos = inputs[0]._source_info if inputs else []
    record(op, infos[i] if i < len(infos) else "", str(err.args[0] if err.args else err), it.index)
    keep = np.delete(np.arange(it.batch_size), i)
    for key, tl in list(it.values.items()):
        it.values[key] = _take(tl, keep)
    sub = type(it)(it.index, it.epoch, 1, {})
    ex.run_ops(prefix, sub)
    for key, tl in list(it.values.items()):
        extra = sub.values.get(key)
        if extra is None:
            raise RuntimeError(f"{op.label}: on_error='skip' could not refill value {key}")
        it.values[key] = _concat(tl, extra)


def run_refilling(ex: Any, op: Operator, it: Any, exc: BaseException, prefix: Sequence[Operator],
                  in_keys: Sequence[Any], arg_keys: Sequence[Any], fail: Any) -> tuple[list, list]:
    """Runs ``op`` again after each refill until the batch goes through; ``fail(exc, inputs)``
    raises the pipeline's error for a failure that is not one sample's fault."""
    from ._operator import Workspace
    inputs = [it.values[key] for key in in_keys]
    for _ in range(give_up_after(prefix)):
        err = as_sample_error(exc)
        if err is None or not 0 <= err.sample < it.batch_size:
            fail(exc, inputs)
        refill(ex, op, prefix, it, err, inputs)
        inputs = [it.values[key] for key in in_keys]
        ws = Workspace(inputs, {k: it.values[key] for k, key in arg_keys}, it.batch_size, it.index,
                       it.epoch, ex.pool, it.fed.get(op.node.id), op)
        try:
            return list(op.run(ws)), inputs
        except BaseException as again:  # noqa: BLE001
            exc = again
    raise RuntimeError(f"{op.label}: on_error='skip' gave up: every sample of the dataset failed "
                       "(see Pipeline.skipped_samples)") from exc


def plan(flat: Sequence[Operator]) -> dict[int, list[Operator]]:
    """Checks every operator's on_error at build; the refill prefix of each skipping decoder."""
    plans = {}
    for pos, op in enumerate(flat):
        if "on_error" in op.args and policy(op) == "skip" and not op.schema.is_reader:
            plans[id(op)] = refill_prefix(flat, pos)
            for before in plans[id(op)]:
                if before.schema.is_reader:  # refills take the stream's next samples: no batches read ahead
                    before.reads_ahead = False
    return plans
