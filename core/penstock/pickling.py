"""Pickling of callbacks for spawned worker processes (``py_start_method="spawn"``).

Plain ``pickle`` saves a function by reference (module + name), which fails for lambdas, local
functions and functions a worker cannot import (e.g. defined in a notebook). The default
pickler here sends those by value: code, the globals the code reads, defaults and closure.
``pickle_by_value`` asks for the same treatment for a global function or a whole module.

``dumps``/``loads`` are this module's pickler interface, so ``py_callback_pickler`` may be this
module, ``pickle``, ``dill``, ``cloudpickle``, or a tuple ``(module, dumps_kwargs, loads_kwargs)``.
"""
from __future__ import annotations

import builtins
import importlib
import io
import marshal
import pickle
import sys
import types
from typing import Any, TypeVar

__all__ = ["pickle_by_value", "dumps", "loads", "Pickler"]

_BY_VALUE_ATTR = "_penstock_pickle_by_value"
_by_value_modules: set[str] = set()

F = TypeVar("F")


def pickle_by_value(obj: F) -> F:
    """Marks a global function (use as a decorator) or a module so that its functions are sent
    to spawned workers by value rather than by reference (for callbacks a worker cannot import)."""
    if isinstance(obj, types.ModuleType):
        _by_value_modules.add(obj.__name__)
    elif isinstance(obj, types.FunctionType):
        setattr(obj, _BY_VALUE_ATTR, True)
    else:
        raise TypeError(f"pickle_by_value: expected a Python function or a module, got {type(obj).__name__}")
    return obj


def _reachable_by_reference(fn: types.FunctionType) -> bool:
    """Whether ``module.qualname`` names this very function (what by-reference pickling needs)."""
    if "<locals>" in fn.__qualname__ or "<lambda>" in fn.__qualname__:
        return False
    obj: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


def _by_value(fn: types.FunctionType) -> bool:
    return (getattr(fn, _BY_VALUE_ATTR, False) or fn.__module__ in _by_value_modules
            or not _reachable_by_reference(fn))


def _global_names(code: types.CodeType) -> set[str]:
    """Names the code (and the code nested in it) may read from its globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


_EMPTY_CELL = object()


def _make_function(code: types.CodeType, name: str, ncells: int) -> types.FunctionType:
    # Globals and closure contents arrive with the state (after the function is memoized), so
    # functions that refer to themselves or to each other unpickle.
    closure = tuple(types.CellType() for _ in range(ncells)) or None
    return types.FunctionType(code, {"__builtins__": builtins}, name, None, closure)


def _set_function_state(fn: types.FunctionType, state: tuple) -> types.FunctionType:
    fn_globals, defaults, kwdefaults, cells, attrs, module, qualname, doc = state
    fn.__globals__.update(fn_globals)
    fn.__defaults__ = defaults
    fn.__kwdefaults__ = kwdefaults
    for cell, value in zip(fn.__closure__ or (), cells):
        if value is not _EMPTY_CELL:
            cell.cell_contents = value
    fn.__dict__.update(attrs)
    fn.__module__, fn.__qualname__, fn.__doc__ = module, qualname, doc
    return fn


def _load_empty_cell() -> object:
    return _EMPTY_CELL


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not assigned yet
        return _EMPTY_CELL


class Pickler(pickle.Pickler):
    """``pickle.Pickler`` that saves lambdas, local functions and marked functions by value."""

    def reducer_override(self, obj: Any) -> Any:
        if obj is _EMPTY_CELL:
            return _load_empty_cell, ()
        if isinstance(obj, types.FunctionType) and _by_value(obj):
            return self._reduce_function(obj)
        if isinstance(obj, types.CodeType):
            return marshal.loads, (marshal.dumps(obj),)
        if isinstance(obj, types.ModuleType) and obj.__name__ in sys.modules:
            return importlib.import_module, (obj.__name__,)
        return NotImplemented

    @staticmethod
    def _reduce_function(fn: types.FunctionType) -> tuple:
        g = fn.__globals__
        fn_globals = {k: g[k] for k in _global_names(fn.__code__) if k in g}
        cells = tuple(_cell_value(c) for c in fn.__closure__ or ())
        state = (fn_globals, fn.__defaults__, fn.__kwdefaults__, cells, dict(fn.__dict__),
                 fn.__module__, fn.__qualname__, fn.__doc__)
        return (_make_function, (fn.__code__, fn.__name__, len(cells)), state, None, None,
                _set_function_state)


def dumps(obj: Any, protocol: int | None = None, **kwargs: Any) -> bytes:
    """Like ``pickle.dumps``, with lambdas, local and marked functions saved by value."""
    buf = io.BytesIO()
    Pickler(buf, protocol if protocol is not None else pickle.DEFAULT_PROTOCOL, **kwargs).dump(obj)
    return buf.getvalue()


def loads(data: bytes, **kwargs: Any) -> Any:
    """``pickle.loads`` (functions saved by value need nothing special to load)."""
    return pickle.loads(data, **kwargs)
