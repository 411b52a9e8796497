"""reshape / reinterpret and the Python operators (_shape_and_python.py) on penstock and DALI."""
import pytest

from _harness import check_case
from _shape_and_python import SHAPE_AND_PYTHON


@pytest.mark.parametrize("case", SHAPE_AND_PYTHON, ids=[c.id for c in SHAPE_AND_PYTHON])
def test_shape_and_python_case(case):
    check_case(case)
