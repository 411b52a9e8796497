"""Experimental parts of the PyTorch plugin (``penstock.plugin.pytorch.experimental``)."""
from . import proxy

__all__ = ["proxy"]
