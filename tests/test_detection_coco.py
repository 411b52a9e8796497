"""examples/detection_coco.py: the SSD pipeline runs end to end and its targets are consistent."""
import os
import sys

import numpy as np

import penstock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from detection_coco import make_coco_like, ssd300_anchors, ssd_pipeline  # noqa: E402


def test_anchors_are_the_8732_ssd300_boxes():
    a = ssd300_anchors()
    assert a.shape == (8732, 4)
    assert (a >= 0).all() and (a <= 1).all() and (a[:, 2:] > a[:, :2]).all()


def test_ssd_pipeline_gives_images_and_encoded_targets(tmp_path):
    root, ann = make_coco_like(str(tmp_path), images=6, size=(120, 160))
    pipe = ssd_pipeline(penstock, root, ann, batch=3, threads=2, anchors=ssd300_anchors())
    for _ in range(2):
        images, boxes, labels = pipe.run()
        assert images.as_array().shape == (3, 3, 300, 300) and images.as_array().dtype == np.float32
        b, lab = boxes.as_array(), labels.as_array()
        assert b.shape == (3, 8732, 4) and lab.shape == (3, 8732)
        assert ((lab >= 0) & (lab <= 80)).all() and (lab > 0).any()
        assert (b[lab == 0] == 0).all()          # offsets of unmatched anchors are zero
        assert np.isfinite(b).all()
