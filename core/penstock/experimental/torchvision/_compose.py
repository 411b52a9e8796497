"""Chains of transforms: ``Compose`` (a penstock pipeline for PIL images and tensors, as DALI's
Compose runs them) and ``RandomApply``."""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from ... import fn
from ...pipeline import pipeline_def
from ..._conditionals import _scope
from ...data_node import DataNode
from .. import dynamic as ndd
from ._base import Spec, Transform, probability, to_dynamic
from ._params import params_for


def _chain(transforms: Sequence[Transform], x: Any, spec: Spec) -> tuple[Any, Spec]:
    for t in transforms:
        x, spec = t.apply(x, spec), t.out_spec(spec)
    return x, spec


def _output_kind(transforms: Sequence[Transform]) -> str | None:
    kinds = [t.output_kind for t in transforms if t.output_kind is not None]
    return kinds[-1] if kinds else None


class RandomApply(Transform):
    """The transforms, applied in order to each image with probability ``p`` (per image). In a
    pipeline this is a data-dependent branch: the pipeline needs ``enable_conditionals=True``
    (Compose's has it)."""

    def __init__(self, transforms: Sequence[Transform], p: float = 0.5, device: str = "cpu"):
        super().__init__(device)
        self.transforms, self.p = list(transforms), probability(p)
        self.output_kind = _output_kind(self.transforms)

    def apply(self, x: Any, spec: Spec) -> Any:
        if _chain_spec(self.transforms, spec) != spec:
            raise ValueError("RandomApply's transforms must keep the images' layout and type (the images "
                             "it leaves alone keep theirs)")
        if self.device == "gpu":
            x = x.gpu()
        P = params_for(x, spec.layout)
        return P.where_per_sample(P.coin(self.p), lambda y: _chain(self.transforms, y, spec)[0], lambda y: y)


def _chain_spec(transforms: Sequence[Transform], spec: Spec) -> Spec:
    for t in transforms:
        spec = t.out_spec(spec)
    return spec


class Compose(Transform):
    """Transforms in a row. On PIL images and torch tensors (CHW, or NCHW batches of up to
    ``batch_size`` images) it runs them as a penstock pipeline (built once per kind of input, with
    ``num_threads`` threads and the given pipeline arguments), as DALI's Compose does; on
    DataNodes and dynamic-mode data it applies them in turn."""

    def __init__(self, transforms: Sequence[Transform], batch_size: int = 16, num_threads: int | None = None,
                 **pipeline_kwargs: Any):
        super().__init__("cpu")
        self.transforms = list(transforms)
        self.batch_size = batch_size
        self.num_threads = num_threads or max(1, (os.cpu_count() or 2) // 2)
        self._pipeline_kwargs = pipeline_kwargs
        self._pipelines: dict = {}
        self.output_kind = _output_kind(self.transforms)

    def apply(self, x: Any, spec: Spec) -> Any:
        return _chain(self.transforms, x, spec)[0]

    def out_spec(self, spec: Spec) -> Spec:
        return _chain_spec(self.transforms, spec)

    def __call__(self, inpt: Any, layout: str | None = None) -> Any:
        if isinstance(inpt, (DataNode, ndd.Tensor, ndd.Batch)):
            return super().__call__(inpt, layout)
        data, spec, back = to_dynamic(inpt)
        on_gpu = data.device.device_type == "gpu"
        many = isinstance(data, ndd.Batch)
        dense = ndd.as_tensor(data) if many else data
        if on_gpu:
            import cupy
            arr = cupy.asarray(dense)
        else:
            arr = np.asarray(dense)
        batch = arr if many else arr[None]
        if len(batch) > self.batch_size:
            raise ValueError(f"{len(batch)} images given at once; this Compose takes at most batch_size="
                             f"{self.batch_size}")
        pipe = self._pipeline(spec, on_gpu)
        out = ndd.as_batch(pipe.run(input_data=batch)[0])
        return back(out if many else out.tensors[0], self.output_kind)

    def _pipeline(self, spec: Spec, on_gpu: bool) -> Any:
        key = (spec, on_gpu)
        if key not in self._pipelines:
            uses_gpu = on_gpu or any(t.device == "gpu" for t in self.transforms)

            @pipeline_def(batch_size=self.batch_size, num_threads=self.num_threads,
                          device_id=0 if uses_gpu else None, prefetch_queue_depth=1, **self._pipeline_kwargs)
            def graph():
                x = fn.external_source(name="input_data", layout=spec.layout, device="gpu" if on_gpu else "cpu")
                with _scope.defining():  # RandomApply's branches (no `if` here to convert)
                    return self.apply(x, spec)

            self._pipelines[key] = graph()
        return self._pipelines[key]

    def __repr__(self) -> str:
        inner = "\n".join(f"    {t!r}" for t in self.transforms)
        return f"Compose(\n{inner}\n)"

