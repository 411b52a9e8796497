"""What ``import nvidia.dali`` holds and where operators live, on penstock and DALI: the package's
public submodules (code reaches them as attributes: ``dali.pickling.pickle_by_value``) and the
deprecated paths of operators that moved (``fn.experimental.decoders.image``), run on both."""
import dataclasses
import subprocess
import sys
from typing import Any

import pytest

from _harness import HAVE_DALI, check_case, settle

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
                       {}, random=True)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("case", MOVED, ids=[c.id for c in MOVED])
def test_moved_operator_case(case):
    check_case(case)
