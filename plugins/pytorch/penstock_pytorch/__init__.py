"""penstock's PyTorch plugin (``penstock.plugin.pytorch``)."""
import torch  # noqa: F401  (the plugin needs PyTorch; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
