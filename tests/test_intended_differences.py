"""docs/intended_differences.md lists every difference from DALI 2.4 that the differential tests
accept on purpose (tests/differential/known_differences.py): a case id there that the page does not
name fails here, so the page and the list change together. Runs without DALI."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "differential"))
import known_differences as known  # noqa: E402

with open(os.path.join(HERE, "..", "docs", "intended_differences.md"), encoding="utf-8") as f:
    PAGE = f.read()

CASES = {**known.INTENDED, **{k: v for k, v in known.DYNAMIC_INTENDED.items() if v is not None},
         **known.TORCHVISION_INTENDED}


def _named(case_id: str, reason: str) -> bool:
    """The id itself, or its argument part beside the operator's name in code quotes (a row for
    several operators), or the shared reason of the dynamic mode's argument passing."""
    if f"`{case_id}`" in PAGE or (reason == known._DALI_DYNAMIC_ARGS and "_DALI_DYNAMIC_ARGS" in PAGE):
        return True
    op, bracket, rest = case_id.partition("[")
    return bool(bracket) and f"[{rest}`" in PAGE and f"`{op}`" in PAGE


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_every_intended_difference_is_on_the_page(case_id):
    assert _named(case_id, CASES[case_id]), f"{case_id} is intended in known_differences.py but not in the page"


def test_the_page_is_one_table_of_its_kinds():
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and not line.startswith("| Kind")
            and not line.startswith("| ---")]
    kinds = {row.split("|")[1].strip() for row in rows}
    assert kinds == {"richer", "stricter", "documented", "numerics", "dynamic mode", "TorchVision API"}
    assert len(rows) >= len({c.partition("[")[0].partition(":")[0] for c in known.INTENDED}) // 2
