"""What every reader shares: the sharding contract and the order samples come out in (api.md §10).

Shard s of S over N samples is [floor(s*N/S), floor((s+1)*N/S)). A reader reads from its
shard's first sample onwards: by default on through the whole dataset, wrapping at N;
``stick_to_shard`` wraps inside the shard. What it reads is grouped in shard passes (one group
per shard's worth of samples, the next shard's size next unless it sticks). Samples are handed
out from a buffer of ``initial_fill`` read samples, always from the oldest pass still in it:
``random_shuffle`` picks one at random from that pass, otherwise the oldest. So every epoch of
a shuffled reader is a permutation of its shard even when the buffer spans several epochs.
``pad_last_batch`` repeats the last sample handed out until the shard has given
ceil(ceil(N/S)/B)*B samples (every shard as many as the largest, in whole batches of B).
``shuffle_after_epoch`` reshuffles the whole list at every pass (and sticks to the shard).
The picks and shuffles are those of DALI 2.4's loaders, drawn with the same C++ standard
library algorithms from the same seed (the engine's ``SampleOrder``; the pipeline hands out
operator seeds as DALI does), so a reader gives DALI's samples one by one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import deque
from typing import Any, Callable, Sequence

import numpy as np

from .. import _engine
from .._checkpoint import check_int, decode_ints, encode_ints
from .._on_error import ON_ERROR_ARG, reader_load
from .._operator import Operator
from .._registry import Arg, ArgType, ArgumentValueError
from .._workers import Workers
from .._std_random import MINSTD_MODULUS, minstd_state
from ._object_store import ObjectReads, all_urls, stop_waiting

# DALI's file list shuffles use this fixed seed so that every shard sees the same order.
LIST_SHUFFLE_SEED = 524287

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
    Arg("shuffle_after_epoch_seed", ArgType.INT, optional=True,
        doc="seed of shuffle_after_epoch's permutations (the same on every shard); by default a fixed one"),
    ON_ERROR_ARG,
]


def shard_bounds(n: int, num_shards: int, shard_id: int) -> tuple[int, int]:
    return (shard_id * n) // num_shards, ((shard_id + 1) * n) // num_shards


class SampleBuffer:
    """Hands samples out of a buffer of ``fill`` read indices, pass by pass (see the module doc): the
    engine's ``SampleOrder`` draws a batch's indices in one call; here its state as checkpoints hold it."""

    def __init__(self, n: int, num_shards: int, shard_id: int, stick: bool, order: list | None,
                 reshuffle_seed: int | None, fill: int, shuffle: bool, pad: bool, seed: int):
        self.engine = _engine.SampleOrder(n, num_shards, shard_id, stick, order or [],
                                          None if reshuffle_seed is None else reshuffle_seed & 0xFFFFFFFF, fill,
                                          minstd_state(seed) if shuffle else 0, pad)
        self.reshuffles = reshuffle_seed is not None
        self._encoded: tuple | None = None  # (the order's version, its checkpoint text): encoded once per pass

    @property
    def fill(self) -> int:
        return self.engine.fill

    @property
    def list_order(self) -> list | None:
        """The list order being read (None: as scanned)."""
        return self.engine.order or None

    def next_batch(self, batch: int) -> np.ndarray:
        return self.engine.next_batch(batch)

    def start_with(self, indices: list[int], pass_index: int, pad_to: int) -> None:
        """Hands ``indices`` out first (shuffled as a pass is), as pass ``pass_index``; then reads
        this shard from its beginning as a new reader does."""
        self.engine.start_with(list(indices), pass_index, pad_to)

    def get_state(self) -> dict:
        e = self.engine
        read = {"pos": e.pos, "shard": e.shard, "pass_shard": e.pass_shard, "read_in_pass": e.read_in_pass,
                "epoch": e.epoch}
        if self.reshuffles:  # this pass's own permutation of the list
            if self._encoded is None or self._encoded[0] != e.order_version:
                self._encoded = (e.order_version, encode_ints(e.order))
            read["order"] = self._encoded[1]
        state = {"buffer": e.buffer, "passes": [list(p) for p in e.passes], "returned": e.returned, "last": e.last,
                 "rng": e.rng_state or None, "read": read, "pass_index": e.pass_index}
        prelude = e.prelude
        if prelude is not None:
            state["prelude"] = encode_ints(prelude[e.prelude_pos:])
            state["prelude_pad_to"] = e.prelude_pad_to
        return state

    def set_state(self, state: dict) -> None:
        """Takes a state ``check_samples_state`` accepted."""
        e = self.engine
        e.buffer, e.passes = list(state["buffer"]), [tuple(p) for p in state["passes"]]
        e.returned, e.last, e.pass_index = state["returned"], state["last"], state["pass_index"]
        if e.rng_state:
            e.rng_state = state["rng"]
        read = state["read"]
        e.pos, e.shard, e.pass_shard = read["pos"], read["shard"], read["pass_shard"]
        e.read_in_pass, e.epoch = read["read_in_pass"], read["epoch"]
        if "order" in read:
            e.set_order(decode_ints(read["order"]))
        e.prelude = decode_ints(state["prelude"]) if "prelude" in state else None
        e.prelude_pos, e.prelude_pad_to = 0, state.get("prelude_pad_to", 0)


def check_samples_state(state: dict, size: int, num_shards: int, shard_id: int, fill: int, shuffled: bool,
                        reshuffled: bool) -> None:
    """A saved ``SampleBuffer`` state (with its read order's) of a reader with these settings:
    every value in the range the reader can reach, the buffer's passes contiguous, spanning the
    buffer and each without a repeated sample. A ValueError names the first that is not."""
    buffer, passes = state["buffer"], state["passes"]
    if not isinstance(buffer, list) or not isinstance(passes, list) or bool(buffer) != bool(passes):
        raise ValueError("the shuffle buffer and its passes must be lists, both empty or neither")
    if buffer and len(buffer) != fill:
        raise ValueError(f"the shuffle buffer holds {len(buffer)} samples, this reader's holds {fill}")
    for index in buffer:
        check_int(index, "a buffered sample", 0, size)
    end = passes[0][0] if passes else 0
    for span in passes:
        if not (isinstance(span, list) and len(span) == 2 and check_int(span[0], "a pass's start") == end):
            raise ValueError(f"the buffer's passes must be contiguous [start, end) pairs, got {passes}")
        end = check_int(span[1], "a pass's end", span[0])
    if passes and end - passes[0][0] != len(buffer):
        raise ValueError(f"the buffer's passes {passes} do not span its {len(buffer)} samples")
    for first, last in passes:
        members = [buffer[c % len(buffer)] for c in range(first, last)]
        if len(set(members)) != len(members):
            raise ValueError("a pass of the shuffle buffer holds a sample twice")
    check_int(state["returned"], "the samples handed out of the pass")
    check_int(state["last"], "the last sample", -1, size)
    check_int(state["pass_index"], "the pass index")
    if shuffled:
        check_int(state["rng"], "the shuffle generator's state", 1, MINSTD_MODULUS)
    elif state["rng"] is not None:
        raise ValueError("an unshuffled reader has no generator state")
    if "prelude" in state:
        for index in decode_ints(state["prelude"]):
            check_int(index, "a sample left of an elastic epoch", 0, size)
        check_int(state["prelude_pad_to"], "the elastic epoch's padding")
    read = state["read"]
    check_int(read["pos"], "the read position", 0, size)
    if check_int(read["shard"], "the shard read", 0, num_shards) != shard_id:
        raise ValueError(f"the read order is of shard {read['shard']}, the reader's is shard {shard_id}")
    check_int(read["pass_shard"], "the shard of the pass", 0, num_shards)
    check_int(read["read_in_pass"], "the samples read in the pass", 0, size + 1)
    check_int(read["epoch"], "the read epoch", 1)
    if reshuffled != ("order" in read):
        raise ValueError("a saved list order goes with shuffle_after_epoch, and only with it")
    if reshuffled and sorted(decode_ints(read["order"])) != list(range(size)):
        raise ValueError("the saved list order is not a permutation of the dataset")


def _io_threads(num_threads: int, decodes: bool) -> int:
    """Threads of the read-ahead's own pool: one per four of the pipeline's. One thread opening
    and reading files one by one tops out near 25k small files/s, below what a GPU decodes. A
    reader that decodes as it reads (``Reader.decodes``) gets as many as the pipeline: its
    decoding is as much of the CPU stage's work as the operators after it."""
    return num_threads if decodes else max(1, num_threads // 4)


class _NativeLoad:
    """A batch read ahead on the reader's native thread (``Reader.load_later``), collected as a
    future's result: once, then the same batch (or error) again."""
    __slots__ = ("_finish", "_batch", "_error")

    def __init__(self, finish: Callable[[], list]):
        self._finish: Callable[[], list] | None = finish
        self._batch: list | None = None
        self._error: BaseException | None = None

    def exception(self) -> BaseException | None:
        """Waits for the read; its error, or None."""
        if self._finish is not None:
            finish, self._finish = self._finish, None
            try:
                self._batch = finish()
            except Exception as exc:  # noqa: BLE001 - kept for result(), as a future keeps it
                self._error = exc
        return self._error

    def result(self) -> list:
        error = self.exception()
        if error is not None:
            raise error
        return self._batch


def python_ints(indices: Sequence[int]) -> Sequence[int]:
    """Sample indices to index Python lists with: a numpy array's as Python ints (a list indexed by
    numpy's integers costs several times as much, a batch's names every batch)."""
    return indices.tolist() if isinstance(indices, np.ndarray) else indices


class Reader(Operator):
    """Base of readers: subclasses list their samples in ``scan()`` and load them in ``load()``.

    ``load`` runs ahead on the reader's own thread (with its own engine pool, ``_io_threads``), up to
    ``prefetch_queue_depth`` batches before the one being run, so file I/O overlaps the rest of
    the CPU stage as DALI's loader thread does; it may use only ``ws.pool`` of its workspace. A
    reader whose ``load`` needs more sets ``reads_ahead = False``. A reader whose reading is one
    engine call starts it on a native thread instead (``load_later``): no Python thread wakes up,
    taking the GIL from a training loop, to make the call.
    """
    reads_ahead = True
    tracks_state = True
    shuffles_list = False
    decodes = False  # whether load() decodes (compute) besides reading (I/O)

    def __init__(self, node, pipeline) -> None:
        super().__init__(node, pipeline)
        self._batch_size = pipeline.max_batch_size  # readers always give full batches
        self._ahead: deque = deque()
        self.elastic_remaining: int | None = None  # samples left of an epoch continued elastically
        self._io: Workers | None = None
        self._native_io: Any = None  # _engine.Background, with _io

    def setup(self) -> None:
        a = self.args
        if a["num_shards"] < 1 or not 0 <= a["shard_id"] < a["num_shards"]:
            raise ArgumentValueError(
                f"{self.label}: argument 'shard_id' must lie in [0, num_shards) and 'num_shards' be at "
                f"least 1; got shard_id={a['shard_id']}, num_shards={a['num_shards']}")
        for other in ("random_shuffle", "stick_to_shard"):
            if a["shuffle_after_epoch"] and a[other]:
                raise ArgumentValueError(f"{self.label}: arguments 'shuffle_after_epoch' and '{other}' "
                                         "cannot both be true")
        if a["initial_fill"] < 1 and a["random_shuffle"]:
            raise ArgumentValueError(f"{self.label}: argument 'initial_fill' must be at least 1, "
                                     f"got {a['initial_fill']}")
        self._samples: SampleBuffer | None = None
        if not a["lazy_init"]:
            self._start()

    def _start(self) -> None:
        a = self.args
        self.size = self.scan()
        self._dataset_digest: str | None = None
        if self.size == 0:
            raise RuntimeError(f"{self.label}: no samples found")
        if self.size < a["num_shards"]:
            raise ArgumentValueError(f"{self.label}: The number of input samples: {self.size}, needs to be at least "
                                     f"equal to the requested number of shards: {a['num_shards']}.")
        self._new_samples()

    def _new_samples(self) -> None:
        """The read order and sample buffer of a reader that has read nothing yet."""
        a = self.args
        self._samples = SampleBuffer(self.size, a["num_shards"], a["shard_id"],
                                     a["stick_to_shard"] or a["shuffle_after_epoch"], self.list_order(),
                                     self.list_shuffle_seed() if a["shuffle_after_epoch"] else None,
                                     a["initial_fill"], a["random_shuffle"], a["pad_last_batch"], self.seed)

    def list_shuffle_seed(self) -> int:
        """The seed of shuffle_after_epoch's list shuffles: the user's, or DALI's fixed one."""
        seed = self.args["shuffle_after_epoch_seed"]
        return LIST_SHUFFLE_SEED if seed is None else seed

    def list_order(self) -> list | None:
        """The order a reader reads its list in (None: as scanned). DALI's readers of file lists
        (``shuffles_list``) shuffle it once under ``random_shuffle``, with a fixed seed (the same on
        every shard), before the buffer shuffles."""
        if self.shuffles_list and self.args["random_shuffle"]:
            return _engine.std_shuffle(list(range(self.size)), LIST_SHUFFLE_SEED)
        return None

    def scan(self) -> int:
        raise NotImplementedError

    def load(self, ws, indices: np.ndarray) -> list:
        raise NotImplementedError

    def load_later(self, ws, indices: np.ndarray, background: Any) -> Callable[[], list] | None:
        """Starts ``load``'s engine call on ``background``'s native thread and returns what finishes
        the batch from its result; None where this reader's load is more than one such call."""
        return None

    def prefetch(self, indices: np.ndarray) -> None:
        """Starts reading samples ``indices`` before ``load`` is given them (readers of object
        stores: a batch's GETs are in flight while the batches before it are loaded)."""

    def sources(self, indices: Sequence[int]) -> list[str]:
        """The source_info of samples ``indices`` (what their outputs carry): here the files of
        ``self.paths``; readers whose samples are something else override it."""
        paths = self.paths
        return [paths[i] for i in python_ints(indices)]

    def dataset_digest(self) -> str:
        """A digest of the names (without directories) of every sample, in the list's order: a
        checkpoint restores only over the dataset it was made over, wherever that lies now."""
        if self._dataset_digest is None:
            names = "\n".join(os.path.basename(s) for s in self.sources(range(self.size)))
            self._dataset_digest = hashlib.sha256(names.encode("utf-8", "surrogateescape")).hexdigest()
        return self._dataset_digest

    def check_dataset(self, size: Any, digest: Any) -> None:
        """Raises unless this reader reads the dataset a checkpoint with ``size`` and ``digest``
        (``dataset_digest``) was made over."""
        if self._samples is None:
            self._start()
        if size != self.size:
            raise RuntimeError(f"{self.label}: the checkpoint was made over {size} samples, the reader now "
                               f"finds {self.size}; restore over the same dataset")
        if digest != self.dataset_digest():
            raise RuntimeError(f"{self.label}: the checkpoint was made over another dataset of {size} samples "
                               "(their file names, or their order, differ); restore over the same dataset")

    def _check_state(self, state: dict) -> None:
        """Raises ValueError unless a saved state (of this reader or, elastically, of another shard)
        holds only values a reader like this one can reach."""
        a = self.args
        size = check_int(state["size"], "the dataset size", 1)
        shards = check_int(state["num_shards"], "num_shards", 1, size + 1)
        shard = check_int(state["shard_id"], "shard_id", 0, shards)
        check_samples_state(state["samples"], size, shards, shard, self._samples.fill, a["random_shuffle"],
                            a["shuffle_after_epoch"])

    def next_indices(self, batch: int) -> np.ndarray:
        if self._samples is None:
            self._start()
        return self._samples.next_batch(batch)

    def _indices_for(self, iteration: int, batch: int) -> np.ndarray:
        """The indices of ``iteration``'s batch; with checkpointing, the state before it is kept."""
        history = getattr(self, "_history", None)
        if history is None:
            return self.next_indices(batch)
        with history.lock:
            history.record(iteration, self.get_state)
            return self.next_indices(batch)

    def run(self, ws):
        # Readers always produce full batches of max_batch_size (sources may not shrink them).
        if self.args.get("on_error") == "skip":  # refills draw more indices: read in order, not ahead
            return reader_load(self, ws, self._indices_for(ws.iteration, ws.batch_size))
        if not self.reads_ahead:
            return self.load(ws, self._indices_for(ws.iteration, ws.batch_size))
        if self._io is None:
            self._io = Workers(1, "penstock-reader")
            self._native_io = _engine.Background("penstock-reader")
            self._io_ws = dataclasses.replace(ws, pool=_engine.ThreadPool(
                _io_threads(ws.pool.num_threads, self.decodes), "penstock-io"))
        while len(self._ahead) <= max(1, self.args["prefetch_queue_depth"]):
            indices = self._indices_for(ws.iteration + len(self._ahead), ws.batch_size)
            self.prefetch(indices)
            finish = self.load_later(self._io_ws, indices, self._native_io)
            self._ahead.append(self._io.submit(self.load, self._io_ws, indices) if finish is None
                               else _NativeLoad(finish))
        return self._ahead.popleft().result()

    def stop_reading(self) -> None:
        if self._io is not None:  # batches not started are dropped; the one being read stops waiting
            self._io.close()
            stop_waiting(self._io.threads)

    def close(self) -> None:
        if self._io is not None:  # the read-ahead thread ends after the batch it is reading
            self._io.close()
            self._native_io.close()  # (its reads are whole batches of local files: bounded)

    # -- checkpoints: position, shuffle buffer and generator (the seed draws nothing else)
    def get_state(self) -> dict | None:
        if self._samples is None:
            return None  # lazy_init, not started: a fresh reader
        a = self.args
        return {"size": self.size, "num_shards": a["num_shards"], "shard_id": a["shard_id"],
                "samples": self._samples.get_state()}

    def set_state(self, state: dict | None) -> None:
        for pending in self._ahead:  # batches read ahead from the state being replaced
            pending.exception()
        self._ahead.clear()
        history = getattr(self, "_history", None)
        if history is not None:
            history.clear()
        if state is None:
            if self._samples is not None:
                self._new_samples()
            return
        if self._samples is None:
            self._start()
        a = self.args
        if state["size"] != self.size:
            raise RuntimeError(f"{self.label}: the checkpoint was made over {state['size']} samples, the "
                               f"reader now finds {self.size}; restore over the same dataset")
        if (state["num_shards"], state["shard_id"]) != (a["num_shards"], a["shard_id"]):
            raise RuntimeError(f"{self.label}: the checkpoint was made for shard {state['shard_id']} of "
                               f"{state['num_shards']}, this reader is shard {a['shard_id']} of {a['num_shards']}")
        self._check_state(state)
        self._samples.set_state(state["samples"])

    # -- elastic restore: the checkpoints of every shard of another sharding
    def set_elastic_state(self, states: list) -> None:
        """Continues the epoch that the shards saved in ``states`` were in: the samples none of them
        had handed out yet are split over the new shards as the shards of a dataset are, then
        every shard reads on as a new reader of the new sharding does."""
        self.set_state(None)
        if all(st is None for st in states):
            return  # none had started: nothing was consumed
        if any(st is None for st in states):
            raise RuntimeError(f"{self.label}: elastic restore: some shards' readers had not started")
        old = len(states)
        if sorted(st["shard_id"] for st in states) != list(range(old)) or any(st["num_shards"] != old
                                                                              for st in states):
            raise RuntimeError(f"{self.label}: elastic restore needs the checkpoints of every shard of the old "
                               f"sharding, one each; got shards {sorted(st['shard_id'] for st in states)} of "
                               f"{sorted({st['num_shards'] for st in states})}")
        if any(st["size"] != self.size for st in states):
            raise RuntimeError(f"{self.label}: the checkpoints were made over another dataset size than "
                               f"this reader's {self.size} samples")
        for st in states:
            self._check_state(st)
        unseen = [self._unseen(st) for st in states]
        passes = {p for p, _ in unseen}
        if len(passes) > 1:
            raise RuntimeError(f"{self.label}: elastic restore: the old shards were in different epochs "
                               f"(passes {sorted(passes)}); checkpoint every shard at the same iteration, "
                               "with pad_last_batch=True when the shards' sizes differ")
        remaining = sorted(i for _, part in unseen for i in part)
        if len(set(remaining)) != len(remaining):
            raise RuntimeError(f"{self.label}: elastic restore: the old shards' remaining samples overlap")
        a = self.args
        if 0 < len(remaining) < a["num_shards"]:
            raise RuntimeError(f"{self.label}: elastic restore: {len(remaining)} samples remain in the epoch, "
                               f"fewer than the {a['num_shards']} new shards; resume from a checkpoint taken "
                               "earlier in the epoch or at its end")
        self.elastic_remaining = len(remaining) or None  # the iterators size this epoch from it
        lo, hi = shard_bounds(len(remaining), a["num_shards"], a["shard_id"])
        pass_index = passes.pop() + (0 if remaining else 1)
        self._samples.start_with(remaining[lo:hi], pass_index, -(-len(remaining) // a["num_shards"]))

    def _unseen(self, state: dict) -> tuple[int, list[int]]:
        """The pass a saved reader was handing out, and its samples not handed out yet."""
        s, r = state["samples"], state["samples"]["read"]
        if "prelude" in s:
            return s["pass_index"], decode_ints(s["prelude"])
        order = decode_ints(r["order"]) if "order" in r else self._samples.list_order

        def index(position: int) -> int:
            return position if order is None else order[position]

        n, shards = state["size"], state["num_shards"]
        if not s["passes"]:  # nothing read yet: all of the first pass
            begin, end = shard_bounds(n, shards, state["shard_id"])
            return s["pass_index"], [index(p) for p in range(begin, end)]
        front, buf = s["passes"][0], s["buffer"]
        part = [buf[c % len(buf)] for c in range(front[0], front[1])]
        if len(s["passes"]) == 1:  # the pass is still being read: the rest of its shard is unread
            begin, end = shard_bounds(n, shards, r["pass_shard"])
            part += [index(p) for p in range(r["pos"], r["pos"] + (end - begin) - r["read_in_pass"])]
        return s["pass_index"], part

    def reader_meta(self) -> dict:
        if self._samples is None:
            self._start()
        a = self.args
        s = a["num_shards"]
        padded = s * -(-self.size // s) if a["pad_last_batch"] else self.size
        return {"epoch_size": self.size, "epoch_size_padded": padded, "number_of_shards": s,
                "shard_id": a["shard_id"], "pad_last_batch": int(a["pad_last_batch"]),
                "stick_to_shard": int(a["stick_to_shard"] or a["shuffle_after_epoch"])}


class FilesReader(Reader):
    """A reader whose samples are whole files (``self.paths``, named ``self.names``), on local disk
    or, all of them, in object stores: those are fetched by ``self.object_reads``, each batch's GETs
    started when its samples are drawn (``prefetch``)."""
    object_reads: ObjectReads | None = None

    def fetch_remote(self) -> None:
        """Called once ``self.paths`` is listed: whether (and how) its files are fetched from object stores."""
        self.object_reads = ObjectReads(self.label) if all_urls(self.label, "the files listed", self.paths) else None

    def sources(self, indices: Sequence[int]) -> list[str]:
        names = self.names
        return [names[i] for i in python_ints(indices)]

    def prefetch(self, indices: np.ndarray) -> None:
        if self.object_reads is not None:
            self.object_reads.prefetch([self.paths[i] for i in indices])

    def close(self) -> None:
        super().close()
        if self.object_reads is not None:
            self.object_reads.close()
