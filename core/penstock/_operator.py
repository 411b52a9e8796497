"""What an operator kernel implements, and the workspace it runs in."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from . import _engine
from ._batch import contiguous, empty_batch
from ._registry import OpSchema
from .tensors import TensorListCPU

_KEY_HIGH_WORD = 0x9E3779B97F4A7C15  # Operator.rng_for's key: (seed, this)


class _Key(np.random.bit_generator.ISeedSequence):
    """A seed sequence that gives Philox its key as it stands (``Operator.rng_for``)."""
    __slots__ = ("key",)

    def __init__(self, key: np.ndarray):
        self.key = key

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        return self.key


class SampleError(RuntimeError):
    """A kernel's complaint about one sample; the executor adds the sample's source (file name)."""

    def __init__(self, sample: int, message: str):
        super().__init__(message)
        self.sample = sample


@dataclasses.dataclass
class Workspace:
    """Everything one operator sees for one iteration."""
    inputs: list
    arg_inputs: dict
    batch_size: int
    iteration: int        # absolute iteration index of this pipeline
    epoch: int
    pool: "_engine.ThreadPool"
    fed: Any = None       # data fetched by a source operator in the scheduling thread
    op: "Operator | None" = None
    gpu: Any = None       # the pipeline's DeviceContext, for GPU and mixed operators
    # before a batch's Python on a thread of the operator's own (background decoding): lets the
    # pipeline's consumer run first while the pipeline is ahead of it (penstock._consumer)
    defer: Callable[[], int] = lambda: 0
    # the share of its time the pipeline's consumer recently waited for batches (0: never)
    starved: Callable[[], float] = lambda: 0.0
    # a batch of two iterations run as one (penstock._pairs): per iteration (index, epoch, samples)
    parts: tuple = ()

    @property
    def stream(self) -> Any:
        """The pipeline's CUDA stream (a cupy Stream) for GPU and mixed operators, else None."""
        return None if self.gpu is None else self.gpu.stream

    @property
    def kernels(self) -> Any:
        """The batch kernels of this operator's device: the native engine on the CPU, the CUDA
        kernels (same signatures, device buffers) on the GPU."""
        return _engine if self.gpu is None else self.gpu.kernels

    def new_batch(self, shapes: np.ndarray, dtype: Any, layout: str = "", source_info: Any = None,
                  like: Any = None) -> Any:
        """An uninitialized packed batch on this operator's device."""
        if self.gpu is None:
            return empty_batch(shapes, dtype, layout, source_info, like)
        return self.gpu.new_batch(shapes, dtype, layout, source_info)

    def device_array(self, host: np.ndarray) -> Any:
        """A host array as this operator's device sees it (uploaded on the GPU)."""
        return host if self.gpu is None else self.gpu.upload(host)

    def from_host(self, batch: TensorListCPU) -> Any:
        """A host batch (small results computed on the host) on this operator's device."""
        if self.gpu is None:
            return batch
        out = self.new_batch(batch._shapes, batch._buf.dtype, batch._layout, batch._source_info)
        self.gpu.upload(contiguous(batch)._buf[:batch._volume_total()], out._buf)
        return out

    def per_sample(self, name: str, dtype: Any = np.float32, count: int | None = None) -> np.ndarray:
        """Argument ``name`` as an array [batch, count] (or [batch] when count is None).

        A per-sample DataNode supplies one value (or ``count`` values) per sample; a constant is
        broadcast to every sample.
        """
        op = self.op
        label = op.label if op else name
        if name in self.arg_inputs:
            tl = self.arg_inputs[name]
            if len(tl) != self.batch_size:
                raise RuntimeError(f"{label}: argument input '{name}' has {len(tl)} samples, "
                                   f"the batch has {self.batch_size}")
            vols = tl._volumes()
            want = 1 if count is None else count
            if not (vols == want).all():
                bad = int(np.nonzero(vols != want)[0][0])
                raise RuntimeError(f"{label}: argument input '{name}' must have {want} value(s) per "
                                   f"sample; sample {bad} has shape {tl.shape()[bad]}")
            arr = np.asarray(tl._buf[:self.batch_size * want] if tl._is_packed_cached()
                             else np.concatenate([tl._sample_array(i).reshape(-1) for i in range(len(tl))]),
                             dtype=dtype)
            return arr if count is None else arr.reshape(self.batch_size, count)
        value = op.args[name] if op else None
        if count is None:
            return np.full(self.batch_size, value, dtype=dtype)
        v = np.asarray(value, dtype=dtype).reshape(-1)
        if v.size == 1:
            v = np.repeat(v, count)
        if v.size != count:
            raise ValueError(f"{label}: argument '{name}' needs {count} values, got {v.size}")
        # a column at a time: a copy of the whole [batch, count] table gives numpy the GIL away
        out = np.empty((self.batch_size, count), dtype)
        for k in range(count):
            out[:, k] = v[k]
        return out

    def has_arg(self, name: str) -> bool:
        return name in self.arg_inputs or (self.op is not None and self.op.args.get(name) is not None)

    @property
    def rng(self) -> np.random.Generator:
        """This operator's random stream for this iteration (independent of threads and timing)."""
        if self.parts:
            raise RuntimeError(f"{self.op.label}: a batch of two iterations has a random stream for each "
                               "(Workspace.rngs)")
        return self.op.rng_for(self.iteration)

    def rngs(self) -> list[tuple[np.random.Generator, int, int]]:
        """The random stream of each iteration the batch holds, with its samples' range: (stream,
        first, end). One unless two iterations run as one (``parts``): each draws for its own
        samples as it would alone."""
        if not self.parts:
            return [(self.rng, 0, self.batch_size)]
        ranges, start = [], 0
        for iteration, _epoch, count in self.parts:
            ranges.append((self.op.rng_for(iteration), start, start + count))
            start += count
        return ranges


class Operator:
    """Base class of operator kernels: one instance per graph node, built with the pipeline."""
    schema: OpSchema
    # each output sample is computed from its own samples of the inputs and argument inputs (its random
    # draws from ``Workspace.rngs``), so two iterations can run as one batch (penstock._pairs)
    pairs_iterations = False
    # its GPU outputs may still be filled in the background when it returns (the mixed decoders): the
    # first reader, or the thread that waits for the iteration, completes them
    fills_later = False

    def __init__(self, node: Any, pipeline: Any):
        self.node = node
        self.args: dict = node.args
        self.name: str = node.name
        self.label = f"{node.schema.fn_name} ('{node.name}')"
        self.device: str = node.device
        self.seed: int = node.resolved_seed

    def given(self, name: str) -> bool:
        """Whether the user gave argument ``name``, as a value or an argument input (build-time
        checks; at run time ``Workspace.has_arg``)."""
        return self.args.get(name) is not None or name in self.node.arg_inputs

    # -- lifecycle
    def setup(self) -> None:
        """Called once at build (readers scan their files here)."""

    def run(self, ws: Workspace) -> Sequence[TensorListCPU]:
        raise NotImplementedError(f"{self.label} has no run()")

    def close(self) -> None:
        """Called once when the pipeline shuts down: threads the operator started end here, not
        whenever the garbage collector reaches the operator."""

    def stop_reading(self) -> None:
        """Called when the pipeline shuts down, before it joins its stages: threads of the
        operator's own stop reading (and waiting for an object store's reads)."""

    def link(self, consumers: list[list["Operator | None"]]) -> None:
        """Called once at build with, per output, the operators that read it (None for a pipeline
        output or an argument input), so an operator may specialize for what follows it."""

    # -- sources (is_source schemas): called in the scheduling thread before the iteration runs
    def fetch(self, epoch: int, iteration_in_epoch: int, batch_size: int) -> Any:
        raise NotImplementedError

    def reset_epoch(self) -> None:
        """The pipeline moved to the next epoch (sources restart their counters)."""

    # -- checkpoints (penstock._checkpoint)
    tracks_state = False  # state changes as iterations are prepared: recorded per iteration when checkpointing

    def unsaved_state_warning(self) -> str | None:
        """What a checkpoint of this operator misses (warned when checkpointing is enabled), or None."""
        return None

    def get_state(self) -> Any:
        """Plain data from which ``set_state`` resumes this operator exactly (None: stateless). A
        random operator's draws are keyed on its seed and the iteration, so its seed is its state."""
        return {"seed": self.seed} if self.schema.is_random else None

    def set_state(self, state: Any) -> None:
        if state is not None and "seed" in state:
            self.seed = int(state["seed"])

    # -- randomness
    def rng_for(self, iteration: int) -> np.random.Generator:
        """Philox keyed on the seed, its counter at the iteration. The key comes as a seed sequence
        that gives it as it stands: made from a key alone, numpy first draws the OS's entropy for a
        seed it does not use, a system call that gives the GIL away (a pipeline thread then waits to
        take it back), and a real seed sequence hashes (set afterwards from one, a call took 20 us on
        an H100's host against 7, with the GIL held, two calls a batch in a train pipeline)."""
        key = np.array([self.seed & 0xFFFFFFFFFFFFFFFF, _KEY_HIGH_WORD], np.uint64)
        return np.random.Generator(np.random.Philox(_Key(key), counter=[0, 0, 0, iteration]))

    # -- metadata for readers
    def reader_meta(self) -> dict | None:
        return None


def sample_error_from_engine(exc: BaseException) -> SampleError | None:
    """Converts the native _engine.SampleError (args: message, index) to SampleError."""
    if isinstance(exc, _engine.SampleError) and len(exc.args) == 2:
        return SampleError(int(exc.args[1]), str(exc.args[0]))
    return None
