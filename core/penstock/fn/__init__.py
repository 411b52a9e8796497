"""Functional operator API: ``fn.resize(images, size=...)``. Generated from the registry."""
import sys as _sys

from .. import operators as _operators  # noqa: F401  (importing them declares every operator)
from .._generate import fill_fn as _fill_fn

_fill_fn(_sys.modules[__name__])

from . import _conditional  # noqa: E402,F401  (fn._conditional.split/merge/not_/validate_logical)
