"""What every reader shares: the sharding contract and the sample-index stream (api.md §10).

Shard s of S over N samples is [floor(s*N/S), floor((s+1)*N/S)). Reading is an endless stream
starting at the shard's first sample: by default it runs on through the whole dataset,
wrapping at N; ``stick_to_shard`` wraps inside the shard; ``pad_last_batch`` repeats the
shard's last sample until the shard has given ceil(ceil(N/S)/B)*B samples (every shard as many
as the largest, in whole batches of B; verified against DALI 2.4), and the next batch starts at
the next shard (or the same one with ``stick_to_shard``). ``random_shuffle`` draws each output
from a buffer of ``initial_fill`` samples refilled from that stream; ``shuffle_after_epoch``
reads a fresh global permutation every epoch.
"""
from __future__ import annotations

import numpy as np

from .._on_error import ON_ERROR_ARG, reader_load
from .._operator import Operator
from .._registry import Arg, ArgType

READER_ARGS = [
    Arg("shard_id", ArgType.INT, 0, "index of this shard", range=(0, None)),
    Arg("num_shards", ArgType.INT, 1, "number of shards the dataset is split into", range=(1, None)),
    Arg("random_shuffle", ArgType.BOOL, False, "shuffle with a buffer of initial_fill samples"),
    Arg("initial_fill", ArgType.INT, 1024, "size of the shuffle buffer", range=(1, None)),
    Arg("pad_last_batch", ArgType.BOOL, False, "repeat the shard's last sample to complete its last batch"),
    Arg("stick_to_shard", ArgType.BOOL, False, "wrap inside the shard instead of moving on"),
    Arg("lazy_init", ArgType.BOOL, False, "scan the dataset at the first run instead of at build"),
    Arg("read_ahead", ArgType.BOOL, False, "performance hint: prefetch whole files (readers of DB files)"),
    Arg("prefetch_queue_depth", ArgType.INT, 1, "performance hint: batches read ahead", range=(1, None)),
    Arg("skip_cached_images", ArgType.BOOL, False, "skip samples already held by a decoder cache (no cache exists: no effect)"),
    Arg("dont_use_mmap", ArgType.BOOL, False, "read with plain file I/O (penstock always does)"),
    Arg("tensor_init_bytes", ArgType.INT, 1048576, "performance hint: initial buffer size per sample"),
    Arg("shuffle_after_epoch", ArgType.BOOL, False, "a new global permutation every epoch"),
    ON_ERROR_ARG,
]


def shard_bounds(n: int, num_shards: int, shard_id: int) -> tuple[int, int]:
    return (shard_id * n) // num_shards, ((shard_id + 1) * n) // num_shards


class IndexStream:
    """The endless sequence of sample indices one reader shard produces, a batch at a time."""

    def __init__(self, n: int, num_shards: int, shard_id: int, pad_last_batch: bool, stick_to_shard: bool,
                 shuffle_after_epoch: bool, seed: int, batch_size: int):
        self.n, self.num_shards = n, num_shards
        self.pad = pad_last_batch
        self.stick = stick_to_shard or shuffle_after_epoch
        self.permute = shuffle_after_epoch
        self.seed = seed
        self.shard = shard_id
        self.pos = shard_bounds(n, num_shards, shard_id)[0]  # next index (in permuted order)
        # with padding, every shard gives this many samples: the largest shard in whole batches
        self.padded_shard = -(-(-(-n // num_shards)) // batch_size) * batch_size
        self.given = 0  # samples given from the current shard, padding included
        self.epoch = 0
        self._perm = self._permutation(0)

    def _permutation(self, epoch: int) -> np.ndarray | None:
        if not self.permute:
            return None
        return np.random.Generator(np.random.Philox(key=[self.seed & (2**64 - 1), epoch])).permutation(self.n)

    def _advance_shard(self) -> None:
        if not self.stick:
            self.shard = (self.shard + 1) % self.num_shards
        else:
            self.epoch += 1
            self._perm = self._permutation(self.epoch)
        self.pos = shard_bounds(self.n, self.num_shards, self.shard)[0]
        self.given = 0

    def next_batch(self, batch: int) -> np.ndarray:
        out = np.empty(batch, np.int64)
        k = 0
        while k < batch:
            begin, end = shard_bounds(self.n, self.num_shards, self.shard)
            if self.pad and self.pos == end:  # the shard's data is over: repeat its last sample
                take = min(batch - k, self.padded_shard - self.given)
                idx = np.full(take, end - 1, np.int64)
            else:
                limit = end if self.pad or self.stick else self.n  # by default run on through the dataset
                take = min(batch - k, limit - self.pos)
                idx = np.arange(self.pos, self.pos + take)
                self.pos += take
            # map through this epoch's permutation now: advancing below may draw the next one
            out[k:k + take] = idx if self._perm is None else self._perm[idx]
            k += take
            self.given += take
            if self.pad:
                if self.given == self.padded_shard:
                    self._advance_shard()
            elif self.pos == (end if self.stick else self.n):
                if self.stick:
                    self._advance_shard()
                else:
                    self.pos = 0
        return out


class ShuffleBuffer:
    """Draws each output uniformly from a buffer refilled from the underlying stream."""

    def __init__(self, size: int, rng: np.random.Generator):
        self.size = max(1, size)
        self.rng = rng
        self.buffer: np.ndarray | None = None

    def next_batch(self, stream: IndexStream, batch: int) -> np.ndarray:
        if self.buffer is None:
            self.buffer = stream.next_batch(self.size)
        fresh = stream.next_batch(batch)
        picks = self.rng.integers(0, self.size, batch)
        out = np.empty(batch, np.int64)
        buf = self.buffer
        for k in range(batch):  # sequential by nature: a slot may be drawn twice in one batch
            j = picks[k]
            out[k] = buf[j]
            buf[j] = fresh[k]
        return out


class Reader(Operator):
    """Base of readers: subclasses list their samples in ``scan()`` and load them in ``load()``."""

    def __init__(self, node, pipeline) -> None:
        super().__init__(node, pipeline)
        self._batch_size = pipeline.max_batch_size  # readers always give full batches

    def setup(self) -> None:
        a = self.args
        if a["num_shards"] < 1 or not 0 <= a["shard_id"] < a["num_shards"]:
            raise ValueError(f"{self.label}: shard_id must lie in [0, num_shards) and num_shards >= 1 "
                             f"(got shard_id={a['shard_id']}, num_shards={a['num_shards']})")
        if a["shuffle_after_epoch"] and (a["random_shuffle"] or a["stick_to_shard"]):
            raise ValueError(f"{self.label}: shuffle_after_epoch cannot be combined with random_shuffle "
                             "or stick_to_shard")
        self._stream: IndexStream | None = None
        if not a["lazy_init"]:
            self._start()

    def _start(self) -> None:
        a = self.args
        self.size = self.scan()
        if self.size == 0:
            raise RuntimeError(f"{self.label}: no samples found")
        self._stream = IndexStream(self.size, a["num_shards"], a["shard_id"], a["pad_last_batch"],
                                   a["stick_to_shard"], a["shuffle_after_epoch"], self.seed,
                                   self._batch_size)
        self._shuffle = (ShuffleBuffer(a["initial_fill"], np.random.Generator(np.random.Philox(key=self.seed)))
                         if a["random_shuffle"] else None)

    def scan(self) -> int:
        raise NotImplementedError

    def load(self, ws, indices: np.ndarray) -> list:
        raise NotImplementedError

    def next_indices(self, batch: int) -> np.ndarray:
        if self._stream is None:
            self._start()
        if self._shuffle is not None:
            return self._shuffle.next_batch(self._stream, batch)
        return self._stream.next_batch(batch)

    def run(self, ws):
        # Readers always produce full batches of max_batch_size (sources may not shrink them).
        indices = self.next_indices(ws.batch_size)
        if self.args.get("on_error") == "skip":
            return reader_load(self, ws, indices)
        return self.load(ws, indices)

    def reader_meta(self) -> dict:
        if self._stream is None:
            self._start()
        a = self.args
        s = a["num_shards"]
        padded = s * -(-self.size // s) if a["pad_last_batch"] else self.size
        return {"epoch_size": self.size, "epoch_size_padded": padded, "number_of_shards": s,
                "shard_id": a["shard_id"], "pad_last_batch": int(a["pad_last_batch"]),
                "stick_to_shard": int(a["stick_to_shard"] or a["shuffle_after_epoch"])}
