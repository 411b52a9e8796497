"""``experimental.DALIDatasetWithInputs``: tf.data datasets feed a pipeline's external_source nodes.

Inputs are given by external_source ``name``: a ``tf.data.Dataset`` gives one sample per
element (the pipeline takes ``batch_size`` of them per iteration), an ``Input(dataset,
batch=True)`` one whole batch per element. external_source nodes with a Python ``source`` run
in-process, with every external_source feature penstock has (in DALI they become
``from_generator`` datasets, without ``num_outputs``). The dataset ends when an input ends.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from penstock.pipeline import Pipeline

from ._source import InputFeed, external_sources
from .dataset import _PipelineDataset


class Input:
    """An input dataset with options overriding its external_source node's (None: the node's own).

    ``layout``: layout of the samples; ``batch``: whether each element of ``dataset`` is a whole
    batch (True) or one sample (False).
    """

    def __init__(self, dataset: tf.data.Dataset, *, layout: str | None = None, batch: bool | None = False):
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError("The inputs specified to DALIDataset must be instances of type `tf.data.Dataset` "
                            f"got: `{dataset}` of type: {type(dataset)} instead.")
        self.dataset = dataset
        self.layout = layout
        self.batch = batch


_INPUTS_HELP = ("`input_datasets` must be a dictionary that maps input names (the `name` specified for External "
                "Source node in the pipeline) to input datasets objects (`tf.data.Dataset`) or "
                "`penstock.plugin.tf.experimental.Input` wrapper objects")


class DALIDatasetWithInputs(_PipelineDataset):
    """``DALIDataset`` whose pipeline may have external_source nodes: placeholders fed from
    ``input_datasets`` (``{name: tf.data.Dataset or Input}``) and nodes with a Python ``source``."""

    _runs_sources = True

    def _feeds(self, pipeline: Pipeline, input_datasets: Any) -> list[InputFeed]:
        input_datasets = {} if input_datasets is None else input_datasets
        if not isinstance(input_datasets, Mapping):
            raise TypeError(f"{_INPUTS_HELP}, got: `{input_datasets}` of type: {type(input_datasets)} instead.")
        placeholders, sourced = external_sources(pipeline)
        for node in placeholders:
            if not node.explicit_name:
                raise ValueError("Found a placeholder External Source node (without `source` argument) in the "
                                 "pipeline that was not named (no `name` argument set). Only named External "
                                 "Source nodes can be fed from `input_datasets`.")
        by_name = {n.name: n for n in placeholders}
        with_source = {n.name for n in sourced}
        both = sorted(with_source & set(input_datasets))
        if both:
            raise ValueError(f"Double specification of External Source input is not allowed. External Source "
                             f"nodes named: {both} got inputs specified via `input_datasets` and the External "
                             "Source `source` argument at the same time.")
        feeds = []
        for name, value in input_datasets.items():
            if not isinstance(name, str):
                raise TypeError(f"{_INPUTS_HELP}. Expected the keys (the input names) to be of type `str`, got: "
                                f"`{name}` of type: {type(name)} instead.")
            if not isinstance(value, (tf.data.Dataset, Input)):
                raise TypeError(f"{_INPUTS_HELP}. Expected the values (the inputs) to be of type "
                                f"`tf.data.Dataset` or `Input`, got: `{value}` of type: {type(value)} instead.")
            if name not in by_name:
                raise ValueError(f"Did not find an External Source placeholder node with name='{name}' in the "
                                 f"provided pipeline - required by the name specified in the `input_datasets`. "
                                 f"Names of available placeholder External Source nodes are: {sorted(by_name)}. "
                                 "Placeholder nodes cannot have `source` argument specified.")
            given = value if isinstance(value, Input) else Input(value)
            if not isinstance(given.dataset.element_spec, tf.TensorSpec):
                raise TypeError(f"input '{name}': the dataset's elements must be single tensors, got the element "
                                f"spec {given.dataset.element_spec}")
            node_args = by_name[name].args
            layout = given.layout if given.layout is not None else node_args.get("layout")
            batch = given.batch if given.batch is not None else node_args.get("batch", True)
            feeds.append(InputFeed(name, given.dataset, layout or None, bool(batch)))
        missing = sorted(set(by_name) - set(input_datasets))
        if missing:
            raise ValueError(f"Found External Source nodes in the pipeline that were not assigned any inputs. "
                             f"Nodes without inputs: {missing}. Nodes that were assigned inputs: "
                             f"{sorted(input_datasets)}.")
        for node in sourced:
            if node.args.get("cycle") == "raise":
                raise NotImplementedError(f"External Source node: '{node.name}' got argument cycle='raise' "
                                          "which is not supported (the dataset is not restartable).")
        return feeds
