"""Data-dependent ``if``/``and``/``or``/``not`` in pipeline definitions (``enable_conditionals=True``)."""
from ._transform import convert

__all__ = ["convert"]
