"""The pickler that sends callbacks to spawned workers by value (DALI code names it here)."""
from .pickling import Pickler as DaliCallbackPickler

__all__ = ["DaliCallbackPickler"]
