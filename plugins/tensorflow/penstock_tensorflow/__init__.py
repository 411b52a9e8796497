"""penstock's TensorFlow plugin (``penstock.plugin.tf``). Datasets arrive with the TensorFlow plugin
issue; until then this package provides the shared last-batch policy."""
import tensorflow  # noqa: F401  (the plugin needs TensorFlow; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
