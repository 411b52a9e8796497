"""penstock: GPU-accelerated data loading and augmentation with NVIDIA DALI's user API."""
from . import types
from .data_node import DataNode, newaxis
from .pipeline import OperatorConcurrency, Pipeline, StreamPolicy, pipeline_def
from . import backend, fn, math, ops, tensors
# the other modules DALI's package holds once imported (code reaches them as attributes)
from . import (backend_impl, custom, external_source, internal, pickling, plugin_manager, python_function_plugin,
               reducers, sysconfig, tfrecord)

__version__ = "0.1.0"

__all__ = ["Pipeline", "pipeline_def", "newaxis", "DataNode", "StreamPolicy", "OperatorConcurrency",
           "fn", "ops", "types", "math", "tensors", "backend", "__version__"]
