"""examples/pytorch/train_classifier.py --device cuda: penstock decodes and augments on the GPU."""
from __future__ import annotations

import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")
from penstock import _cuda  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not (_cuda.available() and torch.cuda.is_available()),
                                                  reason="needs CUDA (CuPy and CUDA-enabled torch)")]

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "pytorch"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import train_classifier as example  # noqa: E402
from make_sample_data import make_dataset  # noqa: E402


def test_both_loaders_train_on_the_gpu(tmp_path):
    root = make_dataset(str(tmp_path), classes=3, per_class=5, size=(48, 60))
    images, labels = example.unpack("penstock", next(iter(example.make_loader("penstock", root, 4, 1, "cuda"))))
    assert images.is_cuda and labels.is_cuda and images.shape == (4, 3, example.SIZE, example.SIZE)
    results = example.main(["--data", root, "--steps", "6", "--batch-size", "4", "--workers", "1", "--device", "cuda"])
    assert [(r["loader"], r["device"]) for r in results] == [("torch", "cuda"), ("penstock", "cuda")]
    assert all(math.isfinite(r["first_loss"]) and math.isfinite(r["last_loss"]) for r in results)
