"""Kernels compiled at run time: each ``csrc/cuda/<name>.cu`` (after ``common.cuh``) becomes one
CuPy RawModule. CuPy caches the compiled code on disk (``CUPY_CACHE_DIR``, by default
``~/.cupy/kernel_cache``) keyed by the source text, so a second start does not recompile."""
from __future__ import annotations

import functools
import os
from typing import Any

from ._runtime import require
from ._stream_queue import Kernel

_OPTIONS = ("--std=c++17",)


def _source_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(here, "src")  # wheels carry the sources as package data
    if os.path.isdir(shipped):
        return shipped
    repo = os.path.join(here, os.pardir, os.pardir, os.pardir, "csrc", "cuda")  # editable install
    if os.path.isdir(repo):
        return os.path.normpath(repo)
    raise RuntimeError("penstock's CUDA kernel sources (csrc/cuda) are missing from this installation")


def source(name: str) -> str:
    folder = _source_dir()
    with open(os.path.join(folder, "common.cuh")) as f:
        common = f.read()
    with open(os.path.join(folder, f"{name}.cu")) as f:
        return common + "\n" + f.read()


@functools.lru_cache(maxsize=None)
def compiled(code: str, device_id: int) -> Any:
    """The RawModule of CUDA source ``code`` for ``device_id``, compiled (custom operators' kernels too)."""
    cp = require()
    with cp.cuda.Device(device_id):
        mod = cp.RawModule(code=code, options=_OPTIONS)
        mod.compile()
    return mod


def module(name: str, device_id: int) -> Any:
    return compiled(source(name), device_id)


@functools.lru_cache(maxsize=None)
def kernel(name: str, kernel_name: str, device_id: int) -> Kernel:
    """The compiled kernel ``kernel_name`` of ``csrc/cuda/<name>.cu`` for ``device_id``."""
    return Kernel(module(name, device_id).get_function(kernel_name))
