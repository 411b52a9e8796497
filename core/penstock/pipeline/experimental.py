"""``pipeline_def`` variant that also accepts ``debug=True`` (eager, step-by-step execution)."""
from ._definition import pipeline_def

__all__ = ["pipeline_def"]
