"""Pipeline definition and execution."""
from ..data_node import DataNode
from ._definition import do_not_convert, pipeline_def
from ._pipeline import OperatorConcurrency, Pipeline, StreamPolicy
from . import experimental  # noqa: E402  (penstock.pipeline.experimental.pipeline_def)

DataNode.__module__ = "penstock.pipeline"

__all__ = ["Pipeline", "pipeline_def", "do_not_convert", "DataNode", "StreamPolicy", "OperatorConcurrency"]
