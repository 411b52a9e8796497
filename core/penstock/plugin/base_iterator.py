"""The iterator contract shared by the framework plugins (api.md §15).

``_DaliBaseIterator`` drives one or more pipelines, decides where epochs end (from the reader's
metadata or a user ``size``) and which samples of the last batch belong to the epoch. A
framework plugin subclasses it and supplies ``_convert``: turning one pipeline's outputs (a
tuple of ``TensorList``s) into framework objects, keeping only the first ``count`` samples.
"""
from __future__ import annotations

import enum
import json
import logging
import math
import warnings
from typing import Any, Sequence

from ..types import PipelineAPIType

_log = logging.getLogger("penstock.plugin")


class LastBatchPolicy(enum.IntEnum):
    """What an iterator does with the last, incomplete batch of an epoch."""
    FILL = 0      # return it full: the extra samples are whatever the reader produces next
    DROP = 1      # do not return it
    PARTIAL = 2   # return only the samples that belong to the epoch


def _driven_by_iterator(pipe: Any):
    """Scope of the scheduled-API calls an iterator makes: the pipeline records the ITERATOR API,
    so driving it with run() as well raises (api.md §4.1)."""
    return pipe._check_api(PipelineAPIType.ITERATOR)


_AUTO_RESET = {False: False, None: False, "no": False, True: True, "yes": True}


def _parse_auto_reset(value: Any) -> bool:
    if isinstance(value, (bool, str)) or value is None:
        if value in _AUTO_RESET:
            return _AUTO_RESET[value]
    # DALI's words, which code written for it may match
    raise ValueError(f"Unsupported value for `auto_reset` {value}: one of False, None, 'no', True or 'yes'")


def shard_size(n: int, num_shards: int, shard: int) -> int:
    """Samples in shard ``shard`` of ``num_shards`` over ``n`` (the reader's split, api.md §10)."""
    return ((shard + 1) * n) // num_shards - (shard * n) // num_shards


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class _ReaderEpochs:
    """Shard bookkeeping for an iterator that follows a reader (``reader_name``).

    All shards advance in lockstep (every rank runs the same number of batches per epoch), so each
    iterator tracks every shard of the reader, not only those of its own pipelines: where each
    shard currently is (they rotate by one per epoch unless the reader sticks to its shard) and,
    for FILL without padding, how many samples each has already read of its next shard.
    """

    def __init__(self, meta: dict, shard_ids: Sequence[int]):
        self.n = meta["epoch_size"]
        self.num_shards = meta["number_of_shards"]
        self.padded_size = meta["epoch_size_padded"]
        self.pad = bool(meta["pad_last_batch"])
        self.stick = bool(meta["stick_to_shard"])
        self.start_shards = list(shard_ids)
        self.epoch = 0                           # epochs the shards have rotated by
        self.read_ahead = [0] * self.num_shards  # per starting shard
        # elastic restore: this epoch is the rest of one begun under another sharding, this many
        # samples split over the shards as a dataset is (then the shards start their own epochs)
        self.elastic_left: int | None = None

    def current_shard(self, start: int) -> int:
        return start if self.stick else (start + self.epoch) % self.num_shards

    def current_size(self, start: int) -> int:
        if self.elastic_left is not None:
            return shard_size(self.elastic_left, self.num_shards, start)
        return shard_size(self.n, self.num_shards, self.current_shard(start))

    def pipeline_remaining(self) -> list[int]:
        """Per pipeline, the samples of its current shard it had not read before this epoch."""
        return [self.current_size(s) - self.read_ahead[s] for s in self.start_shards]

    def carry_into_next_epoch(self, consumed: int, batch_size: int) -> int:
        """FILL without padding: every shard consumed ``consumed`` samples this epoch; returns the
        next epoch's size, the longest remainder of a shard rounded up to whole batches. An epoch
        that every shard already read ahead is skipped."""
        while True:
            for s in range(self.num_shards):
                self.read_ahead[s] += consumed - self.current_size(s)
            self.epoch += 1
            remaining = max(self.current_size(s) - self.read_ahead[s] for s in range(self.num_shards))
            if remaining > 0:
                return _round_up(remaining, batch_size)
            consumed = 0

    def rotate(self) -> None:
        if self.elastic_left is None:
            self.epoch += 1
        self.elastic_left = None


class _DaliBaseIterator:
    """Iterates over the outputs of pipelines in epochs; see api.md §15."""

    def __init__(self, pipelines: Any, size: int = -1, reader_name: str | None = None,
                 auto_reset: Any = False, fill_last_batch: bool | None = None,
                 last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True):
        assert pipelines is not None, "the iterator needs at least one pipeline"
        self._pipes = list(pipelines) if isinstance(pipelines, (list, tuple)) else [pipelines]
        assert self._pipes, "the iterator needs at least one pipeline"
        batch_sizes = {p.max_batch_size for p in self._pipes}
        assert len(batch_sizes) == 1, f"all pipelines must have the same max_batch_size, got {batch_sizes}"
        self.batch_size: int = batch_sizes.pop()
        assert size != 0, "Size cannot be 0"
        assert size > 0 or len(self._pipes) == 1 or reader_name is not None, \
            "Negative size is supported only for a single pipeline (or with reader_name)"
        assert reader_name is None or size == -1, "When reader_name is provided, size should not be set"
        assert reader_name is None or not last_batch_padded, \
            "When reader_name is provided, last_batch_padded should not be set (padding comes from the reader)"
        self._auto_reset = _parse_auto_reset(auto_reset)
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated; use last_batch_policy", DeprecationWarning, 3)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        if not isinstance(last_batch_policy, LastBatchPolicy):
            raise ValueError(f"Wrong type for `last_batch_policy`. Expected {LastBatchPolicy}, "
                             f"got {type(last_batch_policy)}")
        if size > 0 and reader_name is None:
            warnings.warn("size is deprecated; use reader_name so the epoch follows the reader", Warning, 3)
        self._policy = last_batch_policy
        self._last_batch_padded = bool(last_batch_padded)
        self._size = int(size)
        if self._size < 0 and reader_name is None:
            self._policy = LastBatchPolicy.FILL
            self._last_batch_padded = False
        self._counter = 0
        self._dropped_read = False  # DROP: the epoch's incomplete last batch was read out
        self._ever_consumed = False
        self._first_batch: Any = None
        for p in self._pipes:
            p.build()
        self._reader: _ReaderEpochs | None = None
        if reader_name is not None:
            self._reader = self._read_reader_meta(reader_name)
            self._size = self._initial_reader_size()
            self._start_elastic(reader_name)
        self._scheduled = False
        self._state_before_first: dict | None = None  # for checkpoints() while the first batch waits
        restored = self._pipes[0]._iterator_data if self._pipes[0].is_restored_from_checkpoint else ""
        if restored:
            self._set_state(json.loads(restored))
        # a checkpoint taken at the end of an epoch resumes with that end (StopIteration at next()),
        # as does an elastic restore whose rest of the epoch is less than one batch (DROP)
        elastic = self._reader is not None and self._reader.elastic_left is not None
        if prepare_first_batch and not ((restored or elastic) and self._epoch_ended()):
            self._state_before_first = self._get_state()
            try:
                self._first_batch = self._next_batch()
            except StopIteration:
                raise RuntimeError("It seems that there is no data in the pipeline. This may happen if "
                                   "`last_batch_policy` is set to PARTIAL and the requested batch size is "
                                   "greater than the shard size. (The pipeline ended at once, or the last "
                                   "batch policy dropped a batch larger than the epoch's shard.)") from None

    # ---- checkpoints (api.md §14) -------------------------------------------------------------
    def _get_state(self) -> dict:
        r = self._reader
        return {"counter": self._counter, "size": self._size, "dropped_read": self._dropped_read,
                "ever_consumed": self._ever_consumed,
                "reader": None if r is None else {"epoch": r.epoch, "read_ahead": list(r.read_ahead),
                                                  "elastic_left": r.elastic_left}}

    def _set_state(self, state: dict) -> None:
        self._counter, self._size = state["counter"], state["size"]
        self._dropped_read, self._ever_consumed = state["dropped_read"], state["ever_consumed"]
        if self._reader is not None and state["reader"] is not None:
            self._reader.epoch = state["reader"]["epoch"]
            self._reader.read_ahead = list(state["reader"]["read_ahead"])
            self._reader.elastic_left = state["reader"]["elastic_left"]

    def checkpoints(self) -> list:
        """One checkpoint per pipeline (pipelines need ``enable_checkpointing=True``), holding this
        iterator's position too: pipelines built with them (``checkpoint=``) give a new iterator
        that continues with the batch this one would return next."""
        waiting = self._first_batch is not None  # taken from the pipelines, not yet returned
        state = self._state_before_first if waiting else self._get_state()
        data = json.dumps(state)
        return [p._checkpoint_with(iterator_data=data, unconsumed=int(waiting)) for p in self._pipes]

    def _load_checkpoints(self, checkpoints: Sequence[Any]) -> None:
        """Rewinds this iterator and its running pipelines to ``checkpoints()`` output."""
        if len(checkpoints) != len(self._pipes):
            raise RuntimeError(f"{len(checkpoints)} checkpoints given for {len(self._pipes)} pipelines")
        for p, cpt in zip(self._pipes, checkpoints):
            p._restore_in_place(cpt)
        self._first_batch, self._state_before_first, self._scheduled = None, None, False
        if self._pipes[0]._iterator_data:  # absent from a checkpoint taken with Pipeline.checkpoint()
            self._set_state(json.loads(self._pipes[0]._iterator_data))

    # ---- framework hook ----------------------------------------------------------------------
    def _convert(self, pipe: Any, outputs: tuple, count: int) -> Any:
        """One pipeline's outputs as framework objects, keeping the first ``count`` samples."""
        raise NotImplementedError

    # ---- sizes -------------------------------------------------------------------------------
    def _read_reader_meta(self, name: str) -> _ReaderEpochs:
        metas = [p.reader_meta(name) for p in self._pipes]
        for key in ("epoch_size", "number_of_shards", "pad_last_batch", "stick_to_shard"):
            values = {m[key] for m in metas}
            assert len(values) == 1, f"the pipelines' readers '{name}' disagree on {key}: {sorted(values)}"
        self._last_batch_padded = bool(metas[0]["pad_last_batch"])
        return _ReaderEpochs(metas[0], [m["shard_id"] for m in metas])

    def _start_elastic(self, name: str) -> None:
        """Pipelines restored from the checkpoints of another sharding (``Pipeline(checkpoint=[...])``):
        this epoch holds the samples the old shards had not handed out, split over the new ones."""
        remaining = {p._readers[name].elastic_remaining for p in self._pipes}
        if remaining == {None}:
            return
        r = self._reader
        if not r.pad or len(remaining) != 1:
            raise NotImplementedError("an iterator over pipelines restored elastically (checkpoints of another "
                                      "sharding) needs readers with pad_last_batch=True")
        r.elastic_left = remaining.pop()
        self._size = self._epoch_size()

    def _epoch_size(self) -> int:
        """Samples per pipeline in the current epoch of a reader-driven iterator."""
        r = self._reader
        if r.elastic_left is None:
            return self._initial_reader_size()
        left = r.elastic_left
        return left // r.num_shards if self._policy == LastBatchPolicy.DROP else -(-left // r.num_shards)

    def _initial_reader_size(self) -> int:
        r = self._reader
        if self._policy == LastBatchPolicy.DROP:
            return r.n // r.num_shards
        if r.pad:
            return r.padded_size // r.num_shards
        return _round_up(-(-r.n // r.num_shards), self.batch_size)

    @property
    def _step(self) -> int:
        """Samples the epoch counter advances by per batch."""
        return self.batch_size if self._reader is not None else self.batch_size * len(self._pipes)

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        if self._policy == LastBatchPolicy.DROP:
            return self._size // self._step
        return math.ceil(self._size / self._step)

    def _epoch_ended(self) -> bool:
        if self._size < 0:
            return False
        if self._counter >= self._size:
            return True
        return self._policy == LastBatchPolicy.DROP and self._counter + self._step > self._size

    # ---- iteration ---------------------------------------------------------------------------
    def __iter__(self) -> "_DaliBaseIterator":
        if self._ever_consumed and self._counter != 0:
            self.reset()
        return self

    def __next__(self) -> Any:
        self._ever_consumed = True
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            return batch
        return self._next_batch()

    def next(self) -> Any:
        return self.__next__()

    def _end_epoch(self) -> None:
        # DROP reads the incomplete last batch when the epoch ends (as DALI does), so a source
        # that gives a short batch there fails here, not at reset()
        if self._policy == LastBatchPolicy.DROP and not self._dropped_read:
            self._discard_dropped_batch()
        if self._auto_reset:
            self.reset()
        raise StopIteration

    def _schedule_first_runs(self) -> None:
        """Pipelines start running at the first batch asked for (so nothing is read before)."""
        if not self._scheduled:
            for p in self._pipes:
                with _driven_by_iterator(p):
                    p.schedule_run()
            self._scheduled = True

    def _share_outputs(self) -> list[tuple]:
        self._schedule_first_runs()
        outputs = []
        try:
            for p in self._pipes:
                with _driven_by_iterator(p):
                    outputs.append(p.share_outputs())
        except StopIteration:
            if self._size < 0 and self._auto_reset:
                self.reset()
            raise
        if self._size > 0:
            for out in outputs:
                for tl in out:
                    assert len(tl) == self.batch_size, (
                        f"an iterator with a size or reader_name needs full batches of {self.batch_size} "
                        f"samples, got {len(tl)}")
        return outputs

    def _release_and_schedule(self) -> None:
        for p in self._pipes:
            with _driven_by_iterator(p):
                p.release_outputs()
                p.schedule_run()

    def _next_batch(self) -> list:
        if self._epoch_ended():
            self._end_epoch()
        outputs = self._share_outputs()
        self._counter += self._step
        counts = self._valid_counts()
        converted = [self._convert(p, out, c) for p, out, c in zip(self._pipes, outputs, counts) if c is not None]
        self._release_and_schedule()
        return converted

    def _valid_counts(self) -> list[int | None]:
        """Per pipeline, how many samples of this batch to return (None: leave the pipeline out)."""
        if self._policy != LastBatchPolicy.PARTIAL or self._size < 0:
            return [self.batch_size] * len(self._pipes)
        counts = self._epoch_counts()
        return counts if self._reader is not None else [c or None for c in counts]

    def _epoch_counts(self) -> list[int]:
        """Per pipeline, how many samples of the batch read last belong to the epoch; the rest are
        padding or samples of the next epoch (shard)."""
        b, n = self.batch_size, len(self._pipes)
        if self._size < 0:
            return [b] * n
        if self._reader is not None:
            return [min(b, max(0, b - (self._counter - s))) for s in self._reader.pipeline_remaining()]
        if self._counter <= self._size:
            return [b] * n
        wanted = b * n - (self._counter - self._size)  # the samples left in the epoch, pipeline by pipeline
        return [max(0, min(b, wanted - i * b)) for i in range(n)]

    # ---- epochs ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Starts the next epoch; only valid once the current one has ended."""
        if not (self._size < 0 or self._epoch_ended()):
            _log.warning("the iterator cannot be reset before the end of its epoch; ignoring reset()")
            return
        if self._policy == LastBatchPolicy.DROP and not self._dropped_read:
            self._discard_dropped_batch()
        self._dropped_read = False
        if self._reader is not None:
            if self._policy == LastBatchPolicy.FILL and not self._reader.pad:
                self._size = self._reader.carry_into_next_epoch(self._counter, self.batch_size)
            else:
                self._reader.rotate()
                self._size = self._epoch_size()
            self._counter = 0
        elif self._policy == LastBatchPolicy.FILL and not self._last_batch_padded and self._size > 0:
            self._counter %= self._size
        else:
            self._counter = 0
        for p in self._pipes:
            with _driven_by_iterator(p):
                p.reset()
                if self._scheduled and p.empty():
                    p.schedule_run()

    def _discard_dropped_batch(self) -> None:
        """DROP: reads out the incomplete last batch, if the epoch has one (it is never returned)."""
        self._dropped_read = True
        if self._counter >= self._size:
            return
        self._share_outputs()
        for p in self._pipes:
            with _driven_by_iterator(p):
                p.release_outputs()
                p.schedule_run()
