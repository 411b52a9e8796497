"""Custom operators beyond DALI's, both ways:

1. a plugin library built against penstock's C ABI (plugin_ops.c: example.Threshold and
   example.Histogram), compiled here with the system's C compiler and loaded with
   penstock.plugin_manager.load_library;
2. an operator declared in Python (scale_shift.py: example.ScaleShift) with a C++ CPU kernel and a
   CUDA GPU kernel, compiled at first use.

    python examples/custom_operator/run.py        # on a CUDA machine the GPU kernel runs too
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import penstock
from penstock import fn, pipeline_def, plugin_manager, sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale_shift  # noqa: E402


def build_plugin(folder: str) -> str:
    """libexample_ops.so from plugin_ops.c, built against penstock_plugin.h alone."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler found (set CC, or install gcc)")
    target = os.path.join(folder, "libexample_ops.so")
    subprocess.run([compiler, "-O2", *sysconfig.get_compile_flags(), *sysconfig.get_link_flags(),
                    os.path.join(HERE, "plugin_ops.c"), "-o", target], check=True)
    return target


def images(count: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (8 + 4 * i, 12, 3), dtype=np.uint8) for i in range(count)]


@pipeline_def(batch_size=4, num_threads=2)
def custom_pipeline(data: list, device: str):
    x = fn.external_source(lambda: data, batch=True, layout="HWC")
    mask = fn.example.threshold(x, threshold=fn.random.uniform(range=[64, 192]), values=[0, 1])
    counts = fn.example.histogram(x, bins=8)
    scaled = fn.example.scale_shift(fn.cast(x, dtype=penstock.types.FLOAT).gpu() if device == "gpu"
                                    else fn.cast(x, dtype=penstock.types.FLOAT), scale=1 / 255, shift=-0.5)
    return mask, counts, scaled


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        plugin_manager.load_library(build_plugin(folder))
    scale_shift.declare()
    data = images()
    devices = ["cpu"] + (["gpu"] if penstock.backend.cuda_available() else [])
    for device in devices:
        pipe = custom_pipeline(data, device, device_id=0 if device == "gpu" else None)
        mask, counts, scaled = pipe.run()
        scaled = scaled.as_cpu()
        print(f"[{device}] mask of sample 0 (first row): {mask.at(0)[0, :, 0]}")
        print(f"[{device}] histogram of sample 0 (8 bins): {counts.at(0)}")
        print(f"[{device}] scale_shift of sample 0: min {scaled.at(0).min():.3f} max {scaled.at(0).max():.3f}")
        assert counts.at(0).sum() == data[0].size


if __name__ == "__main__":
    main()
