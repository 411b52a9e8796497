"""examples/demo.py, the README's first command (`make demo`): its pipeline's outputs agree with the
files it reads."""
import importlib.util
import os

import numpy as np
from PIL import Image

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _demo():
    spec = importlib.util.spec_from_file_location("penstock_demo", os.path.join(EXAMPLES, "demo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_pipeline_outputs_match_its_files(tmp_path):
    demo = _demo()
    root = demo.make_dataset(str(tmp_path / "images"), classes=2, per_class=20, size=(60, 80))
    jpegs, labels, kilobytes, score, images = demo.demo_pipeline(root).run()
    by_bytes = {}
    for label, cls in enumerate(sorted(os.listdir(root))):
        for name in os.listdir(os.path.join(root, cls)):
            path = os.path.join(root, cls, name)
            with open(path, "rb") as f:
                by_bytes[f.read()] = (label, path)
    positions = set()
    for i in range(len(jpegs)):
        label, path = by_bytes[jpegs.at(i).tobytes()]
        assert int(labels.at(i)[0]) == label
        kib = os.path.getsize(path) / 1024.0
        np.testing.assert_allclose(kilobytes.at(i)[0], kib, rtol=1e-6)
        position = (kib * 0.5 + label - float(score.at(i)[0])) / 0.01  # score = kib/2 + label - position/100
        assert abs(position - round(position)) < 1e-2
        positions.add(round(position))
        assert images.at(i).shape == (224, 224, 3)
        decoded = np.asarray(Image.open(path).convert("RGB").resize((224, 224), Image.BILINEAR), np.float32)
        assert np.abs(images.at(i).astype(np.float32) - decoded).mean() < 2  # the same picture, resampled alike
    assert positions == set(range(len(jpegs)))  # each sample's place in the epoch, from Python
