"""Corner cases of slice, squeeze and expand_dims (_corners.py) on penstock and DALI."""
import pytest

from _corners import CORNERS
from _harness import check_case


@pytest.mark.parametrize("case", CORNERS, ids=[c.id for c in CORNERS])
def test_corner_case(case):
    check_case(case)
