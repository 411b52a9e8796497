"""Iterators returning, per batch, a list with one ``{output name: torch.Tensor}`` dict per pipeline."""
from __future__ import annotations

from typing import Any, Sequence

import torch

from penstock.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

from .tensors import to_torch, to_torch_type


class DALIGenericIterator(_DaliBaseIterator):
    """Pipeline outputs as torch tensors (CPU outputs as CPU tensors sharing the pipeline's memory).

    ``output_map`` names the pipeline outputs, in order. ``dynamic_shape`` is accepted for
    compatibility and has no effect: every batch is handed over as it is, whatever its shape.
    """

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: Any = False,
                 fill_last_batch: bool | None = None, dynamic_shape: bool = False,
                 last_batch_padded: bool = False, last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True):
        self.output_map = list(output_map)
        assert len(set(self.output_map)) == len(self.output_map), \
            f"output_map names must be distinct, got {self.output_map}"
        super().__init__(pipelines, size, reader_name, auto_reset, fill_last_batch, last_batch_padded,
                         last_batch_policy, prepare_first_batch)

    def state_dict(self) -> dict:
        """``torch.utils.data``-style state (``StatefulDataLoader``): the pipelines' checkpoints,
        with this iterator's position; pipelines need ``enable_checkpointing=True``."""
        return {"checkpoints": self.checkpoints()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Rewinds (or advances) this iterator and its pipelines to ``state_dict()`` output; batches
        prepared ahead are dropped, and the next batch is the one that followed the saved state."""
        self._load_checkpoints(state_dict["checkpoints"])

    def _convert(self, pipe: Any, outputs: tuple, count: int) -> dict[str, Any]:
        if len(outputs) != len(self.output_map):
            raise RuntimeError(f"the pipeline has {len(outputs)} outputs but output_map names "
                               f"{len(self.output_map)}: {self.output_map}")
        return {name: self._convert_output(k, batch, count)
                for k, (name, batch) in enumerate(zip(self.output_map, outputs))}

    def _convert_output(self, index: int, batch: Any, count: int) -> Any:
        return _dense_tensor(batch, count)


def _dense_tensor(batch: Any, count: int) -> torch.Tensor:
    if not batch.is_dense_tensor():
        raise RuntimeError(f"the samples of a batch have different shapes {batch.shape()[:4]}...; "
                           "DALIGenericIterator needs uniform batches (use DALIRaggedIterator)")
    tensor = to_torch(batch)
    return tensor if count == len(batch) else tensor[:count]


class DALIClassificationIterator(DALIGenericIterator):
    """``DALIGenericIterator`` for pipelines returning (data, label): outputs named "data" and "label"."""

    def __init__(self, pipelines: Any, size: int = -1, reader_name: str | None = None,
                 auto_reset: Any = False, fill_last_batch: bool | None = None, dynamic_shape: bool = False,
                 last_batch_padded: bool = False, last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True):
        super().__init__(pipelines, ["data", "label"], size, reader_name, auto_reset, fill_last_batch,
                         dynamic_shape, last_batch_padded, last_batch_policy, prepare_first_batch)


class DALIRaggedIterator(DALIGenericIterator):
    """Like ``DALIGenericIterator``, but outputs may hold samples of different shapes.

    ``output_types`` gives one tag per output: ``DENSE_TAG`` (one tensor, uniform shapes),
    ``SPARSE_LIST_TAG`` (a list of per-sample tensors sharing the pipeline's memory) or
    ``SPARSE_COO_TAG`` (a sparse COO tensor of shape ``(batch, max len, *rest)`` whose sparse
    dimensions are (sample, row): samples of shape ``(len_i, *rest)`` stacked along the batch).
    """
    DENSE_TAG = "dense"
    SPARSE_LIST_TAG = "sparse_list"
    SPARSE_COO_TAG = "sparse_coo"

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1,
                 reader_name: str | None = None, output_types: Sequence[str] | None = None,
                 auto_reset: Any = False, fill_last_batch: bool | None = None, dynamic_shape: bool = False,
                 last_batch_padded: bool = False, last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True):
        tags = (self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG)
        self.output_types = list(output_types) if output_types is not None else [self.DENSE_TAG] * len(output_map)
        assert len(self.output_types) == len(output_map), \
            f"output_types has {len(self.output_types)} entries for {len(output_map)} outputs"
        assert all(t in tags for t in self.output_types), f"output_types entries must be one of {tags}"
        super().__init__(pipelines, output_map, size, reader_name, auto_reset, fill_last_batch, dynamic_shape,
                         last_batch_padded, last_batch_policy, prepare_first_batch)

    def _convert_output(self, index: int, batch: Any, count: int) -> Any:
        tag = self.output_types[index]
        if tag == self.DENSE_TAG:
            return _dense_tensor(batch, count)
        samples = [to_torch(batch[i]) for i in range(count)]
        if tag == self.SPARSE_LIST_TAG:
            return samples
        return _sparse_coo(samples, batch.dtype)


def _sparse_coo(samples: list[torch.Tensor], dtype: Any) -> torch.Tensor:
    """Samples of shape (len_i, *rest) as one sparse COO tensor (batch, max len_i, *rest)."""
    if samples and samples[0].dim() == 0:
        raise RuntimeError("SPARSE_COO_TAG needs samples with at least one dimension")
    rest = tuple(samples[0].shape[1:]) if samples else ()
    lengths = [s.shape[0] for s in samples]
    rows = torch.cat([torch.arange(n) for n in lengths]) if samples else torch.zeros(0, dtype=torch.int64)
    sample_ids = torch.repeat_interleave(torch.arange(len(samples)), torch.tensor(lengths, dtype=torch.int64))
    values = torch.cat(samples) if samples else torch.zeros((0,) + rest, dtype=to_torch_type[dtype])
    size = (len(samples), max(lengths, default=0)) + rest
    return torch.sparse_coo_tensor(torch.stack([sample_ids, rows]), values, size)
