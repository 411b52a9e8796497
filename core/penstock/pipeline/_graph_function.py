"""Calling a pipeline's graph function (the body of a ``@pipeline_def``): its result as a tuple of
outputs; with conditionals, the function converted and run in a conditional context."""
from __future__ import annotations

from typing import Any, Callable


def outputs_tuple(result: Any) -> tuple:
    if result is None:
        return ()
    if isinstance(result, tuple):
        return result
    return (result,)


def call_graph_function(func: Callable, args: tuple, kwargs: dict, conditionals: bool) -> Any:
    """Runs the graph function; with conditionals, its converted form in a conditional context."""
    if not conditionals:
        return func(*args, **kwargs)
    from .._conditionals import _scope, convert
    from .._conditionals._runtime import check_defined
    if getattr(func, "_penstock_do_not_convert", False):
        raise ValueError(f"@pipeline_def(enable_conditionals=True): '{func.__name__}' is marked "
                         "@do_not_convert; the pipeline function itself is always converted")
    converted = convert(func)
    if converted is func:
        raise RuntimeError(f"enable_conditionals=True: the source of '{func.__name__}' is not available, "
                           "so its conditionals cannot be converted")
    with _scope.defining():
        result = converted(*args, **kwargs)
    for value in result if isinstance(result, (tuple, list)) else (result,):
        check_defined(value)
    return result
