"""Alias of penstock.backend (DALI code imports both names)."""
from .backend import *  # noqa: F401,F403
from .backend import __all__  # noqa: F401
