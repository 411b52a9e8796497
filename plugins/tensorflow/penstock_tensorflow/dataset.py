"""``DALIDataset``: a penstock pipeline as a genuine ``tf.data.Dataset``, with no compiled TF code.

The dataset is ``tf.data.Dataset.from_generator`` over a Python generator that runs the
pipeline (see ``_source``), wrapped like DALI's in an options dataset that turns off tf.data's
default optimizations and autotuning. Each element is a tuple with one tensor per pipeline
output (a tensor alone when a single dtype or TensorSpec, not a tuple, declares it, as in DALI).
Batches cross into TensorFlow through one ``numpy_function`` call per batch and, being
64-byte aligned host buffers, without a copy (``_outputs``). A dataset on a GPU (the pipeline's
outputs are there, or ``tf.device`` says so; see ``_placement``) is a generator dataset on that GPU
that takes GPU outputs through DLPack without a copy (``_device``).
"""
from __future__ import annotations

import warnings
from typing import Any

import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops
from tensorflow.python.eager import context

from penstock.pipeline import Pipeline

from ._device import device_dataset
from ._placement import Placement, place
from ._source import InputFeed, PipelineSpec, external_sources, run


def dataset_options() -> tf.data.Options:
    """The options DALI applies to its datasets: no default graph rewrites, no autotuning."""
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    options.autotune.enabled = False
    return options


def _deprecated_alias(value: Any, alias: Any, name: str) -> Any:
    if alias is None:
        return value
    if value is not None:
        raise ValueError(f"Usage of `{name}` is deprecated in favor of `output_{name}`. Both arguments were "
                         f"provided, but only `output_{name}` should be provided.")
    warnings.warn(f"Use of argument `{name}` is deprecated. Please use `output_{name}` instead. "
                  f"`output_{name}` should be provided as a tuple or a single value.", Warning, stacklevel=4)
    return tuple(alias) if isinstance(alias, list) else alias


def _signature(output_dtypes: Any, output_shapes: Any,
               output_signature: Any) -> tuple[tuple[tf.TensorSpec, ...], bool]:
    """The outputs' TensorSpecs, from dtypes (+ shapes) or from an output_signature, and whether a
    single one was given (not in a tuple): the dataset's elements are then tensors, not 1-tuples."""
    if output_signature is not None:
        if output_dtypes is not None or output_shapes is not None:
            raise ValueError("give either `output_signature` or `output_dtypes`/`output_shapes`, not both")
        single = not isinstance(output_signature, tuple)
        specs = (output_signature,) if single else output_signature
        if not all(isinstance(s, tf.TensorSpec) for s in specs):
            raise TypeError("`output_signature` should be a tf.TensorSpec or a tuple of tf.TensorSpec values. "
                            f"Got value `{output_signature}` of the type `{type(output_signature)}`.")
        return specs, single
    single = isinstance(output_dtypes, tf.DType)
    if not single and not (isinstance(output_dtypes, tuple) and output_dtypes
                           and all(isinstance(d, tf.DType) for d in output_dtypes)):
        raise TypeError("`output_dtypes` should be provided as single tf.DType value or a tuple of tf.DType "
                        f"values. Got value `{output_dtypes}` of the type `{type(output_dtypes)}`.")
    dtypes = (output_dtypes,) if single else output_dtypes
    if output_shapes is None:
        shapes = (None,) * len(dtypes)
    elif single:
        shapes = (output_shapes,)
    else:
        if not isinstance(output_shapes, (tuple, list)) or len(output_shapes) != len(dtypes):
            raise ValueError(f"`output_shapes` must give one shape per output: {len(dtypes)} output_dtypes, "
                             f"output_shapes={output_shapes!r}")
        shapes = tuple(output_shapes)
    return tuple(tf.TensorSpec(tf.TensorShape(s), d) for s, d in zip(shapes, dtypes)), single


def _tf_device_scope() -> tuple[str | None, int | None]:
    """The device type ("CPU"/"GPU", None when unset) and index of the enclosing tf.device scope."""
    if tf.executing_eagerly():
        spec = context.context().device_spec
    else:
        stack = tf.compat.v1.get_default_graph()._device_function_stack
        top = stack.peek_top_obj() if stack else None
        name = getattr(top, "display_name", None) if top is not None else None
        spec = tf.DeviceSpec.from_string(name) if isinstance(name, str) else tf.DeviceSpec()
    return (spec.device_type.upper() if spec.device_type else None), spec.device_index


def _placement(pipe: Pipeline, device_id: int | None, fail_on_device_mismatch: bool) -> Placement:
    scope_type, scope_index = _tf_device_scope()
    placement = place([out.device for out in pipe._outputs], scope_type=scope_type, scope_index=scope_index,
                      device_id=device_id, tf_gpus=len(tf.config.list_logical_devices("GPU")),
                      fail_on_device_mismatch=fail_on_device_mismatch)
    for msg in placement.warnings:  # DALI logs these
        warnings.warn(msg, stacklevel=4)
    return placement


class _PipelineDataset(dataset_ops._OptionsDataset):
    """A pipeline (and optional tf.data inputs) as a tf.data.Dataset; shared by both public datasets."""

    def __init__(self, pipeline: Pipeline, output_dtypes: Any = None, output_shapes: Any = None,
                 fail_on_device_mismatch: bool = True, *, input_datasets: Any = None, batch_size: int = 1,
                 num_threads: int = 4, device_id: int | None = 0, exec_separated: bool = False,
                 exec_dynamic: bool = False, prefetch_queue_depth: int = 2, cpu_prefetch_queue_depth: int = 2,
                 gpu_prefetch_queue_depth: int = 2, dtypes: Any = None, shapes: Any = None,
                 output_signature: Any = None):
        output_shapes = _deprecated_alias(output_shapes, shapes, "shapes")
        output_dtypes = _deprecated_alias(output_dtypes, dtypes, "dtypes")
        specs, single = _signature(output_dtypes, output_shapes, output_signature)
        if not isinstance(pipeline, Pipeline):
            raise TypeError(f"DALIDataset needs a penstock Pipeline, got {type(pipeline).__name__}")
        pipeline._define()
        if len(pipeline._outputs) != len(specs):
            raise ValueError(f"DALIDataset: the pipeline has {len(pipeline._outputs)} outputs but "
                             f"{len(specs)} output types were given")
        placement = _placement(pipeline, device_id, fail_on_device_mismatch)
        feeds = self._feeds(pipeline, input_datasets)
        # The driver keeps the queue depth's number of iterations in flight (the deeper queue's,
        # with separated queues, which exclude the dynamic executor).
        if exec_separated:
            in_flight, exec_dynamic = max(cpu_prefetch_queue_depth, gpu_prefetch_queue_depth), False
        else:
            in_flight, exec_dynamic = prefetch_queue_depth, bool(exec_dynamic or pipeline.exec_dynamic)
        if in_flight < 1:
            raise ValueError(f"DALIDataset: the prefetch queue depth must be at least 1, got {in_flight}")
        params = {"batch_size": batch_size, "num_threads": num_threads, "device_id": device_id,
                  "exec_dynamic": exec_dynamic}
        spec = PipelineSpec.of(pipeline, params, with_sources=self._runs_sources)
        dtypes_ = [s.dtype for s in specs]
        shapes_ = [s.shape for s in specs]
        with tf.device(placement.device):  # the whole dataset: a GPU iterator needs GPU datasets
            if placement.on_gpu:
                generated = device_dataset(
                    lambda: run(spec, feeds, dtypes_, shapes_, batch_size, in_flight, on_gpu=True), specs,
                    placement.device, single)
            else:
                generated = tf.data.Dataset.from_generator(
                    lambda: run(spec, feeds, dtypes_, shapes_, batch_size, in_flight), output_signature=specs)
                if single:  # from_generator copies a lone array (a tuple's it takes as they are): unpacked after
                    generated = generated.map(lambda output: output)
            super().__init__(generated, dataset_options())
        self._device_placement = placement  # where the dataset lives, per-output transfers

    _runs_sources = False  # whether external_source callables run in the dataset's pipelines

    def _feeds(self, pipeline: Pipeline, input_datasets: Any) -> list[InputFeed]:
        """The tf.data inputs feeding the pipeline's external_source nodes."""
        raise NotImplementedError


class DALIDataset(_PipelineDataset):
    """A ``tf.data.Dataset`` of the pipeline's batches: a tuple with one tensor per output (one
    tensor, not a tuple, when ``output_dtypes`` or ``output_signature`` is a single value).

    ``output_dtypes`` (a ``tf.DType`` or a tuple of them) and ``output_shapes`` (matching; None
    and None dimensions allowed; unit dimensions of a batch, including the batch dimension
    when ``batch_size`` is 1, may be left out) declare the element spec; or give
    ``output_signature`` (a ``tf.TensorSpec`` or a tuple of them) instead. As in DALI, every
    iterator over the dataset instantiates the serialized pipeline with ``batch_size``,
    ``num_threads``, ``device_id`` and the queue depths given here (pass the pipeline's own).
    The dataset never ends (readers stream forever): use ``take``, or ``steps_per_epoch`` in Keras.
    Pipelines with external_source nodes are rejected, as in DALI: use
    ``experimental.DALIDatasetWithInputs``.
    """

    def __init__(self, pipeline: Pipeline, output_dtypes: Any = None, output_shapes: Any = None,
                 fail_on_device_mismatch: bool = True, **kwargs: Any):
        if "input_datasets" in kwargs:
            raise TypeError("__init__() got an unexpected keyword argument 'input_datasets'. Dataset inputs are "
                            "allowed only in 'experimental.DALIDatasetWithInputs'.")
        super().__init__(pipeline, output_dtypes, output_shapes, fail_on_device_mismatch, **kwargs)

    def _feeds(self, pipeline: Pipeline, input_datasets: Any) -> list[InputFeed]:
        if any(external_sources(pipeline)):
            raise ValueError(
                "DALIDataset got a pipeline containing External Source operator nodes. External Source "
                "nodes can be used to express placeholders for tf.data.Dataset inputs or to run Python code "
                "via `source`; both are allowed only in 'experimental.DALIDatasetWithInputs' (which in "
                "penstock runs `source` callables in-process).")
        return []
