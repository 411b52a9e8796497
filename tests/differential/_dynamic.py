"""Runs the operator cases of the differential table in the dynamic mode.

A case is a graph function ``graph(lib, *inputs)`` calling ``lib.fn.<op>``; ``DynamicLib`` lets the
same function call a dynamic mode instead (``penstock.experimental.dynamic`` or DALI's
``nvidia.dali.experimental.dynamic``): its inputs are Batches, and random operators get
``rng=RNG(seed)`` where a pipeline gets a seed. The outcome is an ``Outcome`` as the pipeline
harness makes, so the same ``compare`` settles it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from _harness import BUILTIN_ERRORS, INPUTS, Outcome, _first_line, run_dali

SEED = 7
BATCH = 2  # the pipeline harness's batch size: operators without inputs make batches of it


class _Namespace:
    """``lib.fn`` over a dynamic mode: ``fn.experimental.x`` is the dynamic mode's
    ``experimental.x``, else its ``x`` (an operator that left experimental before DALI 2.0), and a
    random operator draws from ``RNG(SEED)``."""

    def __init__(self, module: Any, ndd: Any, fallback: Any = None):
        self._module, self._ndd, self._fallback = module, ndd, fallback

    def __getattr__(self, name: str) -> Any:
        if self._module is self._ndd and name == "experimental":
            return _Namespace(getattr(self._ndd, name, None), self._ndd, fallback=self._ndd)
        target = getattr(self._module, name, None)
        if target is None and self._fallback is not None:
            target = getattr(self._fallback, name, None)
        if target is None:
            raise AttributeError(f"the dynamic mode has no {name!r} here")
        if callable(target):
            return _with_rng(target, self._ndd, self._module is getattr(self._ndd, "random", None))
        return _Namespace(target, self._ndd)


def _with_rng(f: Callable, ndd: Any, random_module: bool) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("batch_size", BATCH)
        seed = kwargs.pop("seed", SEED)
        if "rng" in _parameters(f) or random_module:
            kwargs["rng"] = ndd.random.RNG(seed=seed)
        return f(*args, **kwargs)
    return call


def _parameters(f: Callable) -> set:
    import inspect
    try:
        return set(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return set()


class DynamicLib:
    """What a graph function needs of ``lib``, from a dynamic mode and its library's types."""

    def __init__(self, ndd: Any, types: Any):
        self.fn = _Namespace(ndd, ndd)
        self.types = types
        self.ndd = ndd


def run_dynamic(ndd: Any, types: Any, graph: Callable, inputs: list[str]) -> Outcome:
    """``graph`` called on Batches of the named inputs, in ``ndd``; its outputs evaluated."""
    lib = DynamicLib(ndd, types)
    try:
        batches = [ndd.batch(arrays, layout=layout) for arrays, layout in (INPUTS[k]() for k in inputs)]
        out = graph(lib, *batches)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return Outcome(outputs=[(o.dtype.type_id.name, o.layout or "", [np.array(t.cpu()) for t in o.tensors])
                                for o in outs])
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        cls = next(c for c in type(e).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return Outcome(error=e, error_class=cls.__name__, message=_first_line(e))


def has_function(ndd: Any, op: str) -> bool:
    """Whether a dynamic mode offers fn's operator ``op`` as a function."""
    f = _Namespace(ndd, ndd)
    for part in op.split("."):
        try:
            f = getattr(f, part)
        except AttributeError:
            return False
    return callable(f) and not isinstance(f, _Namespace)


def _run_dali_dynamic(case: Any) -> Outcome:
    import nvidia.dali.experimental.dynamic as dali_ndd
    import nvidia.dali.types as dali_types
    outcome = run_dynamic(dali_ndd, dali_types, case.graph, case.inputs)
    outcome.error = None  # exceptions do not cross processes; class and message do
    return outcome


def run_dali_dynamic(case: Any) -> Outcome:
    """``case`` in DALI's dynamic mode, in the harness's worker process (a crash is an outcome)."""
    return run_dali(case, _run_dali_dynamic)
