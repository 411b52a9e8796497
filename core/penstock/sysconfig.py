"""Build settings of operator plugins: a plugin is built against penstock's C ABI header
(``penstock_plugin.h``) alone and links to nothing of penstock (the engine hands it what it calls)."""
from __future__ import annotations

import os

from .operators.custom import include_dir


def get_include_dir() -> str:
    """The folder of ``penstock_plugin.h``."""
    return include_dir()


def get_lib_dir() -> str:
    """The penstock package's folder; a plugin links to no library of it."""
    return os.path.dirname(os.path.abspath(__file__))


def get_include_flags() -> list:
    return [f"-I{get_include_dir()}"]


def get_compile_flags() -> list:
    """Flags a plugin is compiled with: the include folder, position-independent code."""
    return get_include_flags() + ["-fPIC"]


def get_link_flags() -> list:
    """Flags a plugin is linked with: a shared library, nothing of penstock to link."""
    return ["-shared"]
