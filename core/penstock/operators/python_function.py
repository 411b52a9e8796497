"""Python operators: ``python_function`` and ``dl_tensor_python_function``.

The function runs per sample (default for ``python_function``) or once per batch
(``batch_processing=True``), on numpy arrays (CPU) or CuPy arrays (GPU), or on DLPack capsules.
The PyTorch plugin's ``torch_python_function`` reuses the kernels here with torch tensors.

DALI's rules, kept: the operators are created only while a pipeline is current, are never
pruned, make the pipeline unserializable, take no multiple input sets, and an exception raised by
the function reaches ``run()`` with its message and the function's traceback.

Where penstock does better (DALI code runs unchanged):

* With the default executor (``exec_async`` and ``exec_pipelined``) the Python operators run on
  their own worker thread, not on the thread that calls ``run()`` and not in line with the native
  kernels: the function of one iteration overlaps the (GIL-free) decoding and augmentation of
  the next, and the training loop's thread stays free. Calls stay serial and in sample order, and
  as in DALI only one Python operator of the process runs at a time, so stateful functions that
  are not thread-safe behave as in DALI.
* CPU inputs are zero-copy read-only numpy views: modifying an input in place (which DALI
  forbids) raises instead of silently corrupting a batch another operator reads.
* On the GPU the function's CuPy/torch work is queued on the pipeline's stream and ordered with
  the rest of the pipeline by the stream alone; the host never waits for it (DALI synchronizes
  after a torch function). ``dl_tensor_python_function`` also runs with the pipeline's stream
  current, so even a function that forgets to synchronize its own work stays correct.
"""
from __future__ import annotations

import contextlib
import threading
import traceback
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .._generate import OpsBase
from .._graph import make_op
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, OpSchema, describe, register, register_kernel
from ..data_node import DataNode
from .. import _current
from ..tensors import TensorCPU, TensorListCPU
from ..tensors._base import packed_offsets
from ..tensors._host import as_host_array
from ..types import CUDAStream, ScalarConstant, to_dali_type
from .._batch import empty_batch
from .constant import constant_node

MAX_INPUTS = 256
_running = threading.local()  # the stream of the GPU Python operator running on this thread
# One Python operator runs at a time in the process, whatever its pipeline, as in DALI: functions
# need not be thread-safe (two pipelines may share one). Reentrant: a function may run a
# synchronous pipeline that has Python operators.
_CALL_LOCK = threading.RLock()


def _args(batch_default: bool, extra: Sequence[Arg] = ()) -> list[Arg]:
    return [Arg("function", ArgType.CALLABLE, doc="the Python callable (per sample: one array per input; "
                                                  "per batch: one list of arrays per input)"),
            Arg("num_outputs", ArgType.INT, 1, "number of outputs the function returns (0 allowed)"),
            Arg("batch_processing", ArgType.BOOL, batch_default,
                "call the function once per batch with a list of samples per input"),
            Arg("output_layouts", ArgType.ANY, optional=True,
                doc="layout string, or a list with one per output (the first outputs get them)"),
            *extra]


def make_schema(name: str, doc: str, batch_default: bool, extra: Sequence[Arg] = (),
                internal: bool = False) -> OpSchema:
    """The declaration every Python operator shares (the PyTorch plugin declares its own with it)."""
    return OpSchema(name, doc, args=_args(batch_default, extra), min_inputs=0, max_inputs=MAX_INPUTS,
                    num_outputs=lambda a: a["num_outputs"], devices=("cpu", "gpu"), no_prune=True,
                    internal=internal)


PYTHON_FUNCTION = make_schema(
    "PythonFunction", "Runs a Python function on numpy arrays (CPU) or CuPy arrays (GPU).", False)
DL_TENSOR_PYTHON_FUNCTION = make_schema(
    "DLTensorPythonFunction", "Runs a Python function on DLPack capsules (CPU or GPU).", True,
    [Arg("synchronize_stream", ArgType.BOOL, True,
         "GPU: wait until the pipeline's earlier GPU work is complete before calling the function")])


# ---- graph definition ----------------------------------------------------------------------

def _check_output_layouts(value: Any, label: str, n_out: int) -> None:
    items = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
        raise TypeError(f"{label}: output_layouts must be a layout string or a list of them, got {value!r}")
    if not isinstance(value, str) and len(items) > n_out:
        raise RuntimeError(f"{label}: The length of the ``output_layouts`` (={len(items)}) is greater than the "
                           f"number of outputs (={n_out}).")


def _as_node(value: Any, label: str) -> DataNode:
    """An input: a DataNode, or a constant (``types.Constant``, a number, a list, an array) that
    becomes one, as DALI takes them."""
    if isinstance(value, DataNode):
        return value
    if isinstance(value, ScalarConstant):
        return constant_node(value.value, dtype=value.dtype, device="cpu")
    nested = isinstance(value, (list, tuple)) and any(isinstance(v, DataNode) for v in value)
    if isinstance(value, (bool, int, float, list, tuple, np.ndarray, np.generic)) and not nested:
        return constant_node(value, device="cpu")
    raise TypeError(f"{label}: Expected inputs of type `DataNode`. Received input of type "
                    f"'{type(value).__name__}'. Python Operators do not support Multiple Input Sets.")


def define(schema: OpSchema, inputs: Sequence[Any], kwargs: dict, default_device: str | None = None) -> Any:
    """Adds a Python operator to the current pipeline (the one path ``fn`` and ``ops`` share)."""
    label = schema.fn_name
    if _current.current_pipeline() is None:
        raise RuntimeError(f"Current Pipeline not set! {label}: a Python operator can only be used while a "
                           "pipeline is current (inside a @pipeline_def function, define_graph(), or a "
                           "`with pipe:` block)")
    inputs = [_as_node(x, label) for x in inputs]
    function = kwargs.get("function")
    if not callable(function):
        raise TypeError(f"{label}: argument 'function' must be a callable, got {type(function).__name__}")
    n_out = kwargs.get("num_outputs", 1)
    if not isinstance(n_out, (int, np.integer)) or isinstance(n_out, bool) or n_out < 0:
        raise ValueError(f"{label}: num_outputs must be a non-negative int, got {n_out!r}")
    _check_output_layouts(kwargs.get("output_layouts"), label, n_out)
    outs = make_op(schema, inputs, kwargs, default_device=default_device, py_object=function)
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def make_fn(schema: OpSchema) -> Callable:
    def python_op(*inputs: Any, **kwargs: Any) -> Any:
        return define(schema, inputs, kwargs)
    python_op.__name__ = python_op.__qualname__ = schema.fn_name.rpartition(".")[2]
    python_op.__doc__ = describe(schema) + "\n\n" + __doc__
    return python_op


class PythonOpsBase(OpsBase):
    """``ops.PythonFunction(function, num_outputs=1, device="cpu", ...)``; called inside a pipeline."""

    def __init__(self, function: Callable, num_outputs: int = 1, device: str = "cpu", **kwargs: Any):
        super().__init__(device=device, function=function, num_outputs=num_outputs, **kwargs)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        both = set(kwargs) & set(self._init_kwargs)
        if both:
            raise ValueError(f"{self.schema.fn_name}: argument(s) {sorted(both)} given both at "
                             "construction and at call")
        return define(self.schema, inputs, {**self._init_kwargs, **kwargs}, default_device=self._device)

    @staticmethod
    def current_stream() -> CUDAStream:
        """The pipeline's CUDA stream, while a GPU Python operator's function runs."""
        stream = getattr(_running, "stream", None)
        if stream is None:
            raise RuntimeError("current_stream() is only available inside the function of a GPU "
                               "Python operator")
        return CUDAStream(stream.ptr)


for _s in (PYTHON_FUNCTION, DL_TENSOR_PYTHON_FUNCTION):
    _s.fn_impl = make_fn(_s)
    _s.ops_impl = PythonOpsBase


# ---- what the function sees ------------------------------------------------------------------

def _identity(x: Any) -> Any:
    return x


class Flavor:
    """How samples are presented to the function and how its results are taken back."""

    host_in = device_in = staticmethod(_identity)  # arrays as they are

    def host_out(self, obj: Any) -> np.ndarray:
        return obj._array if isinstance(obj, TensorCPU) else np.asarray(obj)

    def device_out(self, obj: Any) -> Any:
        import cupy
        return cupy.asarray(obj)

    def readonly_inputs(self) -> bool:
        return True

    def gpu_context(self, op: "PythonFunctionCPU", stream: Any) -> Any:
        """Context the GPU function runs in: the pipeline's stream made current."""
        return stream


class DLPackFlavor(Flavor):
    def host_in(self, arr: np.ndarray) -> Any:
        return arr.__dlpack__()

    def host_out(self, obj: Any) -> np.ndarray:
        return as_host_array(obj)

    def device_in(self, arr: Any) -> Any:
        return arr.toDlpack()

    def device_out(self, obj: Any) -> Any:
        import cupy
        if type(obj).__name__ == "PyCapsule":
            return cupy.fromDlpack(obj)  # a bare capsule (from_dlpack wants the protocol)
        return cupy.from_dlpack(obj)

    def readonly_inputs(self) -> bool:
        return False  # DLPack cannot export read-only memory

    def gpu_context(self, op: "PythonFunctionCPU", stream: Any) -> Any:
        if op.args["synchronize_stream"]:
            stream.synchronize()  # documented: earlier GPU work is complete when the function starts
        return stream


def _layouts(value: Any, k: int) -> list[str]:
    """A layout per output: one string is every output's (as in DALI), a list the first ones'."""
    items = [value] * k if isinstance(value, str) else [] if value is None else list(value)
    return (items + [""] * k)[:k]


def _function_error(exc: BaseException, sample: int | None) -> RuntimeError:
    """The function's exception as the executor reports it: message plus the function's frames."""
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # drop our frame
    text = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()
    msg = f"the Python function raised an exception:\n{text}"
    return RuntimeError(msg) if sample is None else SampleError(sample, msg)


# ---- kernels -----------------------------------------------------------------------------------

@register(PYTHON_FUNCTION)
class PythonFunctionCPU(Operator):
    flavor: Flavor = Flavor()
    runs_python = True  # the executor gives operators holding the GIL their own worker

    def __init__(self, node: Any, pipeline: Any):
        super().__init__(node, pipeline)
        self._pipeline = weakref.ref(pipeline)  # made current while the function runs, like DALI

    def setup(self) -> None:
        a = self.args
        self.function = a["function"]
        self.k = a["num_outputs"]
        self.batch_processing = a["batch_processing"]
        self.layouts = _layouts(a["output_layouts"], self.k)

    # -- memory side (host here, device in the GPU kernel)
    def _views(self, tl: TensorListCPU) -> list:
        buf = tl._buf
        if self.flavor.readonly_inputs():
            buf = buf.view()
            buf.flags.writeable = False
        elif not buf.flags.writeable:
            buf = buf.copy()  # DLPack and torch cannot take read-only memory (a read-only source's)
        return _sample_views(buf, tl, self.flavor.host_in)

    def _take(self, obj: Any) -> np.ndarray:
        return self.flavor.host_out(obj)

    def _array_type(self) -> type:
        return np.ndarray

    def _pack(self, arrays: list, layout: str) -> TensorListCPU:
        n = len(arrays)
        shape_list = [a.shape for a in arrays]
        shapes = np.array(shape_list, np.int64).reshape(n, arrays[0].ndim if n else 0)
        out = empty_batch(shapes, arrays[0].dtype if n else np.uint8, layout)
        if n and shape_list.count(shape_list[0]) == n:  # uniform: one copy for the whole batch
            np.stack(arrays, out=out._buf.reshape((n,) + shape_list[0]))
            return out
        for a, off in zip(arrays, out._offsets.tolist()):
            np.copyto(out._buf[off:off + a.size].reshape(a.shape), a)
        return out

    def _dense(self, array: Any, layout: str) -> TensorListCPU:
        # copied, never wrapped: the function may reuse the array it returned in its next call
        n = array.shape[0]
        out = empty_batch(np.tile(np.array(array.shape[1:], np.int64), (n, 1)).reshape(n, array.ndim - 1),
                          array.dtype, layout)
        np.copyto(out._buf.reshape(array.shape), array)
        return out

    def _context(self, ws: Any) -> Any:
        return contextlib.nullcontext()

    # -- running
    def run(self, ws: Any) -> list:
        inputs = [self._views(tl) for tl in ws.inputs]
        n = len(inputs[0]) if inputs else ws.batch_size
        pipe = self._pipeline()
        if pipe is not None:
            _current.push(pipe)
        try:
            with _CALL_LOCK, self._context(ws):
                if self.batch_processing:
                    batches = self._split(self._call(inputs, None), None)
                    outs = [self._batch_output(b, o, n) for o, b in enumerate(batches)]
                else:
                    outs = self._per_sample(inputs, n)
        finally:
            if pipe is not None:
                _current.pop()
        return outs

    def _per_sample(self, inputs: list, n: int) -> list:
        call, results, j = self.function, [], 0
        try:  # the hot loop: nothing but the calls
            for j, args in enumerate(zip(*inputs) if inputs else [()] * n):
                results.append(call(*args))
        except Exception as exc:  # noqa: BLE001 - reported at run() with the function's traceback
            raise _function_error(exc, j) from exc
        if self.k == 1:
            for j, r in enumerate(results):
                if r is None or isinstance(r, tuple):
                    self._split(r, j)  # raises the matching error
            return [self._gather(results, 0)]
        for j, r in enumerate(results):
            if not isinstance(r, tuple) or len(r) != self.k:
                self._split(r, j)
        return [self._gather(list(column), o) for o, column in enumerate(zip(*results))] if self.k else []

    def _call(self, args: list, sample: int | None) -> Any:
        try:
            return self.function(*args)
        except Exception as exc:  # noqa: BLE001 - reported at run() with the function's traceback
            raise _function_error(exc, sample) from exc

    def _split(self, result: Any, sample: int | None) -> Sequence[Any]:
        """The function's return value as one entry per output, checked against num_outputs."""
        where = f" for sample {sample}" if sample is not None else ""
        if self.k == 0:
            if result is not None:
                raise RuntimeError(f"{self.label}: num_outputs=0 but the function returned "
                                   f"{type(result).__name__}{where}")
            return ()
        if result is None:
            raise RuntimeError(f"{self.label}: Python function returned 0 outputs and {self.k} were expected "
                               f"(None{where})")
        if self.k == 1:
            if isinstance(result, tuple):
                raise TypeError(f"{self.label}: the function returned a tuple of {len(result)}{where} "
                                "but num_outputs=1")
            return (result,)
        if not isinstance(result, tuple):
            raise TypeError(f"{self.label}: The output from a multi-output Pythonfunction operator must be a "
                            f"tuple, got: {type(result)}{where} (num_outputs={self.k})")
        if len(result) != self.k:
            raise ValueError(f"{self.label}: Unexpected number of outputs from Pythonfunction operator - got "
                             f"{len(result)}, expected {self.k}{where}")
        return result

    def _batch_output(self, batch: Any, o: int, n: int) -> Any:
        if isinstance(batch, (list, tuple)):
            if len(batch) != n:
                raise RuntimeError(f"{self.label}: Function called by DLTensorPythonFunction returned tensor list of "
                                   f"wrong size at idx {o}. Returned list is of a size {len(batch)} and should be of "
                                   f"size {n}")
            return self._gather(list(batch), o)
        arr = self._take(batch)  # one array whose outer dimension is the batch
        if arr.ndim == 0 or arr.shape[0] != n:
            raise RuntimeError(f"{self.label}: output {o} is one array of shape {tuple(arr.shape)}; a "
                               f"batch of {n} samples needs the outer dimension {n} (or return a list)")
        self._check_dtype(arr.dtype, o)
        return self._with_layout(self._dense(arr, ""), o)

    def _gather(self, objs: list, o: int) -> Any:
        take, native = self._take, self._array_type()
        arrays = [x if type(x) is native else take(x) for x in objs]
        if arrays:
            dtype, ndim = arrays[0].dtype, arrays[0].ndim
            self._check_dtype(dtype, o)
            kinds = {(a.dtype, a.ndim) for a in arrays}
            for i, a in enumerate(arrays if len(kinds) > 1 else ()):
                if a.dtype != dtype or a.ndim != ndim:
                    raise RuntimeError(f"{self.label}: output {o}, sample {i} is {a.dtype} with {a.ndim} "
                                       f"dimensions but sample 0 is {dtype} with {ndim}; all samples of "
                                       "an output must share type and number of dimensions")
        return self._with_layout(self._pack(arrays, ""), o, objs)

    def _check_dtype(self, dtype: Any, o: int) -> None:
        try:
            to_dali_type(dtype)
        except Exception:  # noqa: BLE001
            raise TypeError(f"{self.label}: output {o} has type {dtype}, which a pipeline cannot hold") from None

    def _with_layout(self, tl: Any, o: int, objs: Sequence[Any] = ()) -> Any:
        layout = self.layouts[o]
        if not layout and objs and isinstance(objs[0], TensorCPU):
            layout = objs[0]._layout  # a returned penstock tensor carries its layout
        if layout:
            if len(layout) != tl.ndim():
                raise RuntimeError(f"{self.label}: output_layouts gives '{layout}' for output {o}, "
                                   f"whose samples have {tl.ndim()} dimensions")
            tl._layout = layout
        return tl


def _sample_views(buf: Any, tl: Any, conv: Callable) -> list:
    """Per-sample views of a batch's buffer (numpy or CuPy), each passed through ``conv``."""
    n = len(tl)
    packed = (tl._is_packed_cached() if isinstance(tl, TensorListCPU)
              else np.array_equal(tl._offsets, packed_offsets(tl._shapes)))
    if n and packed and tl.is_dense_tensor():
        shape = tuple(tl._shapes[0].tolist())
        views = list(buf[:n * int(np.prod(shape, dtype=np.int64))].reshape((n,) + shape))
    else:
        views = []
        for off, shape in zip(tl._offsets.tolist(), tl._shapes.tolist()):
            vol = 1
            for e in shape:
                vol *= e
            views.append(buf[off:off + vol].reshape(shape))
    return views if conv is _identity else [conv(v) for v in views]


@register(DL_TENSOR_PYTHON_FUNCTION)
class DLTensorPythonFunctionCPU(PythonFunctionCPU):
    flavor = DLPackFlavor()


class GPUKernelMixin:
    """Device memory side of a Python operator kernel (CuPy arrays on the pipeline's stream)."""

    def _views(self, tl: Any) -> list:
        return _sample_views(tl._buf, tl, self.flavor.device_in)

    def _take(self, obj: Any) -> Any:
        return self.flavor.device_out(obj)

    def _array_type(self) -> type:
        import cupy
        return cupy.ndarray

    def _pack(self, arrays: list, layout: str) -> Any:
        import cupy
        from ..tensors import TensorListGPU
        if arrays and all(a.shape == arrays[0].shape for a in arrays):
            return TensorListGPU(cupy.stack(arrays), layout)  # one copy; also holds 0-d samples
        return TensorListGPU(arrays, layout)

    def _dense(self, array: Any, layout: str) -> Any:
        from ..tensors import TensorListGPU
        return TensorListGPU(array.copy(), layout)  # copied: the function may reuse its array

    def _context(self, ws: Any) -> Any:
        return _StreamScope(self, ws.stream)


class _StreamScope:
    """Makes the pipeline's stream current (and known to current_stream()) for the function."""

    def __init__(self, op: Any, stream: Any):
        self.inner = op.flavor.gpu_context(op, stream)
        self.stream = stream

    def __enter__(self) -> None:
        self.prev = getattr(_running, "stream", None)
        _running.stream = self.stream
        self.inner.__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            self.inner.__exit__(*exc)
        finally:
            _running.stream = self.prev


@register_kernel(PYTHON_FUNCTION.name, "gpu")
class PythonFunctionGPU(GPUKernelMixin, PythonFunctionCPU):
    pass


@register_kernel(DL_TENSOR_PYTHON_FUNCTION.name, "gpu")
class DLTensorPythonFunctionGPU(GPUKernelMixin, DLTensorPythonFunctionCPU):
    pass
