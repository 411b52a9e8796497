"""A GPU resize whose only reader is a GPU crop_mirror_normalize, run as one operator.

Training pipelines resize each decoded image, then crop, mirror, normalize and lay it out
(``fn.resize`` -> ``fn.crop_mirror_normalize``). Run as one, the resize's horizontal pass stores
each pixel of the crop window straight into the normalized output (csrc/cuda/resize.cu,
``resize_h_*_cmn_*``), with the arithmetic of the two kernels: the resized batch is neither
allocated nor written and read back, and a batch takes one upload of parameters and one engine call
of launches instead of two of each. (Its Python per batch is about the two operators'; on an H200
the training rate it fed did not differ beyond the runs' spread: docs/benchmarks.md.)

Batches the fused pass does not cover run the two operators one after the other, as they would
unfused: sequences and volumes, layouts other than HWC, output layouts that need a transposition,
crop windows reaching outside the resized image.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from .. import _engine
from .._batch import contiguous
from .._executor import pipeline_error
from .._operator import Operator, Workspace
from ..types import to_numpy_type
from .crop_mirror_normalize import CropMirrorNormalize, output_order
from .resize import Resize, resized

class FusedNode:
    """The graph node of two operators run as one: the first's inputs, the second's outputs and
    identity, and both operators' argument inputs (keyed ``0:name`` and ``1:name``)."""
    scope = None
    batch_ref = None
    selects_samples = False

    def __init__(self, first: Any, second: Any):
        self.id, self.name, self.schema, self.device = second.id, second.name, second.schema, second.device
        self.args, self.outputs, self.explicit_name = second.args, second.outputs, second.explicit_name
        self.inputs = list(first.inputs)
        self.arg_inputs = {**{f"0:{k}": d for k, d in first.arg_inputs.items()},
                           **{f"1:{k}": d for k, d in second.arg_inputs.items()}}


class ResizeNormalize(Operator):
    """``resize`` and ``normalize`` (its only reader) as one GPU operator. It answers to the
    normalization's name (its outputs are that operator's), checks its input as the resize, and
    profiles as both (``fn_name`` "resize + crop_mirror_normalize")."""
    pairs_iterations = True

    def __init__(self, resize: Resize, normalize: CropMirrorNormalize):  # noqa: super().__init__ takes a node
        self.resize, self.normalize = resize, normalize
        self.node = FusedNode(resize.node, normalize.node)
        # its input is the resize's (the executor checks its layout against the resize's schema)
        self.schema = dataclasses.replace(resize.schema, fn_name=f"{resize.schema.fn_name} + "
                                                                 f"{normalize.schema.fn_name}", internal=True)
        self.label = resize.label
        self.args, self.name, self.device, self.seed = normalize.args, normalize.name, "gpu", normalize.seed

    def _parts(self, ws: Workspace) -> tuple[Workspace, dict]:
        resize_args = {k[2:]: v for k, v in ws.arg_inputs.items() if k.startswith("0:")}
        normalize_args = {k[2:]: v for k, v in ws.arg_inputs.items() if k.startswith("1:")}
        return dataclasses.replace(ws, arg_inputs=resize_args, op=self.resize), normalize_args

    def run(self, ws: Workspace) -> list:
        src = contiguous(ws.inputs[0])
        resize_ws, normalize_args = self._parts(ws)
        normalize_ws = dataclasses.replace(ws, inputs=[], arg_inputs=normalize_args, op=self.normalize)
        try:
            layout, first, out_sizes, rois, minf, magf = self.resize.planned(resize_ws, src)
            mid_shapes, mid_type = resized(self.resize, src, first, out_sizes, self.resize.args["dtype"])
        except Exception as exc:
            raise pipeline_error(self.resize, exc, [src]) from exc
        cdim, after = (output_order(self.normalize.args["output_layout"], layout, layout)
                       if layout == "HWC" else (None, None))
        if cdim is None or after is not None:
            return self._one_then_the_other(resize_ws, normalize_ws, src)
        try:
            plan = self.normalize.plan(normalize_ws, mid_shapes, layout, mid_type, cdim)
        except Exception as exc:
            raise pipeline_error(self.normalize, exc, [src]) from exc
        out = ws.new_batch(plan.out_shapes, to_numpy_type(plan.dtype), plan.out_layout, src._source_info)
        rows = _engine.resize_normalize_plan(mid_shapes, plan.anchors, plan.windows, plan.mirror, out._offsets, cdim,
                                             plan.fill, plan.mean, plan.std, float(self.normalize.args["scale"]),
                                             float(self.normalize.args["shift"]))
        if not rows:  # a window reaches outside its resized image (crop_mirror_normalize's pad or trim)
            return self._one_then_the_other(resize_ws, normalize_ws, src)
        try:
            ws.kernels.resize_normalize(src._buf, src._shapes, src._offsets, int(src.dtype), mid_shapes, int(mid_type),
                                        rois, _per_axis(minf), _per_axis(magf), self.resize.args["antialias"],
                                        out._buf, int(plan.dtype), *rows)
        except Exception as exc:
            raise pipeline_error(self.resize, exc, [src]) from exc
        return [out]

    def _one_then_the_other(self, resize_ws: Workspace, normalize_ws: Workspace, src: Any) -> list:
        try:
            resized_batch = self.resize.run(resize_ws)[0]
        except Exception as exc:
            raise pipeline_error(self.resize, exc, [src]) from exc
        try:
            return self.normalize.run(dataclasses.replace(normalize_ws, inputs=[resized_batch]))
        except Exception as exc:
            raise pipeline_error(self.normalize, exc, [resized_batch]) from exc


def _per_axis(filters: np.ndarray) -> np.ndarray:
    """Per-sample filter codes as the kernels take them: [N, 2], one per spatial axis."""
    return np.repeat(np.asarray(filters, np.int32).reshape(-1, 1), 2, axis=1)


def fuse(stages: Sequence[Sequence[Operator]], output_refs: Sequence[tuple[int, int]]) -> list[list[Operator]]:
    """The stages with each GPU resize whose only reader is a GPU crop_mirror_normalize (its first
    input, in the same stage, outside conditional branches) replaced, with that reader, by one
    ResizeNormalize."""
    ops = [op for stage in stages for op in stage]
    readers: dict[tuple[int, int], list] = {}
    for op in ops:
        for d in op.node.inputs:
            readers.setdefault((d.source.id, d.index), []).append(op)
        for d in op.node.arg_inputs.values():
            readers.setdefault((d.source.id, d.index), []).append(None)
    for ref in output_refs:
        readers.setdefault(tuple(ref), []).append(None)
    fused: dict[int, Operator] = {}  # the normalization's id -> the fused operator
    dropped: set[int] = set()
    for stage in stages:
        for op in stage:
            users = readers.get((op.node.id, 0), [])
            if len(users) != 1 or not _fusable(op, users[0], stage):
                continue
            fused[id(users[0])] = ResizeNormalize(op, users[0])
            dropped.add(id(op))
    return [[fused.get(id(op), op) for op in stage if id(op) not in dropped] for stage in stages]


def _fusable(resize: Operator, normalize: Any, stage: Sequence[Operator]) -> bool:
    return (type(resize) is Resize and type(normalize) is CropMirrorNormalize
            and resize.device == normalize.device == "gpu" and normalize in stage
            and not resize.args.get("save_attrs")  # (the fused operator makes no attributes output)
            and len(normalize.node.inputs) == 1 and normalize.node.inputs[0].source is resize.node
            and all(n.scope is None and n.batch_ref is None for n in (resize.node, normalize.node)))
