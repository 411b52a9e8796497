"""Operators declared in Python: a schema (name, inputs, outputs, arguments, devices) with a CPU
kernel in C++ and a GPU kernel in CUDA, compiled at first use; they register like built-in operators,
so ``fn``, ``ops``, the dynamic mode, argument checking and the docs have them.

    import penstock.custom as custom

    custom.operator(
        "ScaleShift", doc="x * scale + shift",
        args=[custom.Argument("scale", "float", 1.0, per_sample=True), custom.Argument("shift", "float", 0.0)],
        cpu=CPP_SOURCE,    # extern "C" int run(penstock_context*, penstock_batch* outputs), as in penstock_plugin.h
        gpu=CUDA_SOURCE)   # extern "C" __global__ void run(const penstock::Call*), as in penstock_plugin.cuh
    out = fn.scale_shift(images, scale=2.0)

Both kernels take a whole batch: the CPU one in one native call without the GIL (its
``ctx->parallel_for`` runs work on the pipeline's threads), the GPU one in one launch on the
pipeline's stream. Outputs are planned in Python (``Output``: type, shape rule, layout; by default
like input 0). Operators from a shared library built against the same C ABI, planning in C, come
from ``penstock.plugin_manager.load_library``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from . import fn
from ._registry import REQUIRED, Arg, ArgType, OpSchema, convert_arg, schemas, withdraw
from .operators.custom import Kernels, Output, cpu_entry, declare, include_dir
from .types import to_dali_type

__all__ = ["Argument", "Output", "operator", "include_dir"]

_TYPES = {"int": ArgType.INT, "float": ArgType.FLOAT, "bool": ArgType.BOOL, "str": ArgType.STR,
          "int_list": ArgType.INT_LIST, "float_list": ArgType.FLOAT_LIST}


@dataclasses.dataclass(frozen=True)
class Argument:
    """An argument: ``type`` one of "int", "float", "bool", "str", "int_list", "float_list";
    ``default`` a value, REQUIRED (the default: it must be given) or None (it may be left out: its
    kernels then see no values); ``per_sample``: a DataNode may give one value (or list) per sample."""
    name: str
    type: str
    default: Any = REQUIRED
    per_sample: bool = False
    doc: str = ""

    def declared(self, op: str) -> Arg:
        if self.type not in _TYPES:
            raise ValueError(f"{op}: argument '{self.name}' has type {self.type!r}; one of {sorted(_TYPES)}")
        kind = _TYPES[self.type]
        if self.per_sample and kind is ArgType.STR:
            raise ValueError(f"{op}: argument '{self.name}': a string argument cannot be given per sample")
        arg = Arg(self.name, kind, doc=self.doc, tensor=self.per_sample, optional=self.default is None)
        if self.default is REQUIRED or self.default is None:
            return arg
        return dataclasses.replace(arg, default=convert_arg(arg, self.default, op))


def operator(name: str, *, doc: str = "", inputs: int | tuple[int, int] = 1, outputs: int | Sequence[Output] = 1,
             args: Sequence[Argument] = (), input_types: Sequence[Any] = (), cpu: str | None = None,
             gpu: str | None = None, cpu_entry_name: str = "run", gpu_entry_name: str = "run", gpu_threads: int = 256,
             gpu_blocks: int | None = None, replace: bool = False) -> Callable:
    """Declares an operator and returns its ``fn`` function.

    ``name``: the ops class name ("ScaleShift"; dots place it in a submodule: "custom.ScaleShift");
    fn's name is its snake_case form. ``inputs``: a count or (min, max). ``outputs``: a count (each
    like input 0) or one ``Output`` each. ``input_types``: per input, the types it takes (a type, a
    sequence of them, or None: any); others are refused before a kernel runs. ``cpu``: C++ source
    defining ``extern "C" int <cpu_entry_name>(penstock_context*, penstock_batch*)``
    (include/penstock_plugin.h is included before it); ``gpu``: CUDA source defining ``extern "C"
    __global__ void <gpu_entry_name>(const penstock::Call*)`` (include/penstock_plugin.cuh before
    it), launched with ``gpu_threads`` threads
    per block and ``gpu_blocks`` blocks per sample (default: enough for the largest sample, at most
    1024). The devices are those given a kernel. ``replace``: redeclare an operator declared here
    before (a changed kernel while developing)."""
    if cpu is None and gpu is None:
        raise ValueError(f"custom operator {name!r}: give a CPU kernel (cpu=C++ source), a GPU kernel "
                         "(gpu=CUDA source) or both")
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"custom operator {name!r}: an operator name is a class name, with dots for submodules")
    if name in schemas():
        in_python = schemas()[name].origin == "python"
        if not (replace and in_python):
            raise RuntimeError(f"operator {name} is already declared" + (
                "; replace=True redeclares an operator declared in Python" if in_python else ""))
        withdraw(name)
    min_inputs, max_inputs = (inputs, inputs) if isinstance(inputs, int) else inputs
    outs = [Output() for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
    if min_inputs == 0 and any(o.shape is None for o in outs):
        raise ValueError(f"custom operator {name!r}: without inputs, every output needs a shape rule "
                         "(Output(shape=...))")
    declared = [a.declared(name) for a in args]
    if gpu is not None:
        strings = [a.name for a in declared if a.type is ArgType.STR]
        if strings:
            raise NotImplementedError(f"custom operator {name!r}: string arguments {strings} cannot reach a GPU kernel")
    devices = tuple(d for d, source in (("cpu", cpu), ("gpu", gpu)) if source is not None)
    schema = OpSchema(name, doc, args=declared, min_inputs=min_inputs, max_inputs=max_inputs, num_outputs=len(outs),
                      devices=devices, no_prune=not outs, origin="python")
    accepted = [None if t is None else tuple(to_dali_type(x) for x in (t if isinstance(t, (list, tuple)) else [t]))
                for t in input_types]
    run_cpu = cpu_entry(cpu, cpu_entry_name, schema.fn_name) if cpu else None
    declare(schema, Kernels(outputs=outs, input_types=accepted, run_cpu=run_cpu,
                            gpu_source=gpu, gpu_entry=gpu_entry_name, gpu_threads=gpu_threads, gpu_blocks=gpu_blocks))
    function = fn
    for part in schema.fn_name.split("."):
        function = getattr(function, part)
    return function
