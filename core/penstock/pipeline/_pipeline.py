"""The Pipeline: its arguments, graph definition, introspection, serialization, checkpoints and
lifetime; building is in _build.py, running in _run.py."""
from __future__ import annotations

import collections
import os
import sys
import threading
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .. import _checkpoint, _current
from .._executor import Executor, Iteration
from .._graph import OpNode
from .._sources import thread_stacks
from ..data_node import DataNode
from ..operators import _object_store
from ..operators.constant import constant_node
from ..types import DALIDataType, PipelineAPIType, ScalarConstant
from ._build import PipelineBuild
from ._run import PipelineRun, one_caller


# The default of Pipeline(max_image_pixels=): 16384 x 16384, above any camera's (150 MP at most)
# and any common dataset's images, far below what a decompression bomb claims.
MAX_IMAGE_PIXELS = 1 << 28


class StreamPolicy:
    SINGLE = 0
    PER_BACKEND = 1
    PER_OPERATOR = 2


class OperatorConcurrency:
    NONE = 0
    BACKEND = 1
    FULL = 2


def _normalize_1x(value: Any, name: str) -> Any:
    """DALI 1.x used -1 for 'not set'; accept it (with a warning for seeds)."""
    if value is not None and not isinstance(value, bool) and isinstance(value, int) and value < 0:
        if name == "seed":
            warnings.warn("a negative seed is deprecated; use None for a random seed", DeprecationWarning, 3)
        return None
    return value




class Pipeline(PipelineBuild, PipelineRun):
    """A graph of operators that produces batches, run asynchronously by the native engine."""

    def __init__(self, batch_size: int | None = None, num_threads: int | None = None,
                 device_id: int | None = None, seed: int | None = None, exec_pipelined: bool = True,
                 prefetch_queue_depth: int | dict = 2, exec_async: bool = True, bytes_per_sample: int = 0,
                 set_affinity: bool = False, max_streams: int | None = None,
                 default_cuda_stream_priority: int | None = None, *, enable_memory_stats: bool = False,
                 enable_checkpointing: bool = False, checkpoint: Any = None, py_num_workers: int = 1,
                 py_start_method: str = "fork", py_callback_pickler: Any = None,
                 output_dtype: Any = None, output_ndim: Any = None, output_layout: Any = None,
                 exec_dynamic: bool | None = None, experimental_exec_dynamic: bool | None = None,
                 stream_policy: Any = None, concurrency: Any = None,
                 max_image_pixels: int | None = MAX_IMAGE_PIXELS, source_timeout: float | None = None):
        # kept as given (-1: not set, as DALI's default): build() refuses what cannot run, in DALI's words
        self._max_batch_size = batch_size
        self._num_threads = num_threads
        self._device_id = None if device_id is None or device_id == -99999 else _normalize_1x(device_id, "device_id")
        self._seed = _normalize_1x(seed, "seed")
        self._effective_seed = (self._seed if self._seed is not None
                                else int.from_bytes(os.urandom(8), "little") >> 1)
        self._exec_pipelined = bool(exec_pipelined)
        self._exec_async = bool(exec_async)
        if isinstance(prefetch_queue_depth, dict):
            if set(prefetch_queue_depth) != {"cpu_size", "gpu_size"}:
                raise TypeError("prefetch_queue_depth as a dict needs exactly the keys 'cpu_size' and 'gpu_size'")
            self._cpu_queue_size = int(prefetch_queue_depth["cpu_size"])
            self._gpu_queue_size = int(prefetch_queue_depth["gpu_size"])
            self._exec_separated = True
        elif isinstance(prefetch_queue_depth, int) and not isinstance(prefetch_queue_depth, bool):
            self._cpu_queue_size = self._gpu_queue_size = prefetch_queue_depth
            self._exec_separated = False
        else:
            raise TypeError("prefetch_queue_depth must be an int or a dict {'cpu_size': int, 'gpu_size': int}, "
                            f"got {type(prefetch_queue_depth).__name__}")
        if min(self._cpu_queue_size, self._gpu_queue_size) < 1:
            raise ValueError("prefetch_queue_depth must be at least 1")
        self._prefetch_queue_depth = prefetch_queue_depth
        if experimental_exec_dynamic is not None:
            warnings.warn("experimental_exec_dynamic is deprecated; use exec_dynamic", DeprecationWarning, 2)
            if exec_dynamic is None:
                exec_dynamic = experimental_exec_dynamic
        if self._exec_separated and exec_dynamic:
            raise ValueError("exec_dynamic cannot be used with separated prefetch queues")
        if exec_dynamic is None:
            exec_dynamic = self._exec_pipelined and self._exec_async and not self._exec_separated
        self._exec_dynamic = bool(exec_dynamic)
        self._bytes_per_sample = bytes_per_sample
        if set_affinity:
            # the engine's worker threads cannot be pinned yet; accepting it would silently do nothing
            raise NotImplementedError("penstock does not support set_affinity=True yet (pinning the "
                                      "pipeline's worker threads to CPUs)")
        self._set_affinity = False
        if max_streams is not None and max_streams != -1:
            warnings.warn("max_streams is deprecated and has no effect", DeprecationWarning, 2)
        if default_cuda_stream_priority is not None and default_cuda_stream_priority != 0:
            warnings.warn("default_cuda_stream_priority is deprecated and has no effect", DeprecationWarning, 2)
        self._enable_memory_stats = bool(enable_memory_stats)
        if max_image_pixels is not None and (type(max_image_pixels) is not int or max_image_pixels < 1):
            raise ValueError(f"max_image_pixels must be a positive int or None, got {max_image_pixels!r}")
        self._max_image_pixels = max_image_pixels
        if source_timeout is not None and (isinstance(source_timeout, bool) or
                                           not isinstance(source_timeout, (int, float)) or not source_timeout > 0):
            raise ValueError(f"source_timeout must be a positive number of seconds or None, got {source_timeout!r}")
        self._source_timeout = source_timeout
        self._enable_checkpointing = bool(enable_checkpointing)
        self._checkpoint = None if checkpoint is None else _checkpoint.parse(checkpoint)
        self._restored = checkpoint is not None
        # an iterator's position in the checkpoint (none in an elastic restore's list of checkpoints)
        self._iterator_data = self._checkpoint.get("iterator_data", "") if isinstance(self._checkpoint, dict) else ""
        if py_start_method not in ("fork", "spawn"):
            raise ValueError(f"py_start_method must be 'fork' or 'spawn', got {py_start_method!r}")
        if py_start_method == "fork" and py_callback_pickler is not None:
            raise ValueError("py_callback_pickler can only be used with py_start_method='spawn'")
        self._py_num_workers = py_num_workers
        self._py_start_method = py_start_method
        self._py_callback_pickler = py_callback_pickler
        self._output_dtype = self._check_output_spec(output_dtype, "output_dtype")
        self._output_ndim = self._check_output_spec(output_ndim, "output_ndim")
        self._output_layout = output_layout
        self._stream_policy = StreamPolicy.PER_BACKEND if stream_policy is None else stream_policy
        self._concurrency = OperatorConcurrency.BACKEND if concurrency is None else concurrency

        self._nodes: list[OpNode] = []     # every node created while this pipeline was current
        self._sinks: list[OpNode] = []
        self._outputs: list[DataNode] | None = None
        self._graph_built = False
        self._built = False
        self._ops: list = []
        self._executor: Executor | None = None
        self._gpu = None  # DeviceContext of GPU pipelines
        self._pool = None
        self._py_pool = None               # parallel external_source workers (penstock._parallel)
        self._owed = 0                     # iterations to schedule once blocking sources get data
        self._run_lock = threading.RLock()  # one caller of the run methods at a time (one_caller)
        self._calling_sources = False      # while iter_setup and the sources run
        self._pending: collections.deque[Iteration] = collections.deque()
        self._first_iter = True
        self._scheduled_ahead = False      # run() scheduled the next run's iteration (_runs_ahead)
        self._paired_depth = False         # the prefetch depth doubled for iterations in pairs (_pairs_now)
        self._last_iter = False
        self._epoch = 0
        self._iter_in_epoch = 0
        self._iteration = 0
        self._api_type: PipelineAPIType | None = None
        self._api_check = True
        self._process_allowed = True  # the iterations may run in a process of their own (_process)
        self._shared_unreleased = False
        self._deprecated_batch_size_warned = False

    # ---- properties ------------------------------------------------------------------------
    @staticmethod
    def _check_output_spec(value: Any, name: str) -> Any:
        if value is None:
            return None
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if name == "output_dtype" and v is not None:
                if not isinstance(v, DALIDataType):
                    raise TypeError(f"output_dtype entries must be DALIDataType or None, got {v!r}")
                if v == DALIDataType.NO_TYPE:
                    raise ValueError("output_dtype cannot be NO_TYPE; use None for 'any type'")
            if name == "output_ndim" and v is not None and (not isinstance(v, int) or v < 0):
                raise ValueError(f"output_ndim entries must be non-negative ints or None, got {v!r}")
        return value

    @property
    def max_batch_size(self) -> int | None:
        return self._max_batch_size

    @property
    def batch_size(self) -> int | None:
        if not self._deprecated_batch_size_warned:
            warnings.warn("Pipeline.batch_size is deprecated; use max_batch_size", DeprecationWarning, 2)
            self._deprecated_batch_size_warned = True
        return self._max_batch_size

    num_threads = property(lambda self: self._num_threads)
    device_id = property(lambda self: self._device_id)
    seed = property(lambda self: self._seed)
    exec_pipelined = property(lambda self: self._exec_pipelined)
    exec_async = property(lambda self: self._exec_async)
    exec_dynamic = property(lambda self: self._exec_dynamic)
    exec_separated = property(lambda self: self._exec_separated)
    stream_policy = property(lambda self: self._stream_policy)
    concurrency = property(lambda self: self._concurrency)
    set_affinity = property(lambda self: self._set_affinity)
    max_streams = property(lambda self: -1)
    default_cuda_stream_priority = property(lambda self: 0)
    prefetch_queue_depth = property(lambda self: self._prefetch_queue_depth)
    cpu_queue_size = property(lambda self: self._cpu_queue_size)
    gpu_queue_size = property(lambda self: self._gpu_queue_size)
    enable_memory_stats = property(lambda self: self._enable_memory_stats)
    # beyond DALI: images whose headers claim more pixels fail to decode (decompression bombs)
    max_image_pixels = property(lambda self: self._max_image_pixels)
    # beyond DALI: seconds a Python source may take for one batch before run() fails (None: no limit)
    source_timeout = property(lambda self: self._source_timeout)
    py_num_workers = property(lambda self: self._py_num_workers)
    py_start_method = property(lambda self: self._py_start_method)
    enable_checkpointing = property(lambda self: self._enable_checkpointing)
    is_restored_from_checkpoint = property(lambda self: self._restored)

    @property
    def num_outputs(self) -> int:
        self.build()
        return len(self._outputs or [])

    # ---- current pipeline ------------------------------------------------------------------
    @staticmethod
    def current() -> "Pipeline | None":
        return _current.current_pipeline()

    @staticmethod
    def push_current(pipe: "Pipeline") -> None:
        _current.push(pipe)

    @staticmethod
    def pop_current() -> "Pipeline | None":
        return _current.pop()

    def __enter__(self) -> "Pipeline":
        _current.push(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.pop()

    def _register_node(self, node: OpNode) -> None:
        self._nodes.append(node)

    # ---- graph definition ------------------------------------------------------------------
    def define_graph(self) -> Any:
        """Override in a subclass to return the pipeline's outputs."""
        raise NotImplementedError("this pipeline has no graph: pass outputs to set_outputs(), "
                                  "use @pipeline_def, or override define_graph()")

    def set_outputs(self, *outputs: Any) -> None:
        self._outputs = self._normalize_outputs(outputs)
        self._graph_built = False

    def add_sink(self, node: DataNode) -> None:
        self._sinks.append(node.source)

    def _normalize_outputs(self, outputs: Sequence[Any]) -> list[DataNode]:
        # the refusals in DALI's words, which code written for it matches
        result = []
        for i, o in enumerate(outputs):
            if isinstance(o, DataNode):
                result.append(o)
            elif _holds_a_data_node(o):
                raise TypeError(f"Illegal pipeline output type. The output {i} contains a nested `DataNode`. "
                                "Missing list/tuple expansion (*) is the likely cause.")
            elif isinstance(o, (int, float, bool, list, tuple, np.ndarray, np.generic)):
                with self:
                    result.append(constant_node(o, device="cpu"))
            elif isinstance(o, ScalarConstant):  # a 0-D constant of its own type
                with self:
                    result.append(constant_node(o.value, dtype=o.dtype, device="cpu"))
            else:
                raise TypeError(f"Illegal output type. The output {i} is a `{type(o)}`. Allowed types are "
                                "``DataNode`` and types convertible to `types.Constant` (numerical constants, 1D "
                                "lists/tuple of numbers and ND arrays).")
        return result

    def _define(self) -> None:
        if self._outputs:  # none set (or an empty set, as DALI takes it): the graph is define_graph()'s
            return
        with self:
            outs = self.define_graph()
        if outs is None:
            outs = ()
        elif isinstance(outs, DataNode):
            outs = (outs,)
        elif isinstance(outs, list):
            outs = tuple(outs)  # define_graph traditionally returns a list
        self._outputs = self._normalize_outputs(outs)

    # ---- readers ---------------------------------------------------------------------------
    def reader_meta(self, name: str | None = None) -> dict:
        self.build()
        if name is None:
            return {n: op.reader_meta() for n, op in self._readers.items()}
        if name not in self._readers:
            raise RuntimeError(f"reader_meta: the pipeline has no reader named '{name}' "
                               f"(readers: {sorted(self._readers)})")
        return self._readers[name].reader_meta()

    def epoch_size(self, name: str | None = None) -> Any:
        if name is None:
            return {n: m["epoch_size_padded"] for n, m in self.reader_meta().items()}
        return self.reader_meta(name)["epoch_size_padded"]

    # ---- introspection ---------------------------------------------------------------------
    @property
    def skipped_samples(self) -> list[dict]:
        """Samples dropped by readers/decoders with on_error="skip" (beyond DALI), oldest first:
        dicts with ``operator``, ``source`` (the sample's source_info: for files the path as
        listed), ``reason`` and ``iteration``; each operator's latest 10,000 (``skipped_count``
        counts them all)."""
        found = [s for op in getattr(self, "_ops", ()) for s in getattr(op, "skipped", ())]
        return sorted(found, key=lambda s: s["iteration"])

    @property
    def skipped_count(self) -> int:
        """How many samples readers/decoders with on_error="skip" dropped, including those whose
        records ``skipped_samples`` no longer keeps."""
        return sum(getattr(op, "skipped_count", 0) for op in getattr(self, "_ops", ()))

    def operator_names(self) -> dict[str, str]:
        """Each built operator's name -> the name statistics show: the given name, or for an
        unnamed operator its function and its place among those of the pipeline
        (``decoders.image#1``, not ``__Image_10``)."""
        self.build()
        names, seen = {}, {}
        for op in self._ops:
            if op.node.explicit_name:
                names[op.name] = op.name
            else:
                function = op.schema.fn_name.lstrip("_")  # internal operators: "_arithmetic"
                seen[function] = seen.get(function, 0) + 1
                names[op.name] = f"{function}#{seen[function]}"
        return names

    def executor_statistics(self) -> dict:
        """Per operator (``operator_names``): runs, total seconds, mean milliseconds and last output bytes; with
        ``enable_memory_stats`` also DALI's per-output buffer statistics (bytes of the samples and
        of the buffers holding them, last iteration and peak)."""
        if self._executor is None:
            return {}
        stats = {}
        readable = self.operator_names()
        for name, s in self._executor.stats.items():
            stats[readable[name]] = {"runs": s.runs, "total_seconds": s.seconds,
                           "mean_ms": 1e3 * s.seconds / s.runs if s.runs else 0.0, "output_bytes": s.output_bytes}
            if self._enable_memory_stats:
                stats[readable[name]].update(real_memory_size=list(s.real), reserved_memory_size=list(s.reserved),
                                   max_real_memory_size=list(s.max_real),
                                   max_reserved_memory_size=list(s.max_reserved))
        return stats

    def output_dtype(self) -> list:
        """The data type expected at each output: the constructor's ``output_dtype`` (one value is
        every output's), None where none is declared; no build needed."""
        return self._declared_per_output(self._output_dtype)

    def output_ndim(self) -> list:
        """The number of dimensions expected at each output: the constructor's ``output_ndim``, as
        ``output_dtype()``."""
        return self._declared_per_output(self._output_ndim)

    def _declared_per_output(self, spec: Any) -> list:
        self._define()
        n = len(self._outputs or [])
        return list(spec) if isinstance(spec, (list, tuple)) else [spec] * n

    def output_stream(self) -> Any:
        """The CUDA stream (a CuPy ``Stream``) the pipeline's GPU outputs are produced on; None for a
        pipeline without GPU operators. Consumers on another stream order their work after it
        (``stream.wait_event``), or pass their stream to ``outputs(cuda_stream=...)``."""
        self.build()
        return None if self._gpu is None else self._gpu.stream

    def external_source_shm_statistics(self) -> dict:
        """Shared-memory regions of the parallel external sources (each holds one whole batch):
        bytes per region, and per sample of the batch it last carried."""
        if self._py_pool is None:
            return {"capacities": [], "per_sample_capacities": []}
        return self._py_pool.shm_statistics()

    def dump_stacks(self, file: Any = None) -> str:
        """Where a pipeline that does not return is (beyond DALI): every thread's stack in this
        process, as faulthandler prints them, then what each worker process of the parallel
        external sources runs (source, iteration, sample) and its threads' stacks. Call it from
        any thread while ``run()`` waits: a watchdog, or a signal handler
        (``signal.signal(signal.SIGUSR1, lambda *_: pipe.dump_stacks())``). Written to ``file``
        (``sys.stderr`` by default) and returned."""
        text = f"penstock pipeline, process {os.getpid()}:\n{thread_stacks()}"
        if self._py_pool is not None and self._py_pool.alive:
            text += "\n" + self._py_pool.stacks()
        file = sys.stderr if file is None else file
        file.write(text)
        file.flush()
        return text

    def save_graph_to_dot_file(self, filename: str, *, show_tensors: bool = False, show_ids: Any = None,
                               use_colors: bool = False) -> None:
        from ._serialize import to_dot
        self.build()
        with open(filename, "w") as f:
            f.write(to_dot(self, show_tensors, bool(show_ids), use_colors))

    def serialize(self, define_graph: Callable | None = None, filename: str | None = None) -> bytes:
        from ._serialize import serialize
        if define_graph is not None:
            with self:
                outs = define_graph()
            self.set_outputs(*(outs if isinstance(outs, (tuple, list)) else (outs,)))
        self._define()
        data = serialize(self)
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(data)
        return data

    @classmethod
    def deserialize(cls, serialized_pipeline: bytes | None = None, filename: str | None = None,
                    **kwargs: Any) -> "Pipeline":
        from ._serialize import deserialize
        if (serialized_pipeline is None) == (filename is None):
            raise ValueError("deserialize needs exactly one of serialized_pipeline and filename")
        if filename is not None:
            with open(filename, "rb") as f:
                serialized_pipeline = f.read()
        pipe = deserialize(serialized_pipeline, cls, kwargs)
        pipe.build()
        return pipe

    def deserialize_and_build(self, serialized_pipeline: bytes) -> None:
        from ._serialize import load_graph_into
        load_graph_into(self, serialized_pipeline)
        self.build()

    def checkpoint(self, filename: str | None = None) -> bytes:
        """The pipeline's state after the last iteration consumed (``enable_checkpointing=True``);
        ``Pipeline(..., checkpoint=...)`` resumes from it with the very batches that would have come
        next. Written to ``filename`` too when given."""
        return self._checkpoint_with(filename)

    @one_caller
    def _checkpoint_with(self, filename: str | None = None, iterator_data: str = "", unconsumed: int = 0) -> bytes:
        data = _checkpoint.capture(self, iterator_data, unconsumed)
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(data)
        return data

    @one_caller
    def _restore_in_place(self, checkpoint: Any) -> None:
        """Rewinds (or advances) a built pipeline to a checkpoint; prefetched work is dropped."""
        _checkpoint.rewind(self, checkpoint)

    # ---- lifetime --------------------------------------------------------------------------
    def _shutdown(self) -> None:
        if self._py_pool is not None:
            self._py_pool.close()
        if self._executor is not None:
            # reads its threads wait for would keep their joins waiting: for 10 s where the garbage
            # collector finalized the pipeline on the object store's thread that alone answers them
            for op in self._ops:
                op.stop_reading()
            _object_store.stop_waiting(self._executor.threads)
            self._executor.shutdown()
            self._executor = None
        for op in self._ops:  # no stage runs them any more
            op.close()
        if self._gpu is not None:
            self._gpu.close()

    def __del__(self) -> None:
        try:
            self._shutdown()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass


def _holds_a_data_node(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, DataNode) or _holds_a_data_node(v) for v in value)
