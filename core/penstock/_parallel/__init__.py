"""Parallel external source: worker processes that run sources, batches through shared memory."""
from ._pool import WorkerPool, cuda_context_exists

__all__ = ["WorkerPool", "cuda_context_exists"]
