"""The call semantics of ``fn``/``ops`` and the builders that fill those namespaces from the registry."""
from __future__ import annotations

import sys
import types as _pytypes
import warnings
from typing import Any, Callable

from ._current import eager_pipeline
from ._graph import make_op
from ._registry import OpSchema, describe, on_change, schemas, snake_case, split_args
from .data_node import DataNode


def call_op(schema: OpSchema, inputs: tuple, kwargs: dict, default_device: str | None = None,
            py_object: Any = None) -> Any:
    """fn/ops call semantics: lists of DataNodes replicate the operator (multiple input sets); a
    list of plain values is one constant input (``fn.random.choice([10, 20, 30])``)."""
    eager = eager_pipeline()

    def is_data(x: Any) -> bool:  # in debug mode a list of arrays is one batch, not input sets
        return eager is not None and eager.is_data(x)

    inputs = tuple(x if _is_input_set(x) or not isinstance(x, list) or is_data(x) else tuple(x) for x in inputs)
    set_sizes = {len(x) for x in inputs if isinstance(x, list) and not is_data(x)}
    if set_sizes:
        if len(set_sizes) > 1:
            raise ValueError(f"{schema.fn_name}: lists of inputs must all have the same length")
        n = set_sizes.pop()
        if default_device is None and kwargs.get("device") is None:
            # every replica runs on the GPU if any element of any input set is on the GPU
            flat = [y for x in inputs for y in (x if isinstance(x, list) else [x])]
            if any(isinstance(y, DataNode) and y.device == "gpu" for y in flat):
                default_device = "gpu"
        results = []
        for k in range(n):
            one = tuple(x[k] if isinstance(x, list) and not is_data(x) else x for x in inputs)
            results.append(call_op(schema, one, kwargs, default_device, py_object))
        return results
    outs = make_op(schema, inputs, kwargs, default_device=default_device, py_object=py_object)
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def _is_input_set(x: Any) -> bool:
    return isinstance(x, list) and any(isinstance(y, DataNode) for y in x)


def make_fn(schema: OpSchema) -> Callable:
    if getattr(schema, "fn_impl", None) is not None:
        return schema.fn_impl

    def op_fn(*inputs: Any, **kwargs: Any) -> Any:
        return call_op(schema, inputs, kwargs)

    leaf = schema.fn_name.rpartition(".")[2]
    op_fn.__name__ = op_fn.__qualname__ = leaf
    op_fn.__doc__ = describe(schema)
    return op_fn


class OpsBase:
    """Base of the generated ``ops.*`` classes: arguments at construction, inputs at call."""
    schema: OpSchema

    def __init__(self, *, device: str = "cpu", **kwargs: Any):
        self._device = device
        for k, v in kwargs.items():
            if isinstance(v, DataNode):
                raise TypeError(f"{self.schema.fn_name}: per-sample argument '{k}' must be given "
                                "when the operator is called, not when it is constructed")
        split_args(self.schema, {**kwargs, "device": device})  # validate early
        self._init_kwargs = kwargs

    @property
    def device(self) -> str:
        return self._device

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        both = set(kwargs) & set(self._init_kwargs)
        if both:
            raise ValueError(f"{self.schema.fn_name}: argument(s) {sorted(both)} given both at "
                             "construction and at call")
        merged = {**self._init_kwargs, **kwargs}
        return call_op(self.schema, inputs, merged, default_device=self._device)


def make_ops_class(schema: OpSchema, name: str | None = None, deprecation: str | None = None) -> type:
    """``deprecation``: the warning an alias gives when constructed."""
    base = getattr(schema, "ops_impl", None) or OpsBase
    cls_name = name or schema.class_name
    body: dict[str, Any] = {"schema": schema, "__doc__": describe(schema), "__module__": "penstock.ops"}
    if deprecation:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            warnings.warn(deprecation, DeprecationWarning, 2)
            base.__init__(self, *args, **kwargs)
        body["__init__"] = __init__
    return type(cls_name, (base,), body)


def _moved(old: str, new: str) -> str:
    return (f"`penstock.{old}` is now deprecated. Use `penstock.{new}` instead. (The operator moved; this "
            "alias is kept for code written for the former name.)")


def _deprecated_fn(schema: OpSchema, warning: str) -> Callable:
    op_fn = make_fn(schema)

    def alias(*inputs: Any, **kwargs: Any) -> Any:
        warnings.warn(warning, DeprecationWarning, 2)
        return op_fn(*inputs, **kwargs)

    alias.__name__ = alias.__qualname__ = op_fn.__name__
    alias.__doc__ = f"{warning}\n\n{op_fn.__doc__}"
    return alias


def _submodule(root: _pytypes.ModuleType, path: str) -> _pytypes.ModuleType:
    mod = root
    for part in [p for p in path.split(".") if p]:
        full = f"{mod.__name__}.{part}"
        if not hasattr(mod, part):
            sub = _pytypes.ModuleType(full)
            sys.modules[full] = sub
            setattr(mod, part, sub)
        mod = getattr(mod, part)
    return mod


def _fn_entries(schema: OpSchema) -> list[tuple[str, str, Callable]]:
    """(submodule path, name, function) of each fn entry of an operator: its name, the legacy flat
    names (``fn.file_reader``) and the deprecated former paths."""
    fn_path, _, leaf = schema.fn_name.rpartition(".")
    entries = [(fn_path, leaf, make_fn(schema))]
    entries += [("", snake_case(legacy), make_fn(schema)) for legacy in schema.legacy_names]
    entries += [(former, leaf, _deprecated_fn(schema, _moved(f"fn.{former}.{leaf}", f"fn.{schema.fn_name}")))
                for former in schema.moved_from]
    return entries


def _ops_entries(schema: OpSchema) -> list[tuple[str, str, type]]:
    """(submodule path, name, class) of each ops entry of an operator (as ``_fn_entries``)."""
    entries = [(schema.module, schema.class_name, make_ops_class(schema))]
    entries += [("", legacy, make_ops_class(schema, legacy, f"ops.{legacy} is deprecated; use ops.{schema.name}"))
                for legacy in schema.legacy_names]
    entries += [(former, schema.class_name, make_ops_class(
        schema, deprecation=_moved(f"ops.{former}.{schema.class_name}", f"fn.{schema.fn_name}")))
        for former in schema.moved_from]
    return entries


def _filler(entries: Callable[[OpSchema], list]) -> Callable[[_pytypes.ModuleType], None]:
    def fill(module: _pytypes.ModuleType) -> None:
        for schema in _exported():
            for path, name, value in entries(schema):
                setattr(_submodule(module, path), name, value)

        def follow(schema: OpSchema, declared: bool) -> None:  # operators declared later (custom ones)
            if schema.internal:
                return
            for path, name, value in entries(schema):
                if declared:
                    setattr(_submodule(module, path), name, value)
                else:
                    delattr(_submodule(module, path), name)

        on_change(follow)
    return fill


fill_fn = _filler(_fn_entries)
fill_fn.__doc__ = """Adds a function per registered operator to ``fn_module`` (``penstock.fn``), in submodules by
name (``fn.readers.file``), with the legacy flat names (``fn.file_reader``); operators declared
later are added as they come."""
fill_ops = _filler(_ops_entries)
fill_ops.__doc__ = """Adds a class per registered operator to ``ops_module`` (``penstock.ops``), in submodules by
name (``ops.readers.File``), with the deprecated flat names (``ops.FileReader``); operators
declared later are added as they come."""


def _exported() -> list[OpSchema]:
    return [schema for schema in schemas().values() if not schema.internal]
