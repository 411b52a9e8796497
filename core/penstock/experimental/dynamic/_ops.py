"""Every operator of the registry as a dynamic-mode function (``ndd.resize``, ``ndd.random.uniform``,
``ndd.decoders.image`` ...), generated from the declarations as ``fn`` is.

A call on Batches (or with ``batch_size=``) returns Batches, one on single samples Tensors. The
arguments are those of ``fn`` less ``name``, ``preserve`` and ``bytes_per_sample_hint``; random
operators take ``rng=`` (an ``ndd.random.RNG``; the thread's default one if not given) instead of
``seed``. ``device=`` picks where it runs: without it, on the GPU when an input is there.
"""
from __future__ import annotations

import inspect
import types as _pytypes
from typing import Any, Callable

import numpy as np

from ..._generate import _submodule
from ..._graph import make_op
from ..._registry import OpSchema, describe, on_change, schemas
from . import _batch, _tensor, random
from ._call import as_data, batch_size_of, node_for, record
from ._convert import is_array
from ._device import Device
from ._type import DType

# Python operators and external sources need a pipeline around them; constants are values here.
NOT_IN_DYNAMIC_MODE = {"PythonFunction", "DLTensorPythonFunction", "ExternalSource", "Constant"}
# fn arguments the dynamic mode does not take (DALI's signatures leave them out)
NOT_ARGUMENTS = ("name", "preserve", "bytes_per_sample_hint")
# Operators whose result is about a whole batch, which a call on one sample has not got (DALI asks for batch_size)
BATCH_ONLY = {"BatchPermutation"}


# Operators that left ``experimental`` before DALI 2.0: DALI's dynamic mode offers them by their
# top-level name only (it leaves out names deprecated before 2.0)
MOVED_OUT_OF_EXPERIMENTAL = {"experimental.Equalize", "experimental.AudioResample"}


def public_path(schema: OpSchema) -> str:
    """Where a function lives under ``ndd``: fn's path, less ``experimental.`` for the operators
    that moved out of it."""
    name = schema.fn_name
    return name[len("experimental."):] if schema.name in MOVED_OUT_OF_EXPERIMENTAL else name


def dynamic_schemas() -> list[OpSchema]:
    """The operators the dynamic mode offers as functions (readers are objects: ``ndd.readers``);
    a moved operator's old declaration gives way to its new one."""
    offered = [s for s in schemas().values()
               if not s.internal and not s.is_reader and s.name not in NOT_IN_DYNAMIC_MODE]
    declared = {s.fn_name for s in offered}
    return [s for s in offered if s.name not in MOVED_OUT_OF_EXPERIMENTAL or public_path(s) not in declared]


def resolve_backend(schema: OpSchema, device: Any, input_devices: list[str]) -> str:
    """The kernel device of a call: ``device=`` ("gpu" runs a decoder's 'mixed' kernel), else the
    GPU when an input is there; an operator with one device runs there when none was asked."""
    if device is None:
        want, asked = ("gpu" if "gpu" in input_devices else "cpu"), False
    elif device == "mixed":
        want, asked = "mixed", True
    else:
        want, asked = (device if isinstance(device, Device) else Device(str(device))).device_type, True
    if want in schema.devices:
        return want
    if want == "gpu" and "mixed" in schema.devices:
        return "mixed"
    if not asked and len(schema.devices) == 1:
        return schema.devices[0]
    raise ValueError(f'Invalid device "{want}" for operator `{public_path(schema)}` '
                     f"(it runs on: {', '.join(schema.devices)})")


def argument(name: str, value: Any, label: str) -> Any:
    """A keyword argument as the pipeline's argument checking takes it (dynamic-mode types and
    devices as fn's)."""
    if isinstance(value, DType):
        return value.type_id
    if isinstance(value, Device):
        return value.device_type
    if value is int or value is float:
        raise ValueError(f"{label}: do not use Python's built-in type {value.__name__} as the value of "
                         f"'{name}'; use a type of the dynamic mode (ndd.int32, ndd.float32 ...)")
    if is_array(value) and not isinstance(value, (np.ndarray, np.generic, _tensor.Tensor, _batch.Batch)):
        return _tensor.as_tensor(value)  # torch, CuPy ... arrays: data like any other
    return value


def call(schema: OpSchema, inputs: tuple, kwargs: dict, batch_size: int | None, device: Any) -> Any:
    """One call of an operator (see the module's docstring)."""
    label = public_path(schema)
    leaf = label.rpartition(".")[2]
    for key in NOT_ARGUMENTS + (("seed",) if schema.is_random else ()):
        if key in kwargs:
            raise TypeError(f"{leaf}() got an unexpected keyword argument '{key}'")
    given = len(inputs) - sum(1 for x in inputs[schema.min_inputs:] if x is None)
    if given < schema.min_inputs:  # as Python reports a call that misses positional arguments
        raise TypeError(f"{leaf}() missing {schema.min_inputs - given} required positional argument(s)")
    if schema.max_inputs != -1 and len(inputs) > schema.max_inputs:
        raise TypeError(f"{leaf}() takes {schema.max_inputs} positional argument(s) but {len(inputs)} were given")
    rng = kwargs.pop("rng", None) if schema.is_random else None
    data = []
    for i, x in enumerate(inputs):
        if x is None:
            continue  # an optional input left out
        d = as_data(x)
        data.append(d if d is not None else _tensor.tensor(x))
    kwargs = {k: argument(k, v, label) for k, v in kwargs.items() if v is not None}
    arg_data = {k: v for k, v in kwargs.items() if isinstance(v, (_tensor.Tensor, _batch.Batch))}
    batch = batch_size_of(data + list(arg_data.values()), batch_size)
    if batch is None and schema.name in BATCH_ONLY:
        raise ValueError(f"`batch_size` must be given to {label}: it has no inputs to take a batch size from")
    backend = resolve_backend(schema, device, [d.device.device_type for d in data])
    if backend != "gpu":  # CPU and mixed kernels read their inputs on the host
        data = [d.cpu() if d.device.device_type == "gpu" else d for d in data]
    arg_data = {k: v.cpu() if v.device.device_type == "gpu" else v for k, v in arg_data.items()}
    if schema.is_random:
        kwargs["seed"] = random.draw_seed(rng)
    nodes = [node_for(d, batch) for d in data]
    args = {**kwargs, **{k: node_for(v, batch) for k, v in arg_data.items()}, "device": backend}
    if args.get("on_error") == "skip":
        raise NotImplementedError(f"{label}: on_error='skip' is not supported in the dynamic mode (it refills "
                                  "batches from a reader of the same pipeline); drop the samples yourself")
    external = any(d._external for d in data) or any(v._external for v in arg_data.values())
    results = record(lambda: make_op(schema, nodes, args), batch, external)
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)


def signature(schema: OpSchema) -> inspect.Signature:
    """What a function takes: its inputs positionally, then ``batch_size``, ``device`` and the
    operator's arguments by keyword (``rng`` for random operators, in place of ``seed``)."""
    P = inspect.Parameter
    named = schema.min_inputs if schema.max_inputs == -1 else schema.max_inputs
    names = ["input"] if named == 1 else [f"input_{i}" for i in range(named)]
    params = [P(n, P.POSITIONAL_ONLY, **({} if i < schema.min_inputs else {"default": None}))
              for i, n in enumerate(names)]
    if schema.max_inputs == -1:
        params.append(P("inputs", P.VAR_POSITIONAL))
    params += [P("batch_size", P.KEYWORD_ONLY, default=None), P("device", P.KEYWORD_ONLY, default=None)]
    skip = set(NOT_ARGUMENTS) | {"device", "seed"}
    accepted = set(schema.arguments) | set(schema.alias_of) | schema.ignored  # deprecated spellings too, as fn
    params += [P(a, P.KEYWORD_ONLY, default=None) for a in sorted(accepted - skip)]
    if schema.is_random:
        params.append(P("rng", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def make_function(schema: OpSchema) -> Callable:
    def op(*inputs: Any, batch_size: int | None = None, device: Any = None, **kwargs: Any) -> Any:
        return call(schema, inputs, kwargs, batch_size, device)

    leaf = public_path(schema).rpartition(".")[2]
    op.__name__ = op.__qualname__ = leaf
    op.__doc__ = describe(schema)
    op.__signature__ = signature(schema)
    return op


def fill(root: _pytypes.ModuleType) -> None:
    """Adds a function per operator to the dynamic mode's module, in submodules by name; operators
    declared later (custom ones) are added as they come."""
    for schema in dynamic_schemas():
        path, _, leaf = public_path(schema).rpartition(".")
        setattr(_submodule(root, path), leaf, make_function(schema))

    def follow(schema: OpSchema, declared: bool) -> None:
        if schema.internal or schema.is_reader or schema.name in NOT_IN_DYNAMIC_MODE:
            return
        path, _, leaf = public_path(schema).rpartition(".")
        if declared:
            setattr(_submodule(root, path), leaf, make_function(schema))
        else:
            delattr(_submodule(root, path), leaf)

    on_change(follow)
