"""``DALIGenericIterator`` and ``data_iterator``: pipeline outputs as one dict of ``jax.Array``s per step.

With one pipeline each output is that pipeline's batch. With several, every output becomes one
array over all of them: with a ``sharding``, a global array of the global batch whose shard on
each device holds the samples read by the pipeline of that device (across processes under
``jax.distributed``); without, the batches stacked along a new leading axis (``pmap`` style).
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, Sharding

from penstock.pipeline import pipeline_def
from penstock.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator
from penstock.tensors import TensorListCPU

from ._arrays import to_jax


def _local_devices_in_order(sharding: Sharding) -> list[jax.Device]:
    """The devices of ``sharding`` in this process, in the sharding's own device order."""
    if isinstance(sharding, NamedSharding):
        ordered = list(sharding.mesh.devices.flat)
    else:
        ordered = sorted(sharding.device_set, key=lambda d: d.id)
    local = sharding.addressable_devices
    return [d for d in ordered if d in local]


def shard_plan(sharding: Sharding) -> tuple[list[tuple[jax.Device, int]], int]:
    """Which shard of the data each local device of ``sharding`` holds along the batch dimension.

    Returns ``([(device, shard_id), ...], num_shards)``: devices in the sharding's order, and the
    number of distinct blocks the sharding cuts the batch dimension into (devices that replicate a
    block share its shard id).
    """
    n = len(sharding.device_set)
    rank = max(1, len(sharding.spec)) if isinstance(sharding, NamedSharding) else 1
    try:  # a probe of n samples (of size 1 in the other dimensions) shows how the batch is cut
        indices = sharding.devices_indices_map((n,) + (1,) * (rank - 1))
    except ValueError as e:
        raise ValueError(f"the sharding {sharding} must split only the batch (first) dimension: {e}") from None
    starts = {d: (idx[0].start or 0) if idx else 0 for d, idx in indices.items()}
    blocks = sorted(set(starts.values()))
    shard_of = {start: k for k, start in enumerate(blocks)}
    return [(d, shard_of[starts[d]]) for d in _local_devices_in_order(sharding)], len(blocks)


class DALIGenericIterator(_DaliBaseIterator):
    """Pipeline outputs as ``{name: jax.Array}``, one dict per step (api.md §17).

    ``sharding``: a ``jax.sharding.Sharding`` splitting the batch dimension over the devices of
    the pipelines (pipeline *i* feeds the *i*-th local device of the sharding); each output is then
    a global array of ``num_shards * batch_size`` samples with exactly that sharding.
    ``pmap_compatible``: stack the pipelines' batches into ``(pipelines, batch, ...)`` arrays spread
    over their devices; the default is to do so when there are several pipelines and no sharding.
    ``LastBatchPolicy.PARTIAL`` is not supported: JAX arrays of a step all have one shape.
    """

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: Any = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL, prepare_first_batch: bool = True,
                 sharding: Sharding | None = None, pmap_compatible: bool | None = None):
        self.output_map = list(output_map)
        assert len(set(self.output_map)) == len(self.output_map), "output_map names should be distinct"
        assert last_batch_policy != LastBatchPolicy.PARTIAL, "JAX iterator does not support partial last batch policy."
        assert sharding is None or isinstance(sharding, Sharding), \
            f"sharding should be a jax.sharding.Sharding, got {type(sharding).__name__}"
        if sharding is not None and pmap_compatible:
            raise ValueError("sharding and pmap_compatible=True cannot be combined: a sharding makes global "
                             "arrays for jit, pmap_compatible stacks the pipelines for pmap")
        pipes = list(pipelines) if isinstance(pipelines, (list, tuple)) else [pipelines]
        self._sharding = sharding
        self._pmap_compatible = (sharding is None and len(pipes) > 1) if pmap_compatible is None \
            else bool(pmap_compatible)
        self._index = {id(p): i for i, p in enumerate(pipes)}
        self._shard_devices: list[jax.Device] | None = None
        if sharding is not None:
            plan, self._num_shards = shard_plan(sharding)
            self._shard_devices = [d for d, _ in plan]
            if len(self._shard_devices) != len(pipes):
                raise ValueError(f"the sharding has {len(self._shard_devices)} devices in this process but the "
                                 f"iterator has {len(pipes)} pipelines; it needs one pipeline per device")
        hosts = jax.local_devices(backend="cpu")
        # Host outputs of pipeline i go to host device `device_id` when JAX exposes several (e.g.
        # --xla_force_host_platform_device_count), so CPU pipelines spread like GPU ones.
        self._host_devices = [hosts[p.device_id] if p.device_id is not None and p.device_id < len(hosts)
                              else hosts[0] for p in pipes]
        self._stacking_shardings: dict[tuple, NamedSharding] = {}
        self._checked_shard_shapes: set[tuple] = set()
        super().__init__(pipes, size, reader_name, auto_reset, None, last_batch_padded, last_batch_policy,
                         prepare_first_batch)

    # ---- per pipeline ------------------------------------------------------------------------
    def _convert(self, pipe: Any, outputs: tuple, count: int) -> dict[str, jax.Array]:
        if len(outputs) != len(self.output_map):
            raise RuntimeError(f"the pipeline has {len(outputs)} outputs but output_map names "
                               f"{len(self.output_map)}: {self.output_map}")
        i = self._index[id(pipe)]
        shard_device = self._shard_devices[i] if self._shard_devices is not None else None
        return {name: to_jax(batch, shard_device or (self._host_devices[i] if isinstance(batch, TensorListCPU)
                                                       else None))
                for name, batch in zip(self.output_map, outputs)}

    # ---- over pipelines ----------------------------------------------------------------------
    def _next_batch(self) -> dict[str, jax.Array]:
        per_pipe = super()._next_batch()
        if len(per_pipe) == 1 and self._sharding is None and not self._pmap_compatible:
            return per_pipe[0]
        out = {}
        for name in self.output_map:
            arrays = [d[name] for d in per_pipe]
            specs = {(a.shape, a.dtype) for a in arrays}
            assert len(specs) == 1, f"Shards shapes have to be the same: output '{name}' has {sorted(map(str, specs))}"
            out[name] = self._global(arrays) if self._sharding is not None else self._combine(arrays)
        return out

    def _global(self, arrays: list[jax.Array]) -> jax.Array:
        shape = arrays[0].shape
        global_shape = (self._num_shards * shape[0],) + shape[1:]
        if global_shape not in self._checked_shard_shapes:
            expected = self._sharding.shard_shape(global_shape)
            if expected != shape:
                raise ValueError(f"the sharding cuts a global batch of shape {global_shape} into shards of "
                                 f"{expected}, but each pipeline produces {shape}: the sharding may split "
                                 "only the batch dimension")
            self._checked_shard_shapes.add(global_shape)
        return jax.make_array_from_single_device_arrays(global_shape, self._sharding, arrays)

    def _combine(self, arrays: list[jax.Array]) -> jax.Array:
        devices = tuple(next(iter(a.devices())) for a in arrays)
        if len(set(devices)) == 1:
            return jnp.stack(arrays) if self._pmap_compatible else jnp.concatenate(arrays)
        if len(set(devices)) != len(devices):
            raise AssertionError("JAX iterator requires shards to be placed on different devices or all on "
                                 f"the same device, got {devices}")
        sharding = self._stacking_shardings.get(devices)
        if sharding is None:
            sharding = NamedSharding(Mesh(np.array(devices), ("pipelines",)), PartitionSpec("pipelines"))
            self._stacking_shardings[devices] = sharding
        shape = arrays[0].shape
        if self._pmap_compatible:
            return jax.make_array_from_single_device_arrays((len(arrays),) + shape, sharding,
                                                            [jnp.expand_dims(a, 0) for a in arrays])
        return jax.make_array_from_single_device_arrays((len(arrays) * shape[0],) + shape[1:], sharding, arrays)


# ---- data_iterator ------------------------------------------------------------------------------
_DEFAULT_NUM_THREADS = 4


def _inject(kwargs: dict, name: str, value: Any) -> None:
    if name in kwargs:
        raise ValueError(f"Duplicate argument {name}: data_iterator sets it for every pipeline in "
                         "multi-device mode; do not pass it to the iterator factory")
    kwargs[name] = value


def _data_iterator_impl(iterator_type: type, pipeline_fn: Callable | None, output_map: Sequence[str],
                        size: int, reader_name: str | None, auto_reset: Any, last_batch_padded: bool,
                        last_batch_policy: LastBatchPolicy, prepare_first_batch: bool,
                        sharding: Sharding | None, devices: Sequence[jax.Device] | None,
                        pmap_compatible: bool | None) -> Callable:
    if sharding is not None and devices is not None:
        raise ValueError("Only one of `sharding` and `devices` arguments can be provided.")
    if devices is not None and pmap_compatible is None:
        pmap_compatible = True

    def decorate(func: Callable) -> Callable:
        params = inspect.signature(func).parameters
        make_pipeline = pipeline_def(func)

        @functools.wraps(func)
        def create_iterator(*args: Any, checkpoints: Sequence[Any] | None = None, **kwargs: Any) -> Any:
            kwargs.setdefault("num_threads", _DEFAULT_NUM_THREADS)
            iterator_args = dict(output_map=output_map, size=size, reader_name=reader_name, auto_reset=auto_reset,
                                 last_batch_padded=last_batch_padded, last_batch_policy=last_batch_policy,
                                 prepare_first_batch=prepare_first_batch, sharding=sharding,
                                 pmap_compatible=pmap_compatible)
            if sharding is None and devices is None:
                kwargs.setdefault("device_id", 0)
                extra = {"checkpoint": checkpoints[0]} if checkpoints else {}
                return iterator_type([make_pipeline(*args, **kwargs, **extra)], **iterator_args)
            if devices is not None:
                if jax.local_device_count() != jax.device_count():
                    raise RuntimeError("data_iterator(devices=...) makes pmap-style outputs, which do not span "
                                       "processes; with jax.distributed use sharding= instead")
                plan, num_shards = [(d, k) for k, d in enumerate(devices)], len(devices)
            else:
                plan, num_shards = shard_plan(sharding)
            if "batch_size" not in kwargs:
                raise ValueError("data_iterator in multi-device mode needs batch_size (the global batch) "
                                 "in the call of the iterator factory")
            global_batch = kwargs.pop("batch_size")
            if global_batch % num_shards:
                raise ValueError(f"the global batch_size {global_batch} does not split evenly over {num_shards} "
                                 "shards")
            if checkpoints and len(checkpoints) != len(plan):
                raise RuntimeError(f"{len(checkpoints)} checkpoints given for {len(plan)} local devices")
            if num_shards > 1 and not {"shard_id", "num_shards"} <= set(params):
                warnings.warn(f"'{func.__name__}' does not take shard_id and num_shards, so every one of the "
                              f"{num_shards} shards reads the same data", stacklevel=2)
            # a pipeline's device_id is its device's CUDA ordinal, JAX's local_hardware_id: under
            # jax.distributed(local_device_ids=[k]) GPU k is a process's only local device
            local_ids = {d: i if d.local_hardware_id is None else d.local_hardware_id
                         for i, d in enumerate(jax.local_devices(backend=plan[0][0].platform))}
            pipelines = []
            for k, (device, shard_id) in enumerate(plan):
                call = dict(kwargs, batch_size=global_batch // num_shards)
                _inject(call, "device_id", local_ids[device])
                if "shard_id" in params:
                    _inject(call, "shard_id", shard_id)
                if "num_shards" in params:
                    _inject(call, "num_shards", num_shards)
                if checkpoints:
                    call["checkpoint"] = checkpoints[k]
                pipelines.append(make_pipeline(*args, **call))
            return iterator_type(pipelines, **iterator_args)

        return create_iterator

    return decorate(pipeline_fn) if pipeline_fn is not None else decorate


def data_iterator(pipeline_fn: Callable | None = None, output_map: Sequence[str] = (), size: int = -1,
                  reader_name: str | None = None, auto_reset: Any = False, last_batch_padded: bool = False,
                  last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL, prepare_first_batch: bool = True,
                  sharding: Sharding | None = None, devices: Sequence[jax.Device] | None = None,
                  pmap_compatible: bool | None = None) -> Callable:
    """Turns a graph function into a factory of ``DALIGenericIterator``s (api.md §17).

    Usable bare (``data_iterator(fn, output_map=...)``) or as ``@data_iterator(...)``. The factory
    takes the pipeline's arguments (``batch_size``, ``num_threads`` — 4 if not given —,
    ``device_id``, ``seed``, ``prefetch_queue_depth``, ...), the function's own, and
    ``checkpoints=``. With ``sharding`` (or ``devices``) it builds one pipeline per local device:
    ``batch_size`` is then the global batch, and ``shard_id``/``num_shards`` are passed to the
    function when it declares them (so its reader reads that device's shard).
    """
    return _data_iterator_impl(DALIGenericIterator, pipeline_fn, output_map, size, reader_name, auto_reset,
                               last_batch_padded, last_batch_policy, prepare_first_batch, sharding, devices,
                               pmap_compatible)
