"""Differences from DALI 2.4 the differential table knows about, by case id.

INTENDED: penstock differs on purpose (the reason says why). OPEN: found, not fixed yet; listed so
the table stays a regression check while they are worked on. A case here that starts to agree
with DALI is reported (xpass) so it can be removed.
"""

INTENDED: dict[str, str] = {}

OPEN: dict[str, str] = {}
