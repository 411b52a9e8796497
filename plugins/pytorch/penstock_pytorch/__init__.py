"""penstock's PyTorch plugin (``penstock.plugin.pytorch``): pipeline outputs as torch tensors."""
import sys

import torch  # noqa: F401  (the plugin needs PyTorch; fail early with its own ImportError)

from penstock.plugin.base_iterator import LastBatchPolicy

from .iterators import DALIClassificationIterator, DALIGenericIterator, DALIRaggedIterator
from .tensors import feed_ndarray, to_torch_type
from .fn import TorchPythonFunction  # noqa: F401  (also binds the `fn` namespace: fn.torch_python_function)
from . import experimental, loader_evaluator, torch_utils  # noqa: F401

# `import penstock.plugin.pytorch.experimental.proxy` must find these modules, not second copies
sys.modules.setdefault("penstock.plugin.pytorch.experimental", experimental)
sys.modules.setdefault("penstock.plugin.pytorch.experimental.proxy", experimental.proxy)

__all__ = ["DALIGenericIterator", "DALIClassificationIterator", "DALIRaggedIterator", "LastBatchPolicy",
           "feed_ndarray", "to_torch_type"]
