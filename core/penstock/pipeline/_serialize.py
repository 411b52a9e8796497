"""Pipeline serialization (our own versioned JSON format) and Graphviz export.

Every operator argument round-trips: enums, tuples and numpy arrays are tagged. Python
callables (external_source sources, python_function) cannot be serialized.
"""
from __future__ import annotations

import enum
import json
from typing import Any

import numpy as np

from .. import types as _types
from .._graph import OpNode, collect
from .._registry import get_schema

FORMAT = "penstock-pipeline"
VERSION = 1
_CTOR_KEYS = ("batch_size", "num_threads", "device_id", "seed", "exec_pipelined", "prefetch_queue_depth",
              "exec_async", "bytes_per_sample", "set_affinity", "exec_dynamic", "output_dtype",
              "output_ndim", "output_layout", "py_num_workers", "py_start_method", "max_image_pixels")


def _encode(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return {"__enum__": type(value).__name__, "value": int(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return _encode(value.item())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot serialize a value of type {type(value).__name__}: {value!r}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__enum__" in value:
            return getattr(_types, value["__enum__"])(value["value"])
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {_decode(k): _decode(v) for k, v in value["__dict__"]}
        if "__ndarray__" in value:
            return np.array(value["__ndarray__"], dtype=value["dtype"]).reshape(value["shape"])
    return value


def _ctor_params(pipe: Any) -> dict:
    return {"batch_size": pipe._max_batch_size, "num_threads": pipe._num_threads,
            "device_id": pipe._device_id, "seed": pipe._seed, "exec_pipelined": pipe._exec_pipelined,
            "prefetch_queue_depth": pipe._prefetch_queue_depth, "exec_async": pipe._exec_async,
            "bytes_per_sample": pipe._bytes_per_sample, "set_affinity": pipe._set_affinity,
            "exec_dynamic": pipe._exec_dynamic, "output_dtype": pipe._output_dtype,
            "output_ndim": pipe._output_ndim, "output_layout": pipe._output_layout,
            "py_num_workers": pipe._py_num_workers, "py_start_method": pipe._py_start_method,
            "max_image_pixels": pipe._max_image_pixels}


def serialize(pipe: Any, seeds: bool = False) -> bytes:
    """The pipeline's graph and constructor arguments; with ``seeds``, each random operator's seed
    as the built pipeline resolved it (another process then builds the very same pipeline, the
    operators that no output reads included)."""
    preserved = [n for n in pipe._nodes if n.preserve] + pipe._sinks
    nodes = collect(pipe._outputs, preserved)
    ops = []
    for n in nodes:
        if n.py_object is not None:
            raise RuntimeError(f"{n.schema.fn_name} ('{n.name}') holds a Python callable and cannot "
                               "be serialized")
        args = dict(n.args, seed=n.resolved_seed) if seeds and n.schema.is_random else n.args
        ops.append({"op": n.schema.name, "device": n.device, "name": n.name, "explicit_name": n.explicit_name,
                    "args": {k: _encode(v) for k, v in args.items()},
                    "inputs": [[d.source.name, d.index] for d in n.inputs],
                    "arg_inputs": {k: [d.source.name, d.index] for k, d in n.arg_inputs.items()},
                    "preserve": n.preserve or (seeds and n in preserved),
                    # conditional branches: the input whose sample count is the operator's batch
                    "batch_ref": None if n.batch_ref is None else [n.batch_ref.source.name, n.batch_ref.index]})
    doc = {"format": FORMAT, "version": VERSION,
           "pipeline": {k: _encode(v) for k, v in _ctor_params(pipe).items()},
           "ops": ops, "outputs": [[o.source.name, o.index] for o in pipe._outputs]}
    return json.dumps(doc, separators=(",", ":")).encode()


def _load(data: bytes) -> dict:
    try:
        doc = json.loads(data.decode() if isinstance(data, (bytes, bytearray)) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a serialized penstock pipeline: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a serialized penstock pipeline")
    if doc.get("version") != VERSION:
        raise ValueError(f"serialized pipeline version {doc.get('version')} is not supported "
                         f"(this penstock reads version {VERSION})")
    return doc


def load_graph_into(pipe: Any, data: bytes) -> None:
    doc = _load(data)
    by_name: dict[str, OpNode] = {}
    with pipe:
        for rec in doc["ops"]:
            schema = get_schema(rec["op"])
            args = {k: _decode(v) for k, v in rec["args"].items()}
            inputs = [by_name[name].outputs[idx] for name, idx in rec["inputs"]]
            arg_inputs = {k: by_name[name].outputs[idx] for k, (name, idx) in rec["arg_inputs"].items()}
            node = OpNode(schema, rec["device"], args, inputs, arg_inputs, rec["name"])
            node.explicit_name = rec["explicit_name"]
            node.preserve = rec["preserve"]
            if rec.get("batch_ref") is not None:
                ref_name, ref_idx = rec["batch_ref"]
                node.batch_ref = by_name[ref_name].outputs[ref_idx]
            by_name[rec["name"]] = node
    pipe.set_outputs(*[by_name[name].outputs[idx] for name, idx in doc["outputs"]])


def deserialize(data: bytes, cls: type, overrides: dict) -> Any:
    doc = _load(data)
    params = {k: _decode(v) for k, v in doc["pipeline"].items()}
    params.update(overrides)
    pipe = cls(**params)
    load_graph_into(pipe, data)
    return pipe


def to_dot(pipe: Any, show_tensors: bool, show_ids: bool, use_colors: bool) -> str:
    colors = {"cpu": "#3b82f6", "mixed": "#a855f7", "gpu": "#22c55e"}
    lines = ["digraph pipeline {"]
    nodes = [op.node for op in pipe._ops]
    for n in nodes:
        label = n.name + (f" [{n.id}]" if show_ids else "")
        style = f', style=filled, fillcolor="{colors[n.device]}"' if use_colors else ""
        lines.append(f'  "{n.name}" [label="{label}", shape=box{style}];')
        for d in list(n.inputs) + list(n.arg_inputs.values()):
            if show_tensors:
                lines.append(f'  "{d.name}" [shape=ellipse];')
                lines.append(f'  "{d.source.name}" -> "{d.name}";')
                lines.append(f'  "{d.name}" -> "{n.name}";')
            else:
                lines.append(f'  "{d.source.name}" -> "{n.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
