"""The call semantics of ``fn``/``ops`` and the builders that fill those namespaces from the registry."""
from __future__ import annotations

import dataclasses
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
            _warn(deprecation)
            base.__init__(self, *args, **kwargs)
        body["__init__"] = __init__
    return type(cls_name, (base,), body)


@dataclasses.dataclass(frozen=True)
class Alias:
    """Another place of an operator: ``fn.<module>.<fn_name>`` and ``ops.<module>.<class_name>``."""
    module: str
    fn_name: str
    class_name: str
    deprecated: bool


def aliases(schema: OpSchema) -> list[Alias]:
    """The deprecated names of ``schema``'s operator (flat legacy names, former modules) and its places
    in ``hidden`` submodules, as DALI has them."""
    leaf = schema.fn_name.rpartition(".")[2]
    former = [Alias("", snake_case(legacy), legacy, True) for legacy in schema.legacy_names]
    former += [Alias(module, leaf, schema.class_name, True) for module in schema.moved_from]
    hidden = [Alias(_hidden(a.module), a.fn_name, a.class_name, True) for a in former] if schema.aliases_hidden else []
    if schema.hidden:
        hidden.append(Alias(_hidden(schema.module), leaf, schema.class_name, schema.deprecated))
    return former + hidden


def _hidden(module: str) -> str:
    return f"{module}.hidden" if module else "hidden"


def deprecation_warning(schema: OpSchema, api: str, module: str, name: str) -> str:
    """What using ``penstock.<api>.<module>.<name>``, a deprecated name of ``schema``'s operator (or the
    operator, if it is deprecated), warns. A hidden place is named by the place it mirrors."""
    module = ".".join(part for part in module.split(".") if part and part != "hidden")
    old = ".".join(part for part in (api, module, name) if part)
    if (module, name) in ((schema.module, schema.fn_name.rpartition(".")[2]), (schema.module, schema.class_name)):
        new, note = schema.replaced_by, schema.deprecation_note
    else:
        new, note = schema.fn_name, _moved_note(schema, module)
    return (f"WARNING: `penstock.{old}` is now deprecated." + (f" Use `penstock.fn.{new}` instead." if new else "")
            + (f"\n{note}" if note else ""))


def _moved_note(schema: OpSchema, former_module: str) -> str:
    if former_module.startswith("experimental"):
        return ("The operator left the experimental module; this name stays for code written for it, and does "
                "the same.")
    if schema.module in ("readers", "decoders"):
        return (f"The {schema.module} have their own submodule since DALI 1.0, named by what they read or "
                "decode; this name stays for code written before, and does the same.")
    return ""


def _warn(message: str) -> None:
    # at the caller's line: Python shows it where that is a script's (__main__) code, and filters decide elsewhere
    warnings.warn(message, DeprecationWarning, 3)


def _deprecated_fn(schema: OpSchema, warning: str) -> Callable:
    op_fn = make_fn(schema)

    def alias(*inputs: Any, **kwargs: Any) -> Any:
        _warn(warning)
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
    """(submodule path, name, function) of each fn entry of an operator: its name and its other places
    (``aliases``: the legacy flat names, the former paths, the hidden mirrors), deprecated ones warning."""
    fn_path, _, leaf = schema.fn_name.rpartition(".")
    places = [(fn_path, leaf, schema.deprecated)] + [(a.module, a.fn_name, a.deprecated) for a in aliases(schema)]
    return [(module, name, _deprecated_fn(schema, deprecation_warning(schema, "fn", module, name)) if deprecated
             else make_fn(schema)) for module, name, deprecated in places]


def _ops_entries(schema: OpSchema) -> list[tuple[str, str, type]]:
    """(submodule path, name, class) of each ops entry of an operator (as ``_fn_entries``)."""
    places = [(schema.module, schema.class_name, schema.deprecated)]
    places += [(a.module, a.class_name, a.deprecated) for a in aliases(schema)]
    return [(module, name, make_ops_class(schema, name, deprecation_warning(schema, "ops", module, name)
                                          if deprecated else None)) for module, name, deprecated in places]


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
name (``fn.readers.file``), and at its other places (``fn.file_reader`` ...); operators declared
later are added as they come."""
fill_ops = _filler(_ops_entries)
fill_ops.__doc__ = """Adds a class per registered operator to ``ops_module`` (``penstock.ops``), in submodules by
name (``ops.readers.File``), and at its other places (``ops.FileReader`` ...); operators
declared later are added as they come."""


def _exported() -> list[OpSchema]:
    return [schema for schema in schemas().values() if not schema.internal]
