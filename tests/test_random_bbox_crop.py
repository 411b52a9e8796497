"""random_bbox_crop: every output checked against the window it reports, with numpy."""
import warnings

import numpy as np
import pytest

from penstock import fn, pipeline_def

from _util import run_es, samples


def _boxes(rng, counts, size=(0.05, 0.3)):
    out = []
    for m in counts:
        lo = rng.uniform(0, 1 - size[1], (m, 2))
        out.append(np.concatenate([lo, lo + rng.uniform(*size, (m, 2))], 1).astype(np.float32))
    return out


def _iou(win, boxes):
    lt = np.maximum(win[:2], boxes[:, :2])
    rb = np.minimum(win[2:], boxes[:, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area = (boxes[:, 2:] - boxes[:, :2]).prod(-1)
    return inter / ((win[2:] - win[:2]).prod() + area - inter), inter / area


def _check_boxes(win, boxes, labels, out_boxes, out_labels, out_idx=None):
    """Kept boxes are those centred in the window, clipped and mapped into it."""
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    keep = ((centre >= win[:2] - 1e-6) & (centre <= win[2:] + 1e-6)).all(1)
    ext = win[2:] - win[:2]
    want = np.concatenate([(np.clip(boxes[keep, :2], win[:2], win[2:]) - win[:2]) / ext,
                           (np.clip(boxes[keep, 2:], win[:2], win[2:]) - win[:2]) / ext], 1)
    np.testing.assert_allclose(out_boxes, want, atol=1e-5)
    np.testing.assert_array_equal(out_labels.reshape(-1), labels[keep])
    if out_idx is not None:
        np.testing.assert_array_equal(out_idx, np.nonzero(keep)[0])
    return keep


def _run(boxes, labels, **kw):
    return run_es(lambda b, l: tuple(fn.random_bbox_crop(b, l, **kw)), boxes, labels)


def test_defaults_keep_the_whole_image():
    rng = np.random.default_rng(0)
    boxes = _boxes(rng, [3, 2])
    labels = [np.arange(len(b), dtype=np.int32) for b in boxes]
    anchor, shape, ob, ol = _run(boxes, labels, seed=5)
    for i in range(2):
        np.testing.assert_allclose(anchor.at(i), [0, 0])
        np.testing.assert_allclose(shape.at(i), [1, 1])
        np.testing.assert_allclose(ob.at(i), boxes[i], atol=1e-6)


@pytest.mark.parametrize("all_boxes", [True, False])
def test_ssd_settings_windows_respect_scaling_aspect_and_iou(all_boxes):
    rng = np.random.default_rng(1)
    # one box per sample when every box must meet the threshold (else it may be unreachable)
    boxes = _boxes(rng, [1] * 8 if all_boxes else [4, 1, 6, 2, 3, 5, 1, 2], size=(0.3, 0.6))
    labels = [rng.integers(1, 90, len(b)).astype(np.int32) for b in boxes]
    anchor, shape, ob, ol, idx = _run(boxes, labels, seed=11, thresholds=[0.2, 0.3], allow_no_crop=False,
                                      scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=50,
                                      all_boxes_above_threshold=all_boxes, output_bbox_indices=True)
    for i in range(len(boxes)):
        a, s = anchor.at(i), shape.at(i)
        assert (a >= 0).all() and (a + s <= 1 + 1e-6).all()
        assert (s >= 0.3 - 1e-6).all() and (s <= 1 + 1e-6).all()
        assert 0.5 - 1e-5 <= s[0] / s[1] <= 2 + 1e-5
        win = np.concatenate([a, a + s])
        iou, _ = _iou(win, boxes[i])
        # the boxes meet the drawn threshold (>= the smallest one): all of them, or at least one
        assert (iou.min() if all_boxes else iou.max()) >= 0.2 - 1e-6
        keep = _check_boxes(win, boxes[i], labels[i], ob.at(i), ol.at(i), idx.at(i))
        assert keep.any()


def test_overlap_threshold_one_keeps_boxes_whole():
    rng = np.random.default_rng(2)
    boxes = _boxes(rng, [2, 3, 1])
    labels = [np.arange(len(b), dtype=np.int32) for b in boxes]
    anchor, shape, ob, ol = _run(boxes, labels, seed=3, thresholds=[1.0], threshold_type="overlap",
                                 allow_no_crop=False, scaling=[0.5, 1.0], aspect_ratio=[0.5, 2.0],
                                 num_attempts=100)
    for i in range(3):
        win = np.concatenate([anchor.at(i), anchor.at(i) + shape.at(i)])
        _, frac = _iou(win, boxes[i])
        assert frac.min() >= 1 - 1e-5
        _check_boxes(win, boxes[i], labels[i], ob.at(i), ol.at(i))


def test_any_box_mode_and_total_attempts_cap():
    rng = np.random.default_rng(4)
    boxes = _boxes(rng, [5, 5])
    labels = [np.arange(5, dtype=np.int32)] * 2
    # an impossible threshold with a cap: the best candidate (or the whole image) is returned, with a warning
    kwargs = dict(seed=1, thresholds=[1.01], allow_no_crop=False, all_boxes_above_threshold=False,
                  scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=4, total_num_attempts=12)
    with pytest.warns(RuntimeWarning, match=r"no cropping window met the requirements of samples \[0, 1\] in 12"):
        anchor, shape, ob, ol = _run(boxes, labels, **kwargs)
    for i in range(2):
        win = np.concatenate([anchor.at(i), anchor.at(i) + shape.at(i)])
        _check_boxes(win, boxes[i], labels[i], ob.at(i), ol.at(i))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = _run(boxes, labels, quiet=True, **kwargs)
    assert all(np.array_equal(q.at(i), o.at(i)) for q, o in zip(quiet, (anchor, shape, ob, ol)) for i in range(2))


def test_fixed_crop_shape_gives_absolute_windows():
    rng = np.random.default_rng(5)
    boxes = _boxes(rng, [3, 4])
    labels = [np.arange(len(b), dtype=np.int32) for b in boxes]
    anchor, shape, ob, ol = _run(boxes, labels, seed=2, crop_shape=[60, 40], input_shape=[100, 80],
                                 allow_no_crop=False)
    for i in range(2):
        a, s = anchor.at(i), shape.at(i)
        np.testing.assert_allclose(s, [60, 40])
        assert (a == np.round(a)).all() and 0 <= a[0] <= 40 and 0 <= a[1] <= 40
        win = np.concatenate([a / [100, 80], (a + s) / [100, 80]])
        _check_boxes(win, boxes[i], labels[i], ob.at(i), ol.at(i))


def test_xywh_layout_in_and_out():
    rng = np.random.default_rng(6)
    ltrb = _boxes(rng, [4])
    xywh = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in ltrb]
    labels = [np.arange(4, dtype=np.int32)]
    anchor, shape, ob, ol = _run(xywh, labels, seed=8, bbox_layout="xyWH", scaling=[0.4, 1.0],
                                 aspect_ratio=[0.5, 2.0], num_attempts=20)
    win = np.concatenate([anchor.at(0), anchor.at(0) + shape.at(0)])
    got = ob.at(0)
    _check_boxes(win, ltrb[0], labels[0], np.concatenate([got[:, :2], got[:, :2] + got[:, 2:]], 1), ol.at(0))


def test_same_seed_same_windows():
    rng = np.random.default_rng(7)
    boxes = _boxes(rng, [3, 3, 3])
    labels = [np.arange(3, dtype=np.int32)] * 3
    kw = dict(seed=9, thresholds=[0, 0.3, 0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=10)
    a1 = _run(boxes, labels, **kw)[0]
    a2 = _run(boxes, labels, **kw)[0]
    np.testing.assert_array_equal(a1.as_array(), a2.as_array())


def test_output_count_follows_inputs():
    rng = np.random.default_rng(8)
    boxes = _boxes(rng, [2])
    outs = run_es(lambda b: tuple(fn.random_bbox_crop(b, seed=1)), boxes)
    assert len(outs) == 3
    with pytest.raises(ValueError, match="threshold_type"):
        run_es(lambda b: tuple(fn.random_bbox_crop(b, threshold_type="area")), boxes)


@pytest.mark.filterwarnings("ignore:.*ssd_random_crop:DeprecationWarning")
def test_ssd_random_crop_crops_the_image_to_the_window_its_boxes_are_in():
    rng = np.random.default_rng(4)
    boxes = _boxes(rng, [3, 5, 1, 4] * 4)
    labels = [np.arange(len(b), dtype=np.int32) + 10 for b in boxes]
    images = [np.arange(40 * 60 * 3, dtype=np.int32).reshape(40, 60, 3) + k for k in range(len(boxes))]
    out_images, out_boxes, out_labels = run_es(lambda i, b, l: tuple(fn.ssd_random_crop(i, b, l, num_attempts=4)),
                                               images, boxes, labels, layouts=["HWC", None, None], seed=3)
    cropped = 0
    for img, b, lab, o_img, o_box, o_lab in zip(images, boxes, labels, samples(out_images), samples(out_boxes),
                                                samples(out_labels)):
        h, w = o_img.shape[:2]
        # the crop is the image's rows and columns from where its first pixel was
        y0, x0 = np.argwhere((img == o_img[0, 0]).all(-1))[0]
        np.testing.assert_array_equal(o_img, img[y0:y0 + h, x0:x0 + w])
        if (h, w) == (40, 60):  # no crop: the boxes as they were
            np.testing.assert_array_equal(o_box, b)
            continue
        cropped += 1
        assert 0.3 * 40 - 1 <= h and 0.3 * 60 - 1 <= w   # scaling in [0.3, 1]
        # the boxes kept are those centred in the window (the pixels' one, to a pixel), in its coordinates
        assert 0 < len(o_lab) <= len(lab) and set(o_lab.ravel()) <= set(lab)
        assert ((o_box >= 0) & (o_box <= 1)).all()
        centre = (b[:, :2] + b[:, 2:]) / 2
        inside = ((centre >= [(x0 - 1) / 60, (y0 - 1) / 40]) & (centre <= [(x0 + w + 1) / 60, (y0 + h + 1) / 40])).all(1)
        assert set(o_lab.ravel()) <= set(lab[inside])
    assert cropped > 4
    assert out_images.layout() == "HWC"
