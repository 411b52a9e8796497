"""What ``import nvidia.dali`` holds and where operators live, on penstock and DALI: the package's
public submodules (code reaches them as attributes: ``dali.pickling.pickle_by_value``), every path
of ``fn`` and ``ops`` (the deprecated ones warning as DALI's do: DeprecationWarning, naming the path
and what replaces it) and the deprecated paths of operators that moved (``fn.experimental.decoders.image``),
run on both."""
import dataclasses
import re
import subprocess
import sys
import types
import warnings
from typing import Any

import pytest

from _harness import HAVE_DALI, check_case, run_dali, settle

# DALI 2.4's fn paths penstock does not have yet (another issue's work)
NOT_YET = {"optical_flow", "OpticalFlow", "Compose"}

_SUBMODULES = ("import json, sys, types; import {name} as m; print(json.dumps(sorted("
               "k for k, v in vars(m).items() if isinstance(v, types.ModuleType) and not k.startswith('_'))))")


def _public_submodules(name: str) -> set:
    """The public submodules a fresh process holds as attributes of the package after importing it."""
    out = subprocess.run([sys.executable, "-c", _SUBMODULES.format(name=name)], capture_output=True, text=True,
                         check=True)
    return set(eval(out.stdout))  # noqa: S307 - our own json list


def test_every_public_submodule_of_dalis_package_is_one_of_penstocks():
    if not HAVE_DALI:
        pytest.skip("needs DALI")
    missing = _public_submodules("nvidia.dali") - _public_submodules("penstock")
    settle("package:public_submodules", None, f"penstock lacks {sorted(missing)}" if missing else None)


@dataclasses.dataclass
class MovedOperator:
    id: str
    path: str
    kwargs: dict
    inputs: tuple = ("jpegs",)
    random: bool = False
    tolerance: float = 1

    def graph(self, lib: Any, *nodes: Any) -> Any:
        f = lib.fn
        for part in self.path.split("."):
            f = getattr(f, part)
        return f(*nodes, **self.kwargs)


MOVED = [MovedOperator("moved:experimental.decoders.image", "experimental.decoders.image", {}),
         MovedOperator("moved:experimental.decoders.image_crop", "experimental.decoders.image_crop", {"crop": (8, 10)}),
         MovedOperator("moved:experimental.decoders.image_slice", "experimental.decoders.image_slice",
                       {"start": [2, 3], "shape": [5, 6], "axes": [0, 1]}),
         MovedOperator("moved:experimental.decoders.image_random_crop", "experimental.decoders.image_random_crop",
                       {}, random=True),
         MovedOperator("moved:experimental.peek_image_shape", "experimental.peek_image_shape", {}),
         MovedOperator("moved:image_decoder_crop", "image_decoder_crop", {"crop": (8, 10)}),
         MovedOperator("moved:experimental.tensor_resize", "experimental.tensor_resize",
                       {"sizes": [12, 16], "axes": [0, 1]}, ("images",)),
         MovedOperator("moved:experimental.hidden.tensor_resize", "experimental.hidden.tensor_resize",
                       {"sizes": [12, 16], "axes": [0, 1]}, ("images",)),
         MovedOperator("moved:experimental.filter", "experimental.filter", {}, ("images", "filters")),
         MovedOperator("moved:experimental.hidden.equalize", "experimental.hidden.equalize", {}, ("images",)),
         MovedOperator("moved:transform_translation", "transform_translation", {"offset": [1.0, 2.0]}, ()),
         MovedOperator("moved:hidden.transform_translation", "hidden.transform_translation", {"offset": [3.0]}, ()),
         MovedOperator("moved:ssd_random_crop", "ssd_random_crop", {}, ("images", "boxes", "box_labels"), random=True),
         MovedOperator("moved:hidden.ssd_random_crop", "hidden.ssd_random_crop", {"num_attempts": 3},
                       ("images", "boxes", "box_labels"), random=True),
         MovedOperator("moved:hidden.coin_flip", "hidden.coin_flip", {}, (), random=True),
         MovedOperator("moved:hidden.constant", "hidden.constant", {"fdata": [1.0, 2.0]}, ()),
         MovedOperator("moved:hidden.shapes", "hidden.shapes", {}, ("images",))]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("case", MOVED, ids=[c.id for c in MOVED])
def test_moved_operator_case(case):
    check_case(case)


def _paths(module: types.ModuleType, prefix: str = "") -> dict[str, Any]:
    """Every public callable under ``module`` (fn or ops) by dotted path, submodules walked."""
    out = {}
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or name == "count":  # ops.count: a counter of DALI's, not an operator
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__.startswith(module.__name__):
                out.update(_paths(value, f"{prefix}{name}."))
        elif callable(value):
            out[prefix + name] = value
    return out


def dali_deprecated_paths(_case: Any = None) -> dict:
    """DALI's operators' fn and ops paths, each with what its use warns: None, or the replacement fn path ("" for
    none) of a deprecated one (DALI warns from the operator's schema: its own, or the one it aliases)."""
    from nvidia.dali import backend, fn, ops
    from nvidia.dali.ops import _names
    result = {}
    for api, module in (("fn", fn), ("ops", ops)):
        for path, value in _paths(module).items():
            name = getattr(value, "_schema_name", None) or getattr(value, "schema_name", None)
            if name is None:  # not an operator (ops.python_op_factory ...)
                continue
            schemas = [backend.TryGetSchema(name, follow_aliases=False), backend.TryGetSchema(name)]
            deprecated = next((s for s in schemas if s is not None and s.IsDeprecated()), None)
            replacement = deprecated.DeprecatedInFavorOf() if deprecated is not None else None
            result[f"{api}.{path}"] = None if deprecated is None else (
                _names._op_name(replacement, "fn") if replacement else "")
    return result


def _penstock_warning(api: str, path: str) -> str | None:
    """What using penstock's ``api.path`` in a pipeline warns (DeprecationWarning), if anything."""
    import penstock
    target = getattr(penstock, api)
    for part in path.split("."):
        target = getattr(target, part)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with penstock.Pipeline(batch_size=1, num_threads=1, device_id=None):
                target() if api == "fn" else target()()  # no arguments: the warning comes before any error
        except Exception:  # noqa: BLE001 - only the warning is looked at
            pass
    return next((str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)), None)


@pytest.fixture(scope="module")
def dali_paths():
    if not HAVE_DALI:
        pytest.skip("needs DALI")
    return run_dali(None, dali_deprecated_paths)


def test_every_fn_and_ops_path_of_dali_is_one_of_penstocks(dali_paths):
    import penstock
    ours = {f"{api}.{p}" for api in ("fn", "ops") for p in _paths(getattr(penstock, api))}
    missing = sorted(p for p in dali_paths if p not in ours and p.rpartition(".")[2] not in NOT_YET)
    settle("package:fn_and_ops_paths", None, f"penstock lacks {missing}" if missing else None)


def test_deprecated_paths_warn_as_dalis_do(dali_paths):
    """Each path DALI deprecates warns in penstock too, naming itself and (where DALI names one) its
    replacement; the others do not warn."""
    wrong = []
    for full, replacement in sorted(dali_paths.items()):
        api, path = full.split(".", 1)
        if path.rpartition(".")[2] in NOT_YET:
            continue
        said = _penstock_warning(api, path)
        shown = re.sub(r"(^|\.)hidden\.", r"\1", path)   # a hidden place is named by the place it mirrors
        if replacement is None:
            if said is not None:
                wrong.append(f"{full} warns ({said!r}); DALI's does not")
        elif said is None or f"`penstock.{api}.{shown}` is now deprecated." not in said:
            wrong.append(f"{full}: warns {said!r}; DALI's names `nvidia.dali.{api}.{shown}` as deprecated")
        elif replacement and f"Use `penstock.fn.{replacement}` instead." not in said:
            wrong.append(f"{full}: warns {said!r}, not naming fn.{replacement} as DALI's does")
    settle("package:deprecation_warnings", None, "; ".join(wrong) or None)
