"""``imread``: image files read and decoded in one call."""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..._registry import get_schema
from . import _batch, _ops


def _encoded(path: Any) -> np.ndarray:
    return np.fromfile(str(path), np.uint8)


def imread(filepaths: Any, /, *, device: Any = "cpu", **kwargs: Any) -> Any:
    """Reads and decodes images: one path gives a Tensor, a list of paths a Batch. ``device="gpu"``
    decodes on the GPU; the other arguments are ``decoders.image``'s."""
    if isinstance(filepaths, (str, bytes)) or hasattr(filepaths, "__fspath__"):
        data, batch = _encoded(filepaths), None
    else:
        data = _batch.as_batch([_encoded(p) for p in filepaths], dtype=None)
        batch = data.batch_size
    return _ops.call(get_schema("decoders.Image"), (data,), kwargs, batch, device)


def _signature() -> inspect.Signature:
    """``filepaths``, ``device``, then ``decoders.image``'s arguments by keyword."""
    P = inspect.Parameter
    decoder = _ops.signature(get_schema("decoders.Image")).parameters.values()
    return inspect.Signature([P("filepaths", P.POSITIONAL_ONLY), P("device", P.KEYWORD_ONLY, default="cpu")]
                             + [p for p in decoder if p.kind is P.KEYWORD_ONLY and p.name not in ("batch_size", "device")])


imread.__signature__ = _signature()
