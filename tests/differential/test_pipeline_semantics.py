"""Pipeline semantics (_pipeline_semantics.py) step by step on penstock and DALI 2.4: every step's
value, or its error (catchable as DALI's class, with DALI's words where its tests match them)."""
import re

import pytest

from _harness import dali_words, run_dali, settle, _squeezed
from _pipeline_semantics import SCENARIOS, WORDS, run_dali_scenario
from known_differences import INTENDED, OPEN


def _unnamed(message: str) -> str:
    """A message without the generated names of operators (``__ExternalSource_3``), which differ."""
    return re.sub(r"__[A-Za-z]+_\d+", "<operator>", message)


def _differs(ours: tuple, theirs: tuple, words: bool) -> str | None:
    if theirs[0] == "ok" or ours[0] == "ok":
        if ours == theirs:
            return None
        return f"penstock gives {ours!r:.300}, DALI {theirs!r:.300}"
    if theirs[1][0] not in ours[1]:
        return f"DALI raises {theirs[1][0]} ({theirs[2]!r:.200}), penstock {ours[1][0]} ({ours[2]!r:.200})"
    said = _unnamed(dali_words(re.sub(r"^(Critical error[^\n]*\n)+", "", theirs[2])).strip("'\""))
    if words and _squeezed(said) not in _squeezed(_unnamed(ours[2])):
        return f"penstock's error lacks DALI's words {said!r}: {ours[2]!r:.300}"
    return None


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pipeline_semantics(name):
    import penstock
    ours = SCENARIOS[name](penstock)
    theirs = run_dali(name, run_dali_scenario)
    if not isinstance(theirs, list):
        pytest.fail(f"{name}: the DALI process failed ({theirs.message})")
    diff = None if len(ours) == len(theirs) else f"{len(ours)} steps, DALI {len(theirs)}"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        diff = diff or (lambda d: d and f"step {k}: {d}")(_differs(a, b, name in WORDS))
    case = f"semantics:{name}"
    settle(case, INTENDED.get(case) or OPEN.get(case), diff)
