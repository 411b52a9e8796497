"""Functional operator API: ``fn.resize(images, size=...)``. Generated from the registry."""
from .._generate import ensure_populated as _ensure_populated

_ensure_populated()
