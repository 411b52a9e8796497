"""``penstock.plugin.numba.fn.experimental.numba_function``: its former place, kept for older code."""
from ... import numba_function

__all__ = ["numba_function"]
