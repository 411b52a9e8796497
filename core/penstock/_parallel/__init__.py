"""Parallel external source: worker processes that run sources, batches through shared memory."""
from ._cuda_context import cuda_context_exists
from ._pool import WorkerPool

__all__ = ["WorkerPool", "cuda_context_exists"]
