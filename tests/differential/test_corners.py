"""Corner cases of slice, squeeze and expand_dims (_corners.py) on penstock and DALI."""
import pytest

import penstock
from _corners import CORNERS
from _harness import TALLY, compare, run, run_dali
from known_differences import INTENDED, OPEN


@pytest.mark.parametrize("case", CORNERS, ids=[c.id for c in CORNERS])
def test_corner_case(case):
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
