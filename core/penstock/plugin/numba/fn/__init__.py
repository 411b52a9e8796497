"""``penstock.plugin.numba.fn.numba_function``."""
from .. import numba_function
from . import experimental  # noqa: F401

__all__ = ["numba_function"]
