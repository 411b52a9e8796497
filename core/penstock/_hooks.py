"""Behaviour the core calls but does not define: the layers above install it when they are imported.

The core imports nothing above it. Where it needs an operator or a runtime (a DataNode's ``+`` is
the arithmetic operator, a constant input is a constant operator, an operator created inside a
conditional branch reads its inputs through split operators), the module that defines that
behaviour installs it here, and the core calls it through this module.
"""
from __future__ import annotations

from typing import Any, Callable


def _not_installed(what: str, provider: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{what} is defined by {provider}, which has not been imported")
    return missing


# DataNode's operators, indexing, transfers and properties (penstock.operators installs them)
binary: Callable[[str, Any, Any], Any] = _not_installed("DataNode arithmetic", "penstock.operators.arithmetic")
unary: Callable[[str, Any], Any] = _not_installed("DataNode arithmetic", "penstock.operators.arithmetic")
subscript: Callable[[Any, Any], Any] = _not_installed("DataNode indexing", "penstock.operators.subscript")
to_device: Callable[[Any, str], Any] = _not_installed("DataNode.gpu()/.cpu()", "penstock.operators.transfer")
shapes: Callable[..., Any] = _not_installed("DataNode.shape()", "penstock.operators.properties")
get_property: Callable[..., Any] = _not_installed("DataNode.property()", "penstock.operators.properties")

# A constant given where a DataNode is expected, as a constant operator's output (penstock.operators.constant)
constant_node: Callable[..., Any] = _not_installed("constant promotion", "penstock.operators.constant")


def place(schema: Any, nodes: list, tensors: dict) -> tuple[list, dict, Any, Any]:
    """Where a new operator runs: its inputs, argument inputs, conditional scope and the value whose
    sample count is its batch size. Outside conditional pipelines: as given, every sample;
    penstock._conditionals installs its own when a conditional pipeline is defined."""
    return nodes, tensors, None, None


_INSTALLABLE = ("binary", "unary", "subscript", "to_device", "shapes", "get_property", "constant_node", "place")


def install(**hooks: Callable[..., Any]) -> None:
    """Sets hooks by name; a name that is not a hook is an error."""
    unknown = set(hooks) - set(_INSTALLABLE)
    if unknown:
        raise KeyError(f"not a hook of the core: {sorted(unknown)}")
    globals().update(hooks)
