"""penstock's TensorFlow plugin (``penstock.plugin.tf``): pipelines as ``tf.data.Dataset``s.

Pure Python on top of tf.data (no compiled TensorFlow op, so no build to match each TensorFlow
release). ``DALIDataset`` is the main entry point; ``experimental.DALIDatasetWithInputs`` feeds
tf.data datasets into external_source nodes; ``DALIIterator`` keeps the legacy op interface.
"""
import sys

try:
    import tensorflow as tf
except ModuleNotFoundError as missing:
    if missing.name != "tensorflow":
        raise
    # not a declared dependency: users install tensorflow, tensorflow-cpu or a vendor build
    raise ImportError("penstock.plugin.tf needs TensorFlow: pip install tensorflow (or tensorflow-cpu)") from None

from penstock.plugin.base_iterator import LastBatchPolicy

from . import experimental
from ._source import serialize_pipeline
from .dataset import DALIDataset, dataset_options
from .iterator import DALIIterator, DALIIteratorWrapper, DALIRawIterator

# ``import penstock.plugin.tf.experimental`` must find this module, not load a second copy.
sys.modules.setdefault("penstock.plugin.tf.experimental", experimental)


def _tf_version() -> tuple[int, ...]:
    return tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in tf.__version__.split(".")[:3])


def dataset_compatible_tensorflow() -> bool:
    """Whether this TensorFlow can run ``DALIDataset`` (1.15 and later)."""
    return _tf_version() >= (1, 15)


def dataset_inputs_compatible_tensorflow() -> bool:
    """Whether this TensorFlow can run ``experimental.DALIDatasetWithInputs`` (2.4.1 and later)."""
    return _tf_version() >= (2, 4, 1)


def dataset_distributed_compatible_tensorflow() -> bool:
    """Whether ``DALIDataset`` works with this TensorFlow's tf.distribute APIs (2.5.0 and later)."""
    return _tf_version() >= (2, 5, 0)


__all__ = ["DALIDataset", "DALIIterator", "DALIIteratorWrapper", "DALIRawIterator", "LastBatchPolicy",
           "dataset_compatible_tensorflow", "dataset_distributed_compatible_tensorflow",
           "dataset_inputs_compatible_tensorflow", "dataset_options", "experimental", "serialize_pipeline"]
