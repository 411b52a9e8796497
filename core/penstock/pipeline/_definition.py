"""``@pipeline_def``: turns a graph function into a pipeline factory."""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

from ._debug import debug_pipeline
from ._graph_function import call_graph_function, outputs_tuple
from ._pipeline import Pipeline

_CTOR_PARAMS = set(inspect.signature(Pipeline.__init__).parameters) - {"self"}


def pipeline_def(fn: Callable | None = None, *, enable_conditionals: bool = False, **pipeline_kwargs: Any):
    """Decorator: calling the decorated function builds a new Pipeline from its body.

    Keyword arguments of the call that name ``Pipeline`` constructor parameters go to the
    constructor (overriding the decorator's), the rest to the function.
    """
    debug = pipeline_kwargs.pop("debug", False)

    def decorate(func: Callable) -> Callable:
        _refuse_do_not_convert(func)
        params = inspect.signature(func).parameters
        var_kw = [p.name for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        shadowed = _CTOR_PARAMS & set(params)
        for name in shadowed:
            warnings.warn(f"@pipeline_def: parameter '{name}' of '{func.__name__}' has the name of a "
                          "Pipeline argument; it is passed to the function", stacklevel=3)

        @functools.wraps(func)
        def create_pipeline(*args: Any, **kwargs: Any) -> Pipeline:
            if var_kw:  # raised here, not at decoration, as DALI does (modules may define such functions)
                raise TypeError(f"@pipeline_def: '{func.__name__}' takes **{var_kw[0]}, which is not allowed: "
                                "its keyword arguments could not be told apart from the pipeline's")
            ctor = dict(pipeline_kwargs)
            conditionals = kwargs.pop("enable_conditionals", enable_conditionals)
            is_debug = kwargs.pop("debug", debug)
            for key in list(kwargs):
                if key in _CTOR_PARAMS and key not in params:
                    ctor[key] = kwargs.pop(key)
            if is_debug:
                return debug_pipeline(func, args, kwargs, ctor, conditionals)
            pipe = Pipeline(**ctor)
            with pipe:
                result = call_graph_function(func, args, kwargs, conditionals)
            pipe.set_outputs(*outputs_tuple(result))  # a list is one output (nested DataNodes: an error)
            return pipe

        create_pipeline._is_pipeline_def = True
        return create_pipeline

    return decorate(fn) if fn is not None else decorate


_DO_NOT_CONVERT_DEFINITION = ("Pipeline definition cannot be marked with @do_not_convert. (A pipeline definition "
                              "is always converted when conditionals are enabled.)")


def _refuse_do_not_convert(func: Callable) -> None:
    if getattr(func, "_penstock_do_not_convert", False):
        raise ValueError(_DO_NOT_CONVERT_DEFINITION)


def do_not_convert(func: Callable) -> Callable:
    """Marks a function to be left alone by conditional-statement conversion."""
    if getattr(func, "_is_pipeline_def", False):
        raise ValueError(_DO_NOT_CONVERT_DEFINITION)
    func._penstock_do_not_convert = True
    return func
