"""examples/video/video_classification.py on the CPU: normalized CFHW clips and labels reach PyTorch,
and every clip is a crop of the frames the reader decoded."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("av")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "video"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import video_classification as example  # noqa: E402
from make_video_data import write_clips  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("clips"))
    write_clips(folder, count=4, frames=36, height=120, width=160, classes=2)
    return folder


def test_clips_and_labels_reach_pytorch(root):
    seen = 0  # one epoch: a clip of 16 frames 2 apart from each 36-frame video
    labels = []
    for batch in example.loader(root, batch_size=3):
        clips, label = batch[0]["clips"], batch[0]["labels"]
        assert clips.dtype == torch.float32 and tuple(clips.shape[1:]) == (3, example.FRAMES, example.SIZE,
                                                                             example.SIZE)
        # normalized with the Kinetics statistics: roughly zero mean, unit spread
        assert abs(float(clips.mean())) < 1.0 and 0.3 < float(clips.std()) < 2.0
        seen += clips.shape[0]
        labels += label.view(-1).tolist()
    assert seen == 4 and sorted(labels) == [0, 0, 1, 1]


def test_frames_of_a_clip_move_smoothly(root):
    batch = next(iter(example.loader(root, batch_size=2)))[0]["clips"][0].numpy()  # [3, F, H, W]
    steps = np.abs(np.diff(batch, axis=1)).mean()
    spread = np.abs(batch - batch.mean()).mean()
    assert 0 < steps < spread  # consecutive frames of one camera move, not unrelated images
