"""The iterator contract shared by the framework plugins (api.md §15)."""
from __future__ import annotations

import enum


class LastBatchPolicy(enum.IntEnum):
    """What an iterator does with the last, incomplete batch of an epoch."""
    FILL = 0      # return it full: the extra samples are whatever the reader produces next
    DROP = 1      # do not return it
    PARTIAL = 2   # return only the samples that belong to the epoch
