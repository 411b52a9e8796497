"""Makes ``penstock.plugin.<name>`` the module of a separately installed plugin distribution."""
from __future__ import annotations

import importlib
import sys


def install(alias: str, module: str, distribution: str) -> None:
    """Replaces the shim module ``alias`` by ``module`` (from ``distribution``) in sys.modules,
    along with the submodules it loaded (so ``alias.sub`` is ``module.sub``, not a second copy)."""
    try:
        impl = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise ImportError(f"{alias} needs the '{distribution}' distribution, which is not installed: "
                          f"pip install {distribution} (from plugins/ in the penstock repository)") from None
    sys.modules[alias] = impl
    for name, sub in list(sys.modules.items()):
        if name.startswith(module + "."):
            sys.modules[alias + name[len(module):]] = sub
