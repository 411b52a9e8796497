"""Layouts: where the spatial dims, frames and channels of an image layout are (the image operators),
and the check of the layouts a schema accepts (the executor, for every operator that declares them)."""
from __future__ import annotations

import re

import numpy as np

from . import _engine
from ._registry import ArgumentValueError


def split_layout(label: str, layout: str, ndim: int) -> tuple[int, int]:
    """(first spatial dim, number of spatial dims) of a layout made of leading non-spatial dims
    (F, C ...), a run of spatial dims (D, H, W) and at most a trailing C. Without a layout,
    HW / HWC / DHWC are assumed from the number of dimensions."""
    if not layout:
        layout = {2: "HW", 3: "HWC", 4: "DHWC"}.get(ndim, "")
    if len(layout) != ndim or not re.fullmatch(r"[^DHW]*[DHW]+C?", layout):
        raise ValueError(f"{label}: cannot find the spatial dimensions in layout '{layout}' "
                         f"of {ndim}-D input")
    start = re.search(r"[DHW]", layout).start()
    count = len(re.search(r"[DHW]+", layout).group())
    return start, count


def convolution_axes(label: str, layout: str, ndim: int) -> tuple[int, int]:
    """(first spatial dim, number of spatial dims) as DALI's convolution operators (gaussian_blur,
    laplacian) read a layout: up to two leading frame / channel dims (F, C), an optional trailing C,
    every other letter a spatial dim (1 to 3 of them). Without a layout every dim is spatial.
    Refusals in DALI's words."""
    if not layout:
        if ndim > 3:
            raise ArgumentValueError(f"{label}: Input data with empty layout cannot have more than 3 dimensions, "
                                     f"got input with {ndim} dimensions.")
        return 0, ndim
    start = len(layout) - len(layout.lstrip("FC"))
    if start > 2:
        raise ArgumentValueError(f"{label}: Found more the one occurrence of 'F' or 'C' axes in layout: {layout}.")
    end = ndim - 1 if layout.endswith("C") and ndim > start else ndim
    if "C" in layout[start:end]:
        raise ArgumentValueError(f"{label}: Only channel-first or channel-last layouts are supported, got: {layout}.")
    if "F" in layout[start:end]:
        raise ArgumentValueError(f"{label}: For sequences, layout should begin with 'F' or 'C', got: {layout}.")
    if end <= start:
        raise ArgumentValueError(f"{label}: No spatial axes found in the layout: {layout}")
    if end - start > 3:
        raise ArgumentValueError(f"{label}: Too many dimensions, found: {end - start} data axes, maximum supported "
                                 "is: 3.")
    return start, end - start


def as_outer_spatial_channels(shapes: np.ndarray, start: int, count: int) -> np.ndarray:
    """[N, count + 2] shapes (outer, spatial..., channels): leading dims are merged into the
    outer extent, a trailing channel dim (or 1) is the last."""
    return _engine.outer_spatial_channels(shapes, start, count)  # numpy's [N, k] tables give the GIL away


def input_layout(op, tl, index: int = 0) -> str:
    """The layout operator ``op`` reads input ``index`` as: DALI's rule for the layouts a schema
    accepts (``OpSchema.input_layouts``), checked here for every operator that declares them.

    A layout must have one letter per dimension. Without declared layouts the input's own layout
    is used as is. An empty layout takes the first declared layout with as many dimensions (so a
    4-D batch without a layout is read as FHWC by resize, never guessed as a volume); a layout, or
    a number of dimensions, that none of the declared ones matches is an error naming them.
    """
    layout, ndim = tl._layout, tl.ndim()
    if layout and len(layout) != ndim:
        raise ArgumentValueError(f"{op.label}: the layout '{layout}' of input {index} is not valid for "
                         f"{ndim}-dimensional samples")
    allowed = op.schema.input_layouts
    if not allowed:
        return layout
    # the refusals in DALI's words, which code written for it matches
    valid = "Valid layouts are:\n" + "\n".join(allowed)
    if not layout:
        match = next((l for l in allowed if len(l) == ndim), None)
        if match is None:
            raise ArgumentValueError(f"{op.label}: The number of dimensions {ndim} does not match any of the allowed "
                                     f"layouts for input {index}. {valid}\n(The samples have no layout.)")
        return match
    if layout not in allowed:
        raise ArgumentValueError(f'{op.label}: The layout "{layout}" does not match any of the allowed layouts for '
                                 f"input {index}. {valid}")
    return layout
