"""examples/dynamic: the getting-started script and the training loop fed by ndd.readers.File."""
import importlib.util
import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from make_sample_data import make_dataset  # noqa: E402


def _example(name):
    """examples/dynamic/<name>.py under a name of its own (examples of other folders share its file names)."""
    spec = importlib.util.spec_from_file_location(f"dynamic_{name}", os.path.join(HERE, "..", "examples", "dynamic",
                                                                                   f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


getting_started, train_loop = _example("getting_started"), _example("train_loop")


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("folder")), classes=2, per_class=6, size=(56, 72))


def test_getting_started(image_folder):
    result = getting_started.main(["--data", image_folder, "--batch", "4"])
    assert result["image"] == (56, 72, 3)
    assert result["batch"] == [4, 3, 96, 96] and result["torch"] == (4, 3, 96, 96)


def test_training_loop_trains_and_resumes_with_the_same_batches(image_folder):
    result = train_loop.main(["--data", image_folder, "--epochs", "2", "--batch", "4"])
    assert result["steps"] == 6
    assert math.isfinite(result["first_loss"]) and math.isfinite(result["last_loss"])
    assert result["resumed_same_batches"]
