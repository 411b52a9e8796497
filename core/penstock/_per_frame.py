"""Per-frame arguments (``fn.per_frame``): an operator given a sequence input (layout ``F...``) and
an argument input whose layout starts with ``F`` (one value per frame) runs on the frames as a
batch of their own. Sequence inputs are unfolded into their frames (views, no copy), per-frame
argument inputs into one sample per frame, other argument inputs repeated for every frame of
their sample; the outputs are folded back into sequences (``F`` prepended to their layouts). So
every operator that takes per-sample argument inputs takes per-frame ones, as DALI's sequence
operators do."""
from __future__ import annotations

from typing import Any

import numpy as np


def has_per_frame_args(ws: Any) -> bool:
    return bool(ws.inputs) and ws.inputs[0]._layout.startswith("F") and any(
        tl._layout.startswith("F") for tl in ws.arg_inputs.values())


def _frames_of(tl: Any, counts: np.ndarray, label: str, what: str) -> Any:
    """The samples of ``tl`` (``F...``, ``counts[i]`` frames each) as one sample per frame; an
    argument's sample of one frame serves every frame of its sequence (as DALI). Mismatches are
    refused in DALI's words (``what``: "input k" or "argument `name`")."""
    if tl._shapes.shape[1] < 1:
        raise ValueError(f"{label}: {what} has no frames (a 0-D sample)")
    frames = tl._shapes[:, 0]
    single = np.zeros(len(tl), bool) if what.startswith("input") else frames == 1
    bad = np.nonzero((frames != counts) & ~single)[0]
    if bad.size:
        i = int(bad[0])
        if what.startswith("input"):
            raise ValueError(f"{label}: The input 0 and the {what} have different number of frames for sample {i}, "
                             f"respectively: {counts[i]} and {frames[i]}")
        raise ValueError(f"{label}: The sample {i} of tensor {what} contains {frames[i]} per-frame parameters, but "
                         f"there are {counts[i]} frames in the corresponding sample of input 0. The numbers should "
                         "match.")
    inner = tl._shapes[:, 1:]
    frame_vol = inner.prod(axis=1) if inner.shape[1] else np.ones(len(tl), np.int64)
    sample = np.repeat(np.arange(len(tl)), counts)
    index = np.arange(len(sample)) - np.repeat(np.cumsum(counts) - counts, counts)
    offsets = tl._offsets[sample] + np.where(single[sample], 0, index) * frame_vol[sample]
    info = [tl._source_info[i] for i in sample] if tl._source_info else None
    return type(tl)._from_packed(tl._buf, np.ascontiguousarray(inner[sample]), offsets, tl._layout[1:], info)


def _repeated(tl: Any, counts: np.ndarray) -> Any:
    sample = np.repeat(np.arange(len(tl)), counts)
    info = [tl._source_info[i] for i in sample] if tl._source_info else None
    return type(tl)._from_packed(tl._buf, np.ascontiguousarray(tl._shapes[sample]), tl._offsets[sample], tl._layout,
                                 info)


def _folded(out: Any, counts: np.ndarray, source_info: list, label: str) -> Any:
    """One output sample per frame, back into one sequence per sample."""
    starts = np.cumsum(counts) - counts
    shapes = out._shapes
    vols = shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(out), np.int64)
    folded = []
    for i, (s, n) in enumerate(zip(starts, counts)):
        frames = shapes[s:s + n]
        if n and not (frames == frames[0]).all():
            raise ValueError(f"{label}: the frames of sample {i} came out in different shapes {frames.tolist()}; a "
                             "sequence needs frames of one shape")
        if n > 1 and not np.array_equal(np.diff(out._offsets[s:s + n]), vols[s:s + n - 1]):
            raise ValueError(f"{label}: the frames of sample {i} are not contiguous")
        folded.append(np.concatenate([[n], frames[0] if n else shapes[0] * 0]))
    seq_shapes = np.array(folded, np.int64)
    layout = "F" + out._layout if out._layout else ""
    return type(out)._from_packed(out._buf, seq_shapes, out._offsets[starts], layout, source_info)


def run_per_frame(op: Any, ws: Any) -> list:
    """``op.run`` over the frames of ``ws``'s sequences (see the module doc)."""
    import dataclasses
    first = ws.inputs[0]
    counts = first._shapes[:, 0].astype(np.int64)
    inputs = [_frames_of(tl, counts, op.label, f"input {k}") if tl._layout.startswith("F") else _repeated(tl, counts)
              for k, tl in enumerate(ws.inputs)]
    args = {name: _frames_of(tl, counts, op.label, f"argument `{name}`") if tl._layout.startswith("F")
            else _repeated(tl, counts) for name, tl in ws.arg_inputs.items()}
    frame_ws = dataclasses.replace(ws, inputs=inputs, arg_inputs=args, batch_size=int(counts.sum()))
    return [_folded(out, counts, first._source_info, op.label) for out in op.run(frame_ws)]
