"""penstock's JAX plugin (``penstock.plugin.jax``). Iterators arrive with the JAX plugin issue;
until then this package provides the shared last-batch policy."""
import jax  # noqa: F401  (the plugin needs JAX; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
