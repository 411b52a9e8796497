"""Operator-object API: ``ops.Resize(size=...)(images)``. Generated from the registry."""
from .._generate import OpsBase as _OpsBase  # noqa: F401
from .._generate import ensure_populated as _ensure_populated

_ensure_populated()
