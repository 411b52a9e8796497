"""Arithmetic expressions (_expressions.py) on penstock and DALI: values, types and layouts, or the
error class and DALI's words."""
import pytest

from _expressions import EXPRESSIONS
from _harness import check_case


@pytest.mark.parametrize("case", EXPRESSIONS, ids=[c.id for c in EXPRESSIONS])
def test_expression_case(case):
    check_case(case)
