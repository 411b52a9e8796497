"""``external_source`` and ``ExternalSource`` under the module name DALI code imports them from."""
from .fn import external_source
from .ops import ExternalSource

__all__ = ["external_source", "ExternalSource"]
