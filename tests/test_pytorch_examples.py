"""examples/pytorch/train_classifier.py: the DataLoader and penstock loaders feed the same loop."""
from __future__ import annotations

import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "pytorch"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import train_classifier as example  # noqa: E402
from make_sample_data import make_dataset  # noqa: E402

@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("folder")), classes=3, per_class=5, size=(48, 60))


def first_batch(kind, root, batch_size=4):
    return example.unpack(kind, next(iter(example.make_loader(kind, root, batch_size, 0 if kind == "torch" else 1))))


def test_reference_loader_batches(image_folder):
    images, labels = first_batch("torch", image_folder)
    assert images.shape == (4, 3, example.SIZE, example.SIZE) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and set(labels.tolist()) <= {0, 1, 2}


def test_penstock_loader_gives_the_same_kind_of_batches(image_folder):
    ref_images, ref_labels = first_batch("torch", image_folder)
    images, labels = first_batch("penstock", image_folder)
    assert images.shape == ref_images.shape and images.dtype == ref_images.dtype
    assert labels.shape == ref_labels.shape and labels.dtype == ref_labels.dtype
    # normalized with the same statistics: the value ranges agree
    assert abs(images.mean().item() - ref_images.mean().item()) < 0.5


def test_both_loaders_train(image_folder):
    results = example.main(["--data", image_folder, "--steps", "6", "--batch-size", "4", "--workers", "1"])
    assert [r["loader"] for r in results] == ["torch", "penstock"]
    assert all(math.isfinite(r["first_loss"]) and math.isfinite(r["last_loss"]) for r in results)
