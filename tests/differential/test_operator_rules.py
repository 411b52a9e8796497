"""Operator rules DALI's own operator tests rely on (_operator_rules.py), on penstock and DALI."""
import pytest

from _harness import check_case
from _operator_rules import RULES


@pytest.mark.parametrize("case", RULES, ids=[c.id for c in RULES])
def test_operator_rule(case):
    check_case(case)
