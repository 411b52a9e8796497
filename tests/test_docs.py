"""The documentation's code runs: every ```python block of docs/ (the READMEs': test_readme.py), each page's
blocks in order in one namespace, as a reader would paste them, in a folder of their own that
holds `images` (a folder of sample JPEGs, one subfolder per class, as the pages assume). Blocks
whose first line starts with `# GPU` run only in the GPU tests (the `gpu` marker, `make gpu-test`).
Also: the site builds with warnings as errors (`make docs` does the same)."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

from penstock import _cuda
from penstock._registry import schemas, withdraw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
sys.path.insert(0, os.path.join(ROOT, "examples"))
from make_sample_data import make_dataset  # noqa: E402

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
GPU_MARK = "# GPU"


def pages() -> list[str]:
    found = sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))
    return [p for p in found if os.sep + "api" + os.sep not in p and os.sep + "_build" + os.sep not in p]


def blocks(page: str) -> list[tuple[int, str]]:
    """(line, code) of each Python block of ``page``."""
    with open(page) as f:
        text = f.read()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


def name(page: str) -> str:
    return os.path.relpath(page, ROOT)


def has_gpu_blocks(page: str) -> bool:
    return any(code.startswith(GPU_MARK) for _, code in blocks(page))


def run_page(page: str, folder, with_gpu: bool) -> int:
    """Runs the page's blocks in ``folder``; returns how many ran."""
    make_dataset(str(folder / "images"), classes=2, per_class=8, size=(120, 160))
    namespace: dict = {"__name__": "__docs__"}
    declared = set(schemas())
    ran = 0
    try:
        for line, code in blocks(page):
            if code.startswith(GPU_MARK) and not with_gpu:
                continue
            exec(compile(code, f"{name(page)}:{line}", "exec"), namespace)  # noqa: S102 - the docs' own code
            ran += 1
    finally:  # custom operators a page declares leave with it (plugins' operators stay)
        for operator in set(schemas()) - declared:
            if schemas()[operator].origin:
                withdraw(operator)
    return ran


@pytest.mark.parametrize("page", [p for p in pages() if blocks(p)], ids=name)
def test_page_runs_on_the_cpu(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_page(page, tmp_path, with_gpu=False) > 0 or has_gpu_blocks(page)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
@pytest.mark.parametrize("page", [p for p in pages() if has_gpu_blocks(p)], ids=name)
def test_page_runs_with_its_gpu_blocks(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_page(page, tmp_path, with_gpu=True) == len(blocks(page))


def test_site_builds_without_warnings(tmp_path):
    """The site as `make docs` builds it (make test installs requirements-docs.txt), its API
    reference generated from the registry."""
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                             DOCS, str(tmp_path / "html")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-5000:]
    with open(tmp_path / "html" / "api" / "fn.readers.html") as f:
        assert "fn.readers.file" in f.read()
