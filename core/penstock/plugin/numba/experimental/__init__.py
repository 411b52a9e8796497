"""``penstock.plugin.numba.experimental.NumbaFunction``: the ops-API class at its former place."""
from .. import NumbaFunction

__all__ = ["NumbaFunction"]
