"""What the distributions carry and what they ask of an install."""
import glob
import os
import subprocess
import sys
import tarfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_source_distribution_carries_the_engine_and_the_gpu_kernels(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=ROOT, check=True,
                   capture_output=True)
    (archive,) = glob.glob(str(tmp_path / "*.tar.gz"))
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    kernels = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "csrc", "cuda", "*.cu*"))}
    sources = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "csrc", "**", "*.[ch]*"), recursive=True)}
    assert kernels and kernels <= names  # compiled at run time from penstock/_cuda/src
    assert sources <= names and "LICENSE" in names
    assert not [n for n in names if ".so" in os.path.basename(n)]  # no built engine or private libraries


def test_distribution_names_are_our_own_and_the_plugins_depend_on_the_core():
    def project(path):
        with open(os.path.join(ROOT, path), "rb") as f:
            return tomllib.load(f)["project"]
    core = project("pyproject.toml")
    assert core["name"] == "penstock-data"  # "penstock" on PyPI is an unrelated project
    for folder in ("pytorch", "jax", "tensorflow"):
        plugin = project(f"plugins/{folder}/pyproject.toml")
        assert plugin["name"] == f"penstock-data-{folder}" and "penstock-data" in plugin["dependencies"]
    # tensorflow or tensorflow-cpu: neither is named
    assert not [d for d in project("plugins/tensorflow/pyproject.toml")["dependencies"] if d.startswith("tensorflow")]


def test_the_tensorflow_plugin_without_tensorflow_says_what_to_install():
    code = ("import sys; sys.modules['tensorflow'] = None\n"
            "try:\n    import penstock.plugin.tf\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [os.path.join(ROOT, "core"), os.path.join(ROOT, "plugins", "tensorflow")])})
    assert "pip install tensorflow (or tensorflow-cpu)" in out.stdout
