"""The dynamic mode against DALI 2.4's (``nvidia.dali.experimental.dynamic``, on the CPU): the
operator table (every operator and argument of test_operators.py) called through both dynamic
modes, and the mode's own API (_dynamic_api.py: tensors, batches, arithmetic, indexing, evaluation
modes, random state, readers)."""
import builtins

import pytest

import penstock.experimental.dynamic as ndd
import penstock.types
from _cases import operator_cases
from _dynamic import has_function, run_dali_dynamic, run_dynamic
from _dynamic_api import CASES as API_CASES, ApiCase, make_data, run_dali_api
from _harness import BUILTIN_ERRORS, HAVE_DALI, compare, run_dali, settle
from known_differences import DYNAMIC_INTENDED, DYNAMIC_OPEN, DYNAMIC_UNDEFINED, INTENDED

OPERATOR_CASES = [c for c in operator_cases() if has_function(ndd, c.op)]


@pytest.mark.parametrize("case", OPERATOR_CASES, ids=[c.id for c in OPERATOR_CASES])
def test_operator_in_dynamic_mode(case):
    import nvidia.dali.experimental.dynamic as dali_ndd
    if not has_function(dali_ndd, case.op):
        pytest.skip(f"DALI 2.4's dynamic mode has no {case.op}")
    if case.id in DYNAMIC_UNDEFINED:
        pytest.skip(DYNAMIC_UNDEFINED[case.id])
    ours = run_dynamic(ndd, penstock.types, case.graph, case.inputs)
    theirs = run_dali_dynamic(case)
    diff = compare(ours, theirs, random=case.random, tolerance=case.tolerance)
    settle(f"dynamic:{case.id}", DYNAMIC_INTENDED.get(case.id, INTENDED.get(case.id)), diff)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("dynamic_data")
    if HAVE_DALI:
        make_data(str(root))
    return str(root)


def _api_diff(name: str, data_dir: str) -> str | None:
    theirs = run_dali(ApiCase(name, data_dir), run_dali_api)
    try:
        ours, error = ("value", API_CASES[name](ndd, data_dir)), None
    except Exception as e:  # noqa: BLE001 - compared with DALI's outcome
        ours, error = None, e
    if not isinstance(theirs, tuple):  # the DALI process crashed
        return None if error is not None else "DALI crashes; penstock does not fail"
    if theirs[0] == "error":
        want = getattr(builtins, theirs[1])
        if error is None:
            return f"DALI raises {theirs[1]} ({theirs[2]}); penstock gives {ours[1]!r}"[:400]
        if not isinstance(error, want):
            return f"DALI raises {want.__name__} ({theirs[2]}), penstock {type(error).__name__} ({error}), which " \
                   f"`except {want.__name__}` misses"
        return None
    if error is not None:
        cls = next(c for c in type(error).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return f"penstock raises {cls.__name__} ({error}); DALI gives {theirs[1]!r}"[:400]
    return None if ours[1] == theirs[1] else f"penstock {ours[1]!r}\nDALI     {theirs[1]!r}"[:2000]


@pytest.mark.parametrize("name", sorted(API_CASES))
def test_dynamic_api(name, data_dir):
    settle(f"dynamic api:{name}", DYNAMIC_INTENDED.get(name) or DYNAMIC_OPEN.get(name), _api_diff(name, data_dir))
