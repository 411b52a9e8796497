"""penstock's PyTorch plugin (``penstock.plugin.pytorch``): pipeline outputs as torch tensors."""
import torch  # noqa: F401  (the plugin needs PyTorch; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

from .iterators import DALIClassificationIterator, DALIGenericIterator, DALIRaggedIterator
from .tensors import feed_ndarray, to_torch_type
from .fn import TorchPythonFunction  # noqa: F401  (also binds the `fn` namespace: fn.torch_python_function)

__all__ = ["DALIGenericIterator", "DALIClassificationIterator", "DALIRaggedIterator", "LastBatchPolicy",
           "feed_ndarray", "to_torch_type"]
