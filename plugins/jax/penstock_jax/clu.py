"""A peekable JAX iterator in the shape of CLU's ``PeekableDatasetIterator`` (used by T5X and the like).

``peek()`` returns the next element without consuming it; ``element_spec`` gives each output's
shape and dtype, for initialising a model before the first step. Every element must keep the
shapes and dtypes of the first.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from typing import Any, Callable, Sequence

import jax
import numpy as np
from jax.sharding import Sharding

from penstock.plugin.base_iterator import LastBatchPolicy

from .iterator import DALIGenericIterator, _data_iterator_impl

try:
    from clu.data.dataset_iterator import ArraySpec
except ImportError:  # CLU is optional: the same (shape, dtype) record without it
    @dataclasses.dataclass(frozen=True)
    class ArraySpec:  # type: ignore[no-redef]
        """Shape and dtype of one output, as CLU's ``ArraySpec``."""
        dtype: Any
        shape: tuple[int, ...]


def _spec(array: jax.Array) -> ArraySpec:
    return ArraySpec(dtype=array.dtype, shape=tuple(array.shape))


class DALIGenericPeekableIterator(DALIGenericIterator):
    """``DALIGenericIterator`` with ``peek()``, ``peek_async()``, ``element_spec`` and ``is_nonpadding``."""

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: Any = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL, prepare_first_batch: bool = True,
                 sharding: Sharding | None = None, pmap_compatible: bool | None = None):
        self._lock = threading.Lock()
        self._peeked: dict[str, jax.Array] | None = None
        self._peeked_counts: list[int] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._element_spec: dict[str, ArraySpec] | None = None
        super().__init__(pipelines, output_map, size, reader_name, auto_reset, last_batch_padded,
                         last_batch_policy, prepare_first_batch, sharding, pmap_compatible)
        self._returned_counts = self._epoch_counts()

    def _checked(self, element: dict[str, jax.Array]) -> dict[str, jax.Array]:
        specs = {name: _spec(a) for name, a in element.items()}
        if self._element_spec is None:
            self._element_spec = specs
        for name, spec in specs.items():
            if spec != self._element_spec[name]:
                raise ValueError(f"output '{name}' changed from {self._element_spec[name]} to {spec}: the peekable "
                                 "iterator needs every element to keep the shapes and dtypes of the first")
        return element

    def _advance(self) -> tuple[dict[str, jax.Array], list[int]]:
        element = self._checked(super().__next__())
        return element, self._epoch_counts()

    def __next__(self) -> dict[str, jax.Array]:
        with self._lock:
            if self._peeked is not None:
                element, counts = self._peeked, self._peeked_counts
                self._peeked = self._peeked_counts = None
            else:
                element, counts = self._advance()
            self._returned_counts = counts
            return element

    def __iter__(self) -> "DALIGenericPeekableIterator":
        if self._peeked is None:  # a pending peeked element belongs to this epoch: no reset
            super().__iter__()
        return self

    def peek(self) -> dict[str, jax.Array]:
        """The next element, without advancing the iterator."""
        with self._lock:
            if self._peeked is None:
                self._peeked, self._peeked_counts = self._advance()
            return self._peeked

    def peek_async(self) -> concurrent.futures.Future:
        """``peek()`` on a worker thread; wait for the future before the next ``peek``/``next``
        if it must see the same element."""
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        return self._executor.submit(self.peek)

    def checkpoints(self) -> list:
        if self._peeked is not None:
            raise RuntimeError("the peekable iterator cannot checkpoint while a peeked element is pending; "
                               "consume it with next() first")
        return super().checkpoints()

    @property
    def element_spec(self) -> dict[str, ArraySpec]:
        """``{name: ArraySpec(shape, dtype)}`` of the elements (peeks if nothing was read yet)."""
        if self._element_spec is None:
            self.peek()
        return self._element_spec

    @property
    def is_nonpadding(self) -> jax.Array | np.ndarray:
        """For the element returned last: True for the samples of the epoch, False for the padding
        (FILL repeats or samples of the next epoch), over the batch of every pipeline in order;
        with a sharding, sharded like the outputs."""
        b = self.batch_size
        mask = np.concatenate([np.arange(b) < c for c in self._returned_counts])
        if self._sharding is None:
            return mask
        local = self._shard_devices
        return jax.make_array_from_single_device_arrays(
            (self._num_shards * b,), self._sharding,
            [jax.device_put(mask[i * b:(i + 1) * b], d) for i, d in enumerate(local)])


def peekable_data_iterator(pipeline_fn: Callable | None = None, output_map: Sequence[str] = (), size: int = -1,
                           reader_name: str | None = None, auto_reset: Any = False, last_batch_padded: bool = False,
                           last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                           prepare_first_batch: bool = True, sharding: Sharding | None = None,
                           devices: Sequence[jax.Device] | None = None,
                           pmap_compatible: bool | None = None) -> Callable:
    """``data_iterator`` making ``DALIGenericPeekableIterator``s."""
    return _data_iterator_impl(DALIGenericPeekableIterator, pipeline_fn, output_map, size, reader_name, auto_reset,
                               last_batch_padded, last_batch_policy, prepare_first_batch, sharding, devices,
                               pmap_compatible)
