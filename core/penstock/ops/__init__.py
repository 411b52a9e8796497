"""Operator-object API: ``ops.Resize(size=...)(images)``. Generated from the registry."""
from .._generate import OpsBase as _OpsBase  # noqa: F401
from .._generate import ensure_populated as _ensure_populated
from ..data_node import DataNode as _DataNode  # noqa: F401  (DALI code and tests import ops._DataNode)
from ..types import ScalarConstant as _ScalarConstant  # noqa: F401

_ensure_populated()
