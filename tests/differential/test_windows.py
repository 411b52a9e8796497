"""The window operators' corners (_windows.py) on penstock and DALI: outputs, or the error class
and DALI's words."""
import pytest

from _harness import check_case
from _windows import WINDOWS


@pytest.mark.parametrize("case", WINDOWS, ids=[c.id for c in WINDOWS])
def test_window_case(case):
    check_case(case)
