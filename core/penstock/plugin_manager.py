"""Loading operator plugin libraries: shared libraries built against penstock's C ABI
(``penstock_plugin.h``, in ``sysconfig.get_include_dir()``), whose operators register like built-in
ones (``fn``, ``ops``, the dynamic mode, argument checking, docs). DALI's own C++ plugins are built
against DALI's headers and registry, which penstock has not got: loading one says so."""
from __future__ import annotations

import os

from .operators import custom as _custom

_LOADED: dict[str, list[str]] = {}  # real path -> the names of the operators it declared


def load_library(library_path: str, global_symbols: bool = False) -> None:
    """Loads a plugin library and declares its operators (a library loaded before: nothing to do).
    ``global_symbols``: its symbols become visible to libraries loaded after it (RTLD_GLOBAL)."""
    key = os.path.realpath(library_path)
    if key in _LOADED:
        return
    if not os.path.exists(library_path):
        raise RuntimeError(f"Cannot load the operator plugin library {library_path!r}: no such file")
    _LOADED[key] = [s.name for s in _custom.load_library(library_path, global_symbols)]


def load_directory(plugin_dir_path: str, global_symbols: bool = False) -> None:
    """Loads every plugin library (``*.so``) of a directory, in name order."""
    if not os.path.isdir(plugin_dir_path):
        raise RuntimeError(f"Cannot load the operator plugins of {plugin_dir_path!r}: not a directory")
    for name in sorted(os.listdir(plugin_dir_path)):
        if name.endswith(".so") or ".so." in name:
            load_library(os.path.join(plugin_dir_path, name), global_symbols)


def loaded_libraries() -> dict[str, list[str]]:
    """Each loaded library (real path) with the operators it declared."""
    return {path: list(names) for path, names in _LOADED.items()}
