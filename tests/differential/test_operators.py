"""Every registered operator and argument (valid, boundary and invalid values), on penstock and DALI."""
import pytest

import penstock
from _cases import operator_cases
from _harness import HAVE_DALI, TALLY, compare, run, run_dali
from known_differences import INTENDED, OPEN

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
    ours = run(penstock, case.graph, case.inputs)
    theirs = run_dali(case)
    diff = compare(ours, theirs, random=case.random, tolerance=case.tolerance)
    TALLY["cases"] += 1
    reason = INTENDED.get(case.id) or OPEN.get(case.id)
    if diff is None:
        if reason:
            pytest.fail(f"{case.id} agrees with DALI now: remove it from known_differences.py")
        return
    TALLY["differ"] += 1
    if reason:
        TALLY["known"] += 1
        pytest.xfail(f"{reason}: {diff}")
    pytest.fail(f"{case.id}: {diff}")
