"""Operator-object API: ``ops.Resize(size=...)(images)``. Generated from the registry."""
import sys as _sys

from .. import operators as _operators  # noqa: F401  (importing them declares every operator)
from .._generate import OpsBase as _OpsBase  # noqa: F401
from ._compose import Compose  # noqa: F401  (the ops API only, as in DALI)
from .._generate import fill_ops as _fill_ops
from ..data_node import DataNode as _DataNode  # noqa: F401  (DALI code and tests import ops._DataNode)
from ..types import ScalarConstant as _ScalarConstant  # noqa: F401
from ..tensors._host import as_host_array as _as_host_array

_fill_ops(_sys.modules[__name__])


# what DALI code converts dl_tensor_python_function's samples with
def _dlpack_from_array(array):
    """A DLPack capsule of a host array (a view; a copy of a read-only one, which DLPack cannot export)."""
    array = _as_host_array(array)
    return (array if array.flags.writeable else array.copy()).__dlpack__()


def _dlpack_to_array(dlpack):
    """The host array of a DLPack capsule (or of an object with ``__dlpack__``), a view."""
    return _as_host_array(dlpack)
