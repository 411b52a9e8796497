"""Helpers for code that extends penstock's generated modules (DALI code reaches them here)."""
from __future__ import annotations

import importlib
import sys
import types


def get_submodule(root: types.ModuleType | str, path: str | list | tuple) -> types.ModuleType:
    """The submodule of ``root`` (a module or its name) at ``path`` ("a.b" or ["a", "b"]),
    importing or creating each level that is not there yet."""
    if isinstance(root, str):
        root = sys.modules[root]
    parts = path.split(".") if isinstance(path, str) else list(path)
    for part in filter(None, parts):
        name = f"{root.__name__}.{part}"
        module = getattr(root, part, None)
        if module is None:
            try:
                module = importlib.import_module(name)  # an existing module is not replaced
            except ModuleNotFoundError:
                module = sys.modules[name] = types.ModuleType(name)
            setattr(root, part, module)
        elif not isinstance(module, types.ModuleType):
            raise RuntimeError(f'The module {root} already contains an attribute "{part}", which is not a '
                               f"module, but {module}")
        root = module
    return root
