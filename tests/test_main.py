"""``python -m penstock``: the installation's report, and the profile command."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.join(ROOT, p) for p in
                                                   ("core", "plugins/pytorch", "plugins/jax", "plugins/tensorflow"))}


def _run(*args):
    return subprocess.run([sys.executable, "-m", "penstock", *args], capture_output=True, text=True, check=True,
                          env=ENV, cwd=ROOT).stdout


def test_report_names_version_backends_and_each_plugin_with_its_framework():
    import penstock
    import torch
    out = _run()
    assert out.startswith(f"penstock {penstock.__version__} (penstock-data) in ")
    rows = {line.split("  ")[2].strip(): line for line in out.splitlines() if line.startswith("  yes") or
            line.startswith("  no ")}
    assert rows["native engine"].startswith("  yes")
    assert rows["penstock.plugin.pytorch"].startswith("  yes") and f"torch {torch.__version__}" in rows[
        "penstock.plugin.pytorch"]
    assert "penstock.plugin.jax" in rows and "penstock.plugin.tf" in rows
    assert any(name.startswith("nvImageCodec") for name in rows)
    assert "NVDEC (video decoding on the GPU)" in rows
    import av
    assert rows["PyAV (video reading and CPU decoding)"].endswith(f"  av {av.__version__}")
    assert rows["libsndfile (audio decoding)"].startswith("  yes")  # soundfile's, in the test set
    cuda = rows["CUDA (GPU pipelines)"]
    from penstock import backend
    assert cuda.startswith("  yes" if backend.cuda_available() else "  no ")
    if not backend.cuda_available():  # and what to install for it
        assert "CUDA (GPU pipelines): install the GPU extra" in out or "a CUDA driver and device" in out


def test_a_missing_framework_is_reported_with_what_to_install(monkeypatch):
    from penstock import __main__ as cli
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # as if it were not installed
    (tf,) = [c for c in cli.components() if c.name == "penstock.plugin.tf"]
    assert not tf.available and tf.install == "pip install tensorflow (or tensorflow-cpu)"
    assert "penstock.plugin.tf: pip install tensorflow (or tensorflow-cpu)" in cli.report()


def test_missing_video_libraries_are_reported_with_their_extras(monkeypatch):
    from penstock import __main__ as cli
    from penstock.operators import _video_nvdec
    monkeypatch.setitem(sys.modules, "av", None)
    monkeypatch.setattr(_video_nvdec, "load_pynvvideocodec", lambda: (None, "PyNvVideoCodec is not installed"))
    parts = {c.name: c for c in cli.components()}
    assert not parts["PyAV (video reading and CPU decoding)"].available
    nvdec = parts["NVDEC (video decoding on the GPU)"]
    assert not nvdec.available and nvdec.detail.startswith("PyNvVideoCodec is not installed")
    report = cli.report()
    assert "PyAV (video reading and CPU decoding): the video extra: pip install 'penstock-data[video]'" in report
    assert "pip install 'penstock-data[video-gpu]'" in report


def test_profile_command_prints_operators_and_the_bottleneck_and_writes_a_timeline(tmp_path):
    script = tmp_path / "pipe.py"
    script.write_text(
        "import numpy as np\n"
        "from penstock import fn, pipeline_def, types\n"
        "@pipeline_def(batch_size=4, num_threads=1, device_id=None)\n"
        "def pipe():\n"
        "    x = fn.external_source(source=lambda: [np.ones((64, 64, 3), np.uint8)] * 4, layout='HWC')\n"
        "    return fn.resize(x, resize_x=32, resize_y=32)\n")
    trace = tmp_path / "trace.json"
    out = _run("profile", f"{script}:pipe", "--batches", "5", "--trace", str(trace))
    assert out.startswith("5 batches of 4 in ")
    assert "resize#1" in out and "external_source#1" in out and "\nBottleneck: " in out
    events = json.loads(trace.read_text())["traceEvents"]
    runs = [e for e in events if e["ph"] == "X" and e["name"] == "resize#1"]
    assert len(runs) == 5 and all(e["dur"] >= 0 for e in runs)
    assert len([e for e in events if e.get("cat") == "consumer"]) == 5


def test_nvimgcodec_without_a_gpu_is_not_reported_as_gpu_decoding():
    from penstock import __main__ as cli
    without = cli._nvimgcodec_component("/site/nvidia/nvimgcodec", gpu=False)
    assert not without.available and "no usable GPU here: mixed decoders decode on the host" in without.detail
    assert cli._nvimgcodec_component("/site/nvidia/nvimgcodec", gpu=True).available
    assert not cli._nvimgcodec_component(None, gpu=True).available


def test_the_unrelated_penstock_project_installed_beside_is_reported(monkeypatch):
    import importlib.metadata
    from penstock import __main__ as cli
    monkeypatch.setattr(importlib.metadata, "packages_distributions",
                        lambda: {"penstock": ["penstock-data", "penstock"], "numpy": ["numpy"]})
    monkeypatch.setattr(cli, "_version", lambda *names: "penstock 0.2.5" if names == ("penstock",) else None)
    assert cli.foreign_distributions() == ["penstock 0.2.5"]
    assert "WARNING: penstock 0.2.5 is installed here too" in cli.report()
    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: {"penstock": ["penstock-data"]})
    assert cli.foreign_distributions() == [] and "WARNING" not in cli.report()


def test_without_cupy_the_cuda_row_names_the_gpu_extra(monkeypatch):
    from penstock import __main__ as cli
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if it were not installed
    cuda = {c.name: c for c in cli.components()}["CUDA (GPU pipelines)"]
    assert not cuda.available and cuda.detail == "CuPy is not installed"
    assert cuda.install.startswith("install the GPU extra for your CUDA version: pip install 'penstock-data[cuda13]'")
