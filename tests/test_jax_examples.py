"""examples/jax: the getting-started walk-through and the Flax training loop run end to end."""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "jax"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from make_sample_data import make_dataset  # noqa: E402


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("folder")), classes=4, per_class=6, size=(60, 80))


def test_getting_started_walks_every_image_once_per_epoch(image_folder):
    import getting_started
    report = getting_started.main(["--data", image_folder, "--batch", "4"])
    devices = len(jax.devices())
    assert len(report["single"]) == 24 // 4
    assert len(report["sharded"]) == math.ceil(math.ceil(24 / devices) / 4)
    for means in report["single"] + report["sharded"]:
        assert means.shape == (4,) and np.all((means >= 0) & (means <= 255))


@pytest.fixture(scope="module")
def color_classes(tmp_path_factory):
    """Four classes a small CNN can learn in a few steps: each class is one colour, with noise."""
    from PIL import Image
    root = tmp_path_factory.mktemp("colors")
    rng = np.random.default_rng(0)
    for k, color in enumerate([(200, 40, 40), (40, 200, 40), (40, 40, 200), (128, 128, 128)]):
        os.makedirs(root / f"class_{k}")
        for i in range(6):
            pixels = np.clip(np.array(color) + rng.normal(0, 20, (48, 64, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / f"class_{k}" / f"{i}.jpg", quality=90)
    return str(root)


def test_train_flax_lowers_the_loss(color_classes):
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    import train_flax
    losses = train_flax.main(["--data", color_classes, "--steps", "12", "--batch", "8", "--lr", "1e-2"])
    assert len(losses) == 12 and all(np.isfinite(losses))
    assert np.mean(losses[-4:]) < losses[0]


def test_multiprocess_example_assembles_global_arrays_over_two_processes(image_folder):
    """examples/jax/multiprocess.py on the CPU: two jax.distributed processes of one host device
    each, their shards one global array, every epoch each sample on one process only."""
    import json
    import subprocess
    script = os.path.join(HERE, "..", "examples", "jax", "multiprocess.py")
    out = subprocess.run([sys.executable, script, "--processes", "2", "--cpu", "--data", image_folder, "--batch", "4",
                          "--threads", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert (report["processes"], report["devices"], report["global_batch"]) == (2, 2, 8)
    assert report["zero_copy"] and report["steps"] == 2 * 3  # 12 samples a process: 3 batches of 4
    assert [e["distinct"] for e in report["epochs"]] == [24, 24] and all(e["ok"] for e in report["epochs"])
