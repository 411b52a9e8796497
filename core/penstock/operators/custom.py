"""Custom operators: declared by a plugin library built against penstock's C ABI
(``csrc/include/penstock_plugin.h``, loaded by ``plugin_manager.load_library``), or in Python with a
CPU kernel in C++ and a GPU kernel in CUDA, both compiled at first use (``penstock.custom.operator``).

Either way the operator is declared in the registry like a built-in one (so ``fn``, ``ops``, the
dynamic mode, argument checking, the stubs and the docs have it) and its kernels run a batch per
call: the CPU entry point is one native call without the GIL (ctypes releases it), given the
pipeline's thread pool; the GPU kernel is one launch on the pipeline's stream with every sample's
descriptor uploaded in one copy.
"""
from __future__ import annotations

import ast
import ctypes
import dataclasses
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Any, Callable, Sequence

import numpy as np

from .. import _engine
from .._operator import Operator, SampleError
from .._registry import Arg, ArgType, OpSchema, convert_arg, register
from ..types import DALIDataType, to_dali_type, to_numpy_type

ABI_VERSION = 1
MAX_DIMS = 8
ERROR_BYTES = 4096

# penstock_arg_type codes <-> argument types
ARG_TYPES = {0: ArgType.INT, 1: ArgType.FLOAT, 2: ArgType.BOOL, 3: ArgType.STR, 4: ArgType.INT_LIST,
             5: ArgType.FLOAT_LIST}
ARG_CODES = {t: code for code, t in ARG_TYPES.items()}
_FLOATS = (ArgType.FLOAT, ArgType.FLOAT_LIST)
_LISTS = (ArgType.INT_LIST, ArgType.FLOAT_LIST)


def include_dir() -> str:
    """The folder of penstock_plugin.h (and the GPU kernels' penstock_plugin.cuh)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in (os.path.join(here, "include"),  # wheels carry the headers as package data
                   os.path.join(here, os.pardir, os.pardir, "csrc", "include")):  # editable installs
        if os.path.exists(os.path.join(folder, "penstock_plugin.h")):
            return os.path.normpath(folder)
    raise RuntimeError("penstock's plugin headers (csrc/include) are missing from this installation")


# ---- the C ABI's structures (penstock_plugin.h) ---------------------------------------------

class _Batch(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("num_samples", ctypes.c_int64), ("shapes", ctypes.POINTER(ctypes.c_int64)),
                ("offsets", ctypes.POINTER(ctypes.c_int64)), ("layout", ctypes.c_char_p)]


class _Arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("count", ctypes.c_int64),
                ("ints", ctypes.POINTER(ctypes.c_int64)), ("floats", ctypes.POINTER(ctypes.c_double)),
                ("str", ctypes.c_char_p)]


class _Context(ctypes.Structure):
    _fields_ = [("num_samples", ctypes.c_int64), ("num_inputs", ctypes.c_int), ("inputs", ctypes.POINTER(_Batch)),
                ("num_args", ctypes.c_int), ("args", ctypes.POINTER(_Arg)), ("parallel_for", ctypes.c_void_p),
                ("pool", ctypes.c_void_p), ("error", ctypes.c_void_p), ("error_size", ctypes.c_int64),
                ("error_sample", ctypes.c_int64)]


class _ArgDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("default_value", ctypes.c_char_p),
                ("per_sample", ctypes.c_int), ("doc", ctypes.c_char_p)]


class _OperatorDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("doc", ctypes.c_char_p), ("min_inputs", ctypes.c_int),
                ("max_inputs", ctypes.c_int), ("num_outputs", ctypes.c_int), ("num_args", ctypes.c_int),
                ("args", ctypes.POINTER(_ArgDecl)), ("setup", ctypes.c_void_p), ("run_cpu", ctypes.c_void_p)]


# An entry point (setup or run); CFUNCTYPE calls release the GIL.
_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Context), ctypes.POINTER(_Batch))


def _text(value: bytes | None) -> str:
    return value.decode() if value else ""


# ---- declarations ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Output:
    """How an operator declared in Python plans an output (the C ABI's ``setup``, in Python): its type
    (None: input 0's), per-sample shapes (None: input 0's; or ``shape(input_shapes, args)`` with
    ``input_shapes`` a list of [N, ndim] arrays and ``args`` each argument's per-sample values,
    returning [N, ndim]) and layout (None: input 0's when the dimensions agree)."""
    dtype: DALIDataType | None = None
    shape: Callable[[list, dict], Any] | None = None
    layout: str | None = None


@dataclasses.dataclass
class Kernels:
    """An operator's kernels: a CPU entry point (the C ABI's run, by address) and its planning (a C
    setup by address, or Python ``outputs``), and a GPU kernel's CUDA source; ``keep`` holds what
    the addresses live in (the loaded library)."""
    outputs: Sequence[Output] = ()
    input_types: Sequence[tuple[DALIDataType, ...] | None] = ()  # per input: the types it takes (None: any)
    setup: int | None = None
    run_cpu: int | Callable[[], int] | None = None  # a callable compiles at first use
    gpu_source: str | None = None
    gpu_entry: str = "run"
    gpu_threads: int = 256
    gpu_blocks: int | None = None
    keep: Any = None


def declare(schema: OpSchema, kernels: Kernels) -> None:
    """Registers ``schema`` with a kernel per declared device running ``kernels``."""
    body = {"kernels": kernels, "__module__": __name__, "__qualname__": f"Custom[{schema.name}]"}
    register(schema, schema.devices)(type(f"Custom[{schema.name}]", (CustomOperator,), body))


def arg_from_c(decl: _ArgDecl, op: str) -> Arg:
    """A registry argument from a plugin's declaration (its default, a Python literal, checked as
    any argument value is)."""
    name = _text(decl.name)
    if decl.type not in ARG_TYPES:
        raise RuntimeError(f"{op}: argument '{name}' has type code {decl.type}, which is not a penstock_arg_type")
    arg = Arg(name, ARG_TYPES[decl.type], doc=_text(decl.doc), tensor=bool(decl.per_sample) and
              ARG_TYPES[decl.type] is not ArgType.STR)
    if decl.default_value is None:
        return arg
    try:
        value = ast.literal_eval(_text(decl.default_value))
    except (ValueError, SyntaxError):
        raise RuntimeError(f"{op}: the default of argument '{name}' ({_text(decl.default_value)!r}) is not a "
                           "Python literal") from None
    return dataclasses.replace(arg, default=convert_arg(arg, value, op))


# ---- plugin libraries ------------------------------------------------------------------------

def load_library(path: str, global_symbols: bool = False) -> list[OpSchema]:
    """Loads a plugin library and declares its operators; returns their schemas."""
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if global_symbols else ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise RuntimeError(f"Cannot load the operator plugin library {path!r}: {exc}") from None
    try:
        version_fn, operators_fn = lib.penstock_plugin_abi_version, lib.penstock_plugin_operators
    except AttributeError:
        raise RuntimeError(f"{path!r} is not a penstock operator plugin: it does not export "
                           "penstock_plugin_abi_version and penstock_plugin_operators (csrc/include/penstock_plugin.h; "
                           "DALI's C++ plugins are built against DALI's headers and cannot load here)") from None
    version_fn.restype = ctypes.c_int
    if version_fn() != ABI_VERSION:
        raise RuntimeError(f"{path!r} was built for penstock's plugin ABI version {version_fn()}; this penstock "
                           f"loads version {ABI_VERSION}: rebuild it against this penstock's penstock_plugin.h")
    operators_fn.restype = ctypes.c_int
    operators_fn.argtypes = [ctypes.POINTER(ctypes.POINTER(_OperatorDecl))]
    decls = ctypes.POINTER(_OperatorDecl)()
    count = operators_fn(ctypes.byref(decls))
    schemas = [_schema_from_c(decls[i], path) for i in range(count)]
    for decl, schema in zip((decls[i] for i in range(count)), schemas):
        # without a setup, every output is like input 0
        declare(schema, Kernels(outputs=[Output()] * decl.num_outputs, setup=decl.setup, run_cpu=decl.run_cpu,
                                keep=lib))
    return schemas


def _schema_from_c(decl: _OperatorDecl, path: str) -> OpSchema:
    name = _text(decl.name)
    where = f"plugin {os.path.basename(path)}: operator {name!r}"
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise RuntimeError(f"{where}: an operator name is a class name, with dots for submodules")
    if decl.run_cpu is None:
        raise RuntimeError(f"{where} has no run_cpu entry point")
    if decl.num_outputs < 0 or decl.min_inputs < 0 or (decl.max_inputs != -1 and decl.max_inputs < decl.min_inputs):
        raise RuntimeError(f"{where}: inputs {decl.min_inputs}..{decl.max_inputs} and {decl.num_outputs} outputs "
                           "are not a valid declaration")
    args = [arg_from_c(decl.args[i], name) for i in range(decl.num_args)]
    return OpSchema(name, _text(decl.doc), args=args, min_inputs=decl.min_inputs, max_inputs=decl.max_inputs,
                    num_outputs=decl.num_outputs, devices=("cpu",), no_prune=decl.num_outputs == 0,
                    origin=os.path.abspath(path))


# ---- C++ kernels compiled at first use -------------------------------------------------------

def cache_dir() -> str:
    root = os.environ.get("PENSTOCK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "penstock")
    return os.path.join(root, "custom")


def compile_cpp(source: str, what: str) -> str:
    """A shared library built from C++ ``source`` (after ``#include "penstock_plugin.h"``) by the
    system's compiler (``$CXX``, else c++), cached on disk by the source, compiler and flags."""
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        raise RuntimeError(f"{what}: its CPU kernel is C++ compiled at first use, and no C++ compiler was found "
                           "(set CXX, or install g++)")
    include = include_dir()
    # -ffp-contract=off: no fused multiply-add, as the GPU kernels of the same operator
    flags = ["-O2", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", f"-I{include}"]
    with open(os.path.join(include, "penstock_plugin.h")) as f:
        header = f.read()
    text = '#include "penstock_plugin.h"\n#line 1 "cpu"\n' + source
    key = hashlib.sha256("\0".join([compiler, *flags, header, text]).encode()).hexdigest()[:24]
    folder = cache_dir()
    target = os.path.join(folder, f"{key}.so")
    if os.path.exists(target):
        return target
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = os.path.join(tmp, "kernel.cpp")
        with open(src, "w") as f:
            f.write(text)
        built = os.path.join(tmp, "kernel.so")
        done = subprocess.run([compiler, *flags, src, "-o", built], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{what}: compiling its C++ kernel failed ({compiler}):\n{done.stderr.strip()}")
        os.replace(built, target)  # atomic: another process compiling the same source gets a whole file
    return target


def cpu_entry(source: str, entry: str, what: str) -> Callable[[], tuple[int, Any]]:
    """Compiles ``source`` at the first call and returns (the address of ``entry``, the library)."""
    @functools.lru_cache(maxsize=None)
    def address() -> tuple[int, Any]:
        lib = ctypes.CDLL(compile_cpp(source, what))
        try:
            fn = getattr(lib, entry)
        except AttributeError:
            raise RuntimeError(f"{what}: its C++ kernel defines no extern \"C\" function {entry!r}") from None
        return ctypes.cast(fn, ctypes.c_void_p).value, lib
    return address


def gpu_source(source: str) -> str:
    with open(os.path.join(include_dir(), "penstock_plugin.cuh")) as f:
        return f.read() + '\n#line 1 "gpu"\n' + source


# ---- the kernel ------------------------------------------------------------------------------

class CustomOperator(Operator):
    """The kernel of a custom operator on either device; ``kernels`` says what it runs."""
    kernels: Kernels

    def setup(self) -> None:
        if self.device == "cpu" and callable(self.kernels.run_cpu):
            self.kernels.run_cpu()  # compile now: a failure belongs to the build

    # -- arguments
    def _arg_values(self, ws) -> list[tuple[Arg, Any]]:
        """Each declared argument with its per-sample values: [N, count] int64 or float64 arrays
        (count 0: not given), or the string."""
        values = []
        for arg in self.schema.args:
            if arg.type is ArgType.STR:
                values.append((arg, self.args.get(arg.name) or ""))
                continue
            dtype = np.float64 if arg.type in _FLOATS else np.int64
            if not ws.has_arg(arg.name):
                values.append((arg, np.zeros((ws.batch_size, 0), dtype)))
                continue
            if arg.name in ws.arg_inputs:
                count = int(ws.arg_inputs[arg.name]._volumes()[0]) if len(ws.arg_inputs[arg.name]) else 1
            else:
                value = self.args[arg.name]
                count = len(value) if isinstance(value, tuple) else 1
            if arg.type not in _LISTS and count != 1:
                raise RuntimeError(f"{self.label}: argument '{arg.name}' takes one value per sample, got {count}")
            values.append((arg, np.ascontiguousarray(ws.per_sample(arg.name, dtype, count))))
        return values

    # -- output planning
    def _plan_in_python(self, ws, inputs: list, values: list) -> list[tuple[np.ndarray, Any, str]]:
        """(shapes, numpy type, layout) per output, by the operator's ``Output``s."""
        first = inputs[0] if inputs else None
        in_shapes = [b._shapes for b in inputs]
        by_name = {arg.name: v for arg, v in values}
        plans = []
        for k, out in enumerate(self.kernels.outputs):
            if out.shape is not None:
                shapes = np.asarray(out.shape(in_shapes, by_name), np.int64)
                if shapes.ndim != 2 or len(shapes) != ws.batch_size:
                    raise RuntimeError(f"{self.label}: the shape rule of output {k} returned an array of shape "
                                       f"{list(shapes.shape)}, not [{ws.batch_size}, ndim]")
            elif first is not None:
                shapes = first._shapes
            else:
                shapes = np.zeros((ws.batch_size, 0), np.int64)
            if (shapes < 0).any():
                raise RuntimeError(f"{self.label}: output {k} would have a negative extent: "
                                   f"{shapes[(shapes < 0).any(1)][0].tolist()}")
            dtype = out.dtype if out.dtype is not None else (first.dtype if first is not None else DALIDataType.FLOAT)
            layout = out.layout if out.layout is not None else (
                first._layout if first is not None and len(first._layout) == shapes.shape[1] else "")
            if layout and len(layout) != shapes.shape[1]:
                raise RuntimeError(f"{self.label}: output {k} has layout '{layout}' but {shapes.shape[1]} dimensions")
            plans.append((shapes, to_numpy_type(dtype), layout))
        return plans

    def run(self, ws) -> list:
        values = self._arg_values(ws)
        inputs = list(ws.inputs)
        for i, b in enumerate(inputs):
            accepted = self.kernels.input_types[i] if i < len(self.kernels.input_types) else None
            if accepted is not None and b.dtype not in accepted:
                raise RuntimeError(f"{self.label}: input {i} is {b.dtype.name}; it takes "
                                   f"{', '.join(t.name for t in accepted)}")
            if b.ndim() > MAX_DIMS:
                raise RuntimeError(f"{self.label}: input {i} has {b.ndim()} dimensions; custom operators take at "
                                   f"most {MAX_DIMS}")
        if self.device == "cpu":
            return self._run_cpu(ws, inputs, values)
        return self._run_gpu(ws, inputs, values)

    # -- CPU: the C ABI
    def _context(self, ws, inputs: list, values: list, keep: list) -> tuple[_Context, Any]:
        batches = (_Batch * max(len(inputs), 1))()
        for b, tl in zip(batches, inputs):
            _fill_batch(b, np.ascontiguousarray(tl._buf), tl._shapes, tl._offsets, tl._layout, keep)
        args = (_Arg * max(len(values), 1))()
        for a, (arg, value) in zip(args, values):
            a.name, a.type = arg.name.encode(), ARG_CODES[arg.type]
            if arg.type is ArgType.STR:
                a.str = value.encode()
                keep.append(a.str)
                continue
            a.count = value.shape[1]
            keep.append(value)
            if arg.type in _FLOATS:
                a.floats = value.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
            else:
                a.ints = value.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
        error = ctypes.create_string_buffer(ERROR_BYTES)
        ctx = _Context(num_samples=ws.batch_size, num_inputs=len(inputs), inputs=batches, num_args=len(values),
                       args=args, parallel_for=_engine.plugin_parallel_for_address(),
                       pool=_engine.thread_pool_address(ws.pool), error=ctypes.addressof(error),
                       error_size=ERROR_BYTES, error_sample=-1)
        keep += [batches, args]
        return ctx, error

    def _call(self, entry: int, what: str, ctx: _Context, error: Any, outputs: Any) -> None:
        status = _ENTRY(entry)(ctypes.byref(ctx), outputs)
        if status != 0:
            message = f"{self.label}: {what} failed: {error.value.decode(errors='replace') or f'status {status}'}"
            if 0 <= ctx.error_sample < ctx.num_samples:
                raise SampleError(int(ctx.error_sample), message)
            raise RuntimeError(message)

    def _run_cpu(self, ws, inputs: list, values: list) -> list:
        keep: list = []
        ctx, error = self._context(ws, inputs, values, keep)
        n_out = self.schema.n_outputs(self.args, len(inputs))
        outputs = (_Batch * max(n_out, 1))()
        if self.kernels.setup is not None:
            plans = self._plan_in_c(ws, inputs, ctx, error, outputs, n_out, keep)
        else:
            plans = self._plan_in_python(ws, inputs, values)
        infos = inputs[0]._source_info if inputs else None
        results = [ws.new_batch(shapes, dtype, layout, infos) for shapes, dtype, layout in plans]
        for b, tl in zip(outputs, results):
            _fill_batch(b, tl._buf, tl._shapes, tl._offsets, tl._layout, keep)
        run = self.kernels.run_cpu() if callable(self.kernels.run_cpu) else (self.kernels.run_cpu, None)
        self._call(run[0], "run", ctx, error, outputs)
        return results

    def _plan_in_c(self, ws, inputs: list, ctx: _Context, error: Any, outputs: Any, n_out: int,
                   keep: list) -> list[tuple[np.ndarray, Any, str]]:
        """The plugin's setup: outputs start as input 0 (dtype, shapes, layout) and come back planned."""
        shapes = np.zeros((max(n_out, 1), ws.batch_size, MAX_DIMS), np.int64)
        keep.append(shapes)
        first = inputs[0] if inputs else None
        for k in range(n_out):
            b = outputs[k]
            b.num_samples = ws.batch_size
            b.dtype = int(first.dtype) if first is not None else int(DALIDataType.FLOAT)
            b.ndim = first.ndim() if first is not None else 0
            if first is not None:  # rows of ndim values, back to back
                shapes[k].reshape(-1)[:ws.batch_size * b.ndim] = first._shapes.reshape(-1)
            b.shapes = shapes[k].ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
            b.layout = (first._layout if first is not None else "").encode()
        self._call(self.kernels.setup, "setup", ctx, error, outputs)
        plans = []
        for k in range(n_out):
            b = outputs[k]
            if not 0 <= b.ndim <= MAX_DIMS:
                raise RuntimeError(f"{self.label}: setup gave output {k} {b.ndim} dimensions (at most {MAX_DIMS})")
            try:
                dtype = to_numpy_type(DALIDataType(b.dtype))
            except (ValueError, TypeError):
                raise RuntimeError(f"{self.label}: setup gave output {k} type code {b.dtype}, not a numeric "
                                   "penstock_dtype") from None
            out_shapes = shapes[k].reshape(-1)[:ws.batch_size * b.ndim].reshape(ws.batch_size, b.ndim).copy()
            if (out_shapes < 0).any():
                raise RuntimeError(f"{self.label}: setup gave output {k} a negative extent")
            layout = _text(b.layout)
            if layout and len(layout) != b.ndim:
                raise RuntimeError(f"{self.label}: setup gave output {k} layout '{layout}' for {b.ndim} dimensions")
            plans.append((out_shapes, dtype, layout))
        return plans

    # -- GPU: one launch of the operator's CUDA kernel
    def _run_gpu(self, ws, inputs: list, values: list) -> list:
        gpu = ws.gpu
        plans = self._plan_in_python(ws, inputs, values)
        infos = inputs[0]._source_info if inputs else None
        results = [ws.new_batch(shapes, dtype, layout, infos) for shapes, dtype, layout in plans]
        n = ws.batch_size
        samples = np.concatenate([_sample_descriptors(b) for b in inputs + results]) if inputs or results else \
            np.zeros((0, 11), np.int64)
        numeric = [v if isinstance(v, np.ndarray) else np.zeros((n, 0)) for _, v in values]
        counts = np.array([v.shape[1] for v in numeric], np.int64)
        starts = np.zeros(len(numeric), np.int64)
        if len(numeric) > 1:
            np.cumsum(counts[:-1] * n, out=starts[1:])
        arg_values = np.concatenate([v.astype(np.float64).reshape(-1) for v in numeric]) if numeric else np.zeros(0)
        # one block: the Call struct (9 x 8 bytes), the samples, the argument values, starts and counts
        call_bytes = 9 * 8
        parts = [samples.view(np.uint8).reshape(-1), arg_values.view(np.uint8), starts.view(np.uint8),
                 counts.view(np.uint8)]
        offsets = np.cumsum([call_bytes] + [len(p) for p in parts[:-1]])
        host = np.zeros(call_bytes + sum(len(p) for p in parts), np.uint8)
        for off, part in zip(offsets, parts):
            host[off:off + len(part)] = part
        dev = gpu.empty(len(host), np.uint8)
        base = _address(dev)
        n_in = len(inputs)
        host[:call_bytes].view(np.int64)[:] = [
            n, n_in, len(results), len(values), base + offsets[0], base + offsets[0] + n_in * n * 88,
            base + offsets[1], base + offsets[2], base + offsets[3]]
        gpu.upload(host, dev)
        volumes = samples[:, 9] if len(samples) else np.zeros(0, np.int64)
        threads = self.kernels.gpu_threads
        blocks = self.kernels.gpu_blocks or int(min(max(-(-int(volumes.max(initial=0)) // threads), 1), 1024))
        if n:
            try:
                kernel = gpu.source_kernel(gpu_source(self.kernels.gpu_source), self.kernels.gpu_entry)
            except Exception as exc:  # noqa: BLE001 - CuPy's compile and lookup errors, with NVRTC's log
                raise RuntimeError(f"{self.label}: its CUDA kernel {self.kernels.gpu_entry!r} did not compile or "
                                   f"is missing: {exc}") from None
            kernel((blocks, n), (threads,), (dev,), stream=gpu.stream)
        return results


def _address(array: Any) -> int:
    """The address of a device (CuPy) or host (numpy) array's first element."""
    ptr = getattr(array.data, "ptr", None)
    return int(ptr) if ptr is not None else int(array.ctypes.data)


def _sample_descriptors(tl: Any) -> np.ndarray:
    """[N, 11] int64: penstock::Sample of each sample of a device batch (data, shape[8], volume, ndim)."""
    n, nd = tl._shapes.shape
    desc = np.zeros((n, 11), np.int64)
    desc[:, 0] = _address(tl._buf) + tl._offsets * tl._buf.itemsize
    desc[:, 1:1 + nd] = tl._shapes
    desc[:, 9] = tl._volumes()
    desc[:, 10] = nd
    return desc


def _fill_batch(b: _Batch, buf: np.ndarray, shapes: np.ndarray, offsets: np.ndarray, layout: str, keep: list) -> None:
    shapes = np.ascontiguousarray(shapes, np.int64)
    offsets = np.ascontiguousarray(offsets, np.int64)
    keep += [buf, shapes, offsets]
    b.data = buf.ctypes.data if buf.size else None
    b.dtype = int(to_dali_type(buf.dtype))
    b.ndim = shapes.shape[1]
    b.num_samples = len(shapes)
    b.shapes = shapes.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    b.offsets = offsets.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    b.layout = layout.encode()
