"""Every Python block of README.md and of the plugins' READMEs runs, on small generated JPEGs (the
docs' pages: test_docs.py).

A README's blocks run in order in one namespace (a later block may use what an earlier one
defined), with the README's data folders replaced by a generated one. Of a ``diff`` block the
new side runs (its ``+`` and context lines). A GPU block (``device_id=0``, ``device="mixed"``)
runs in its CPU form here, and as written under the ``gpu`` marker.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
from make_sample_data import make_dataset  # noqa: E402

READMES = ["README.md", "plugins/pytorch/README.md", "plugins/jax/README.md", "plugins/tensorflow/README.md"]
DATA_FOLDERS = ("/data/imagenet/train", "/data/train")  # the folders the READMEs name
FRAMEWORK = {"plugins/pytorch/README.md": "torch", "plugins/jax/README.md": "jax",
             "plugins/tensorflow/README.md": "tensorflow"}
# what makes a GPU block run on the CPU
CPU_FORM = [(r"device_id=0\b", "device_id=None"), (r'device="mixed"', 'device="cpu"'), (r"\.gpu\(\)", "")]


def blocks(readme: str) -> list[tuple[int, str]]:
    """(first line, code) of each python block and of the new side of each diff block."""
    with open(os.path.join(ROOT, readme)) as f:
        lines = f.read().splitlines()
    found, start, kind = [], None, None
    for number, line in enumerate(lines, 1):
        if start is None and line in ("```python", "```diff"):
            start, kind, code = number + 1, line[3:], []
        elif start is not None and line == "```":
            found.append((start, "\n".join(code) + "\n"))
            start = None
        elif start is not None:
            if kind == "diff":
                if line.startswith("-"):
                    code.append("")  # the old side: blank, so line numbers stay the README's
                    continue
                line = line[1:]
            code.append(line)
    return found


def is_gpu(code: str) -> bool:
    return any(re.search(pattern, code) for pattern, _ in CPU_FORM[:2])


def cpu_form(code: str) -> str:
    for pattern, replacement in CPU_FORM:
        code = re.sub(pattern, replacement, code)
    return code


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("readme")), classes=2, per_class=4, size=(64, 80))


def run_readme(readme: str, folder: str, on_gpu: bool, after_gpu_blocks: list | None = None) -> dict:
    """The namespace after every block ran; ``after_gpu_blocks`` gets a copy of it after each GPU
    block (later blocks may rebind its names)."""
    namespace: dict = {"__name__": "__readme__"}
    for line, code in blocks(readme):
        gpu = is_gpu(code)
        if not on_gpu and gpu:
            code = cpu_form(code)
        for path in DATA_FOLDERS:
            code = code.replace(f'"{path}"', repr(folder))
        exec(compile("\n" * (line - 1) + code, os.path.join(ROOT, readme), "exec"), namespace)
        if gpu and after_gpu_blocks is not None:
            after_gpu_blocks.append(dict(namespace))
    return namespace


def test_every_readme_has_python_blocks():
    for readme in READMES:
        assert blocks(readme), f"{readme} has no python block"
    assert any(is_gpu(code) for _, code in blocks("plugins/pytorch/README.md"))  # the docs' GPU blocks: test_docs.py


@pytest.mark.parametrize("readme", READMES)
def test_readme_code_runs_on_the_cpu(readme, image_folder):
    if readme in FRAMEWORK:
        pytest.importorskip(FRAMEWORK[readme])
    namespace = run_readme(readme, image_folder, on_gpu=False)
    if readme == "README.md":
        images = namespace["images"]
        assert len(images) == 8 and images.at(0).shape == (3, 224, 224)  # crop_mirror_normalize gives CHW
    elif readme == "plugins/pytorch/README.md":
        assert tuple(namespace["images"].shape) == (8, 3, 224, 224)  # the folder's 8 images (PARTIAL)
    elif readme == "plugins/jax/README.md":
        assert namespace["batch"]["images"].shape == (256, 224, 224, 3)
    else:
        assert namespace["history"].history["loss"]  # model.fit ran on the dataset


@pytest.mark.gpu
@pytest.mark.parametrize("readme", ["plugins/pytorch/README.md"])
def test_readme_code_runs_as_written_on_the_gpu(readme, image_folder):
    from penstock import backend
    if not backend.cuda_available():
        pytest.skip("needs a CUDA device")
    after_gpu_blocks: list = []
    run_readme(readme, image_folder, on_gpu=True, after_gpu_blocks=after_gpu_blocks)
    images = after_gpu_blocks[-1]["images"]
    assert images.is_cuda and tuple(images.shape) == (8, 3, 224, 224)
