"""Every registered operator and argument (valid, boundary and invalid values), on penstock and DALI."""
import pytest

from _cases import operator_cases
from _harness import HAVE_DALI, check_case

CASES = operator_cases()


def _dali():
    import nvidia.dali as dali
    return dali


def _has_op(lib, op):
    f = lib.fn
    for part in op.split("."):
        if not hasattr(f, part):
            return False
        f = getattr(f, part)
    return True


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_operator_case(case):
    dali = _dali() if HAVE_DALI else None
    if not _has_op(dali, case.op):
        pytest.skip(f"DALI 2.4 has no fn.{case.op}")
    check_case(case)
