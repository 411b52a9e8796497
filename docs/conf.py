"""Sphinx configuration of penstock's documentation (``make docs``; CI builds it with warnings as errors).

The pages are Markdown (MyST). The API reference under ``api/`` is written at each build from the
operator registry (``_ext/api_reference.py``), so it lists exactly the operators and arguments the
installed penstock declares.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))

import penstock  # noqa: E402

project = "penstock"
author = "the penstock authors"
release = version = penstock.__version__
copyright = "penstock authors"  # noqa: A001 - Sphinx's name

extensions = ["myst_parser", "api_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"penstock {release}"
html_static_path = ["_static"]
pygments_style = "sphinx"
