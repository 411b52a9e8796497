"""penstock's JAX plugin (``penstock.plugin.jax``): pipeline outputs as ``jax.Array``s."""
import jax  # noqa: F401  (the plugin needs JAX; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

# loaded here so penstock.plugin.jax.clu and .fn are these modules, not second copies
from . import clu, fn  # noqa: F401
from .iterator import DALIGenericIterator, data_iterator

__all__ = ["DALIGenericIterator", "LastBatchPolicy", "data_iterator"]
