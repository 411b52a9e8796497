"""Operator-object API: ``ops.Resize(size=...)(images)``. Generated from the registry."""
import sys as _sys

from .. import operators as _operators  # noqa: F401  (importing them declares every operator)
from .._generate import OpsBase as _OpsBase  # noqa: F401
from .._generate import fill_ops as _fill_ops
from ..data_node import DataNode as _DataNode  # noqa: F401  (DALI code and tests import ops._DataNode)
from ..types import ScalarConstant as _ScalarConstant  # noqa: F401

_fill_ops(_sys.modules[__name__])
