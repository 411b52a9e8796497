"""Every operator case of the differential table (tests/differential/_cases.py: each operator with
its required arguments, then each argument set to valid, boundary and invalid values) called
through the dynamic mode gives what the same call gives in a pipeline: the same values exactly
(random operators too, given the seed the dynamic mode draws), or an error where the pipeline
raises one."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "differential"))

import penstock  # noqa: E402
import penstock.experimental.dynamic as ndd  # noqa: E402
from _cases import operator_cases  # noqa: E402
from _dynamic import SEED, has_function, run_dynamic  # noqa: E402
from _harness import compare, run  # noqa: E402
from penstock._registry import schemas  # noqa: E402

CASES = [c for c in operator_cases() if has_function(ndd, c.op)]


class _SeededFn:
    """penstock.fn whose random operators take the seed the dynamic mode draws from RNG(SEED)."""
    _random = {s.fn_name for s in schemas().values() if s.is_random}

    def __init__(self, module, path=""):
        self._module, self._path = module, path

    def __getattr__(self, name):
        target, path = getattr(self._module, name), f"{self._path}{name}"
        if not callable(target):
            return _SeededFn(target, path + ".")
        if path not in self._random:
            return target

        def call(*args, **kwargs):
            return target(*args, seed=ndd.random.draw_seed(ndd.random.RNG(seed=SEED)), **kwargs)
        return call


class _SeededPenstock:
    fn = _SeededFn(penstock.fn)
    types = penstock.types
    pipeline_def = staticmethod(penstock.pipeline_def)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_operator_gives_in_dynamic_mode_what_it_gives_in_a_pipeline(case):
    pipeline = run(_SeededPenstock, case.graph, case.inputs)
    dynamic = run_dynamic(ndd, penstock.types, case.graph, case.inputs)
    if pipeline.error is not None:
        assert dynamic.error is not None, f"the pipeline raises {pipeline.message!r}; the dynamic mode does not"
        return
    assert dynamic.error is None, f"the dynamic mode raises {dynamic.message!r}; the pipeline does not"
    assert compare(dynamic, pipeline, tolerance=0) is None
