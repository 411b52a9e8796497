"""bb_flip, bbox_paste and box_encoder against numpy references."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples


def _boxes(rng, counts, ltrb=True):
    out = []
    for m in counts:
        lo = rng.uniform(0, 0.6, (m, 2))
        wh = rng.uniform(0.05, 0.4, (m, 2))
        out.append(np.concatenate([lo, lo + wh if ltrb else wh], 1).astype(np.float32))
    return out


def test_bb_flip_xywh_and_ltrb_with_per_sample_flags():
    rng = np.random.default_rng(1)
    boxes = _boxes(rng, [3, 0, 2], ltrb=False)
    hor = [np.int32(1), np.int32(0), np.int32(1)]
    ver = [np.int32(0), np.int32(1), np.int32(1)]
    out, = run_es(lambda b, h, v: fn.bb_flip(b, horizontal=h, vertical=v), boxes, hor, ver)
    for g, b, h, v in zip(samples(out), boxes, hor, ver):
        want = b.copy()
        if h:
            want[:, 0] = 1 - b[:, 0] - b[:, 2]
        if v:
            want[:, 1] = 1 - b[:, 1] - b[:, 3]
        np.testing.assert_allclose(g, want, atol=1e-6)
    boxes = _boxes(rng, [2], ltrb=True)
    out, = run_es(lambda b: fn.bb_flip(b, ltrb=True, vertical=1), boxes)
    b = boxes[0]
    want = np.stack([1 - b[:, 2], 1 - b[:, 3], 1 - b[:, 0], 1 - b[:, 1]], 1)
    np.testing.assert_allclose(out.at(0), want, atol=1e-6)


@pytest.mark.parametrize("ltrb", [False, True])
def test_bbox_paste_matches_the_canvas_geometry(ltrb):
    rng = np.random.default_rng(2)
    boxes = _boxes(rng, [4, 1], ltrb=ltrb)
    out, = run_es(lambda b: fn.bbox_paste(b, ratio=2.0, paste_x=0.25, paste_y=1.0, ltrb=ltrb), boxes)
    for g, b in zip(samples(out), boxes):
        # image of size s pasted into a 2s canvas at (0.25 * s, 1.0 * s)
        sx, sy = 0.25 * (1 - 0.5), 1.0 * (1 - 0.5)
        want = b * 0.5
        want[:, 0] += sx
        want[:, 1] += sy
        if ltrb:
            want[:, 2] += sx
            want[:, 3] += sy
        np.testing.assert_allclose(g, want, atol=1e-6)


def _iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area = lambda x: (x[:, 2:] - x[:, :2]).prod(-1)
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def _reference_encode(boxes, labels, anchors, criteria, offset, scale, means, stds):
    """The SSD reference encoder (MLPerf style), written independently with numpy."""
    a_c = np.concatenate([(anchors[:, :2] + anchors[:, 2:]) / 2, anchors[:, 2:] - anchors[:, :2]], 1)
    n = len(anchors)
    out_b = np.zeros((n, 4)) if offset else a_c.copy()
    out_l = np.zeros(n, np.int32)
    if len(boxes):
        ious = _iou(boxes, anchors)                              # [M, A]
        for m in range(len(boxes)):                              # each box claims its best anchor
            best = len(anchors) - 1 - np.argmax(ious[m, ::-1])   # ties: the later anchor
            ious[m, best] = 2.0
        best_box = len(boxes) - 1 - np.argmax(ious[::-1], axis=0)  # ties: the later box
        matched = ious[best_box, np.arange(n)] > criteria
        b = boxes[best_box[matched]]
        b_c = np.concatenate([(b[:, :2] + b[:, 2:]) / 2, b[:, 2:] - b[:, :2]], 1)
        if offset:
            ac = a_c[matched] * scale
            bc = b_c * scale
            enc = np.concatenate([(bc[:, :2] - ac[:, :2]) / ac[:, 2:], np.log(bc[:, 2:] / ac[:, 2:])], 1)
            out_b[matched] = (enc - means) / stds
        else:
            out_b[matched] = b_c
        out_l[matched] = labels[best_box[matched]]
    return out_b, out_l


def _anchors(k=6):
    g = (np.arange(k) + 0.5) / k
    cx, cy = np.meshgrid(g, g)
    c = np.stack([cx.ravel(), cy.ravel()], 1)
    out = []
    for s in (0.2, 0.35):
        out.append(np.concatenate([c - s / 2, c + s / 2], 1))
    return np.clip(np.concatenate(out), 0, 1).astype(np.float32)


@pytest.mark.parametrize("offset", [False, True])
def test_box_encoder_matches_the_ssd_reference(offset):
    rng = np.random.default_rng(3)
    anchors = _anchors()
    boxes = _boxes(rng, [5, 0, 1, 3])
    labels = [rng.integers(1, 80, len(b)).astype(np.int32) for b in boxes]
    kw = dict(criteria=0.4, offset=offset, scale=2.0, means=[0.1, 0.0, 0.2, 0.0], stds=[0.1, 0.1, 0.2, 0.2])
    eb, el = run_es(lambda b, l: tuple(fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), **kw)), boxes, labels)
    for i, (b, l) in enumerate(zip(boxes, labels)):
        wb, wl = _reference_encode(b.astype(np.float64), l, anchors.astype(np.float64), kw["criteria"], offset,
                                   kw["scale"], np.array(kw["means"]), np.array(kw["stds"]))
        assert eb.at(i).shape == (len(anchors), 4) and el.at(i).shape == (len(anchors),)
        np.testing.assert_array_equal(el.at(i), wl)
        np.testing.assert_allclose(eb.at(i), wb, rtol=1e-4, atol=1e-5)


def test_box_encoder_checks_its_arguments():
    with pytest.raises(ValueError, match="anchors"):
        run_es(lambda b, l: tuple(fn.box_encoder(b, l, anchors=[0.0, 0.0, 1.0])),
               [np.zeros((1, 4), np.float32)], [np.zeros(1, np.int32)])
    with pytest.raises(RuntimeError, match="labels"):
        run_es(lambda b, l: tuple(fn.box_encoder(b, l, anchors=[0.0, 0.0, 1.0, 1.0])),
               [np.zeros((2, 4), np.float32)], [np.zeros(1, np.int32)])


BOXES = [np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 0.2, 0.1]], np.float32)] * 2
# DALI 2.4's results for BOXES on a 100 x 200 image rotated by 30 degrees
ROTATED = {
    "expand": [[0.123741, 0.361804, 0.522321, 0.758831], [0.001774, 0.429249, 0.178743, 0.581697]],
    "fixed": [[0.144460, 0.453935, 0.501603, 0.666701], [0.000973, 0.478877, 0.179544, 0.532068]],
    "halfway": [[0.134100, 0.407870, 0.511962, 0.712766], [0.001374, 0.454063, 0.179144, 0.556883]],
}


@pytest.mark.parametrize("mode", list(ROTATED))
def test_bbox_rotate_modes(mode):
    out, = run_es(lambda b: fn.bbox_rotate(b, angle=30.0, input_shape=[100, 200], mode=mode), BOXES)
    np.testing.assert_allclose(out.at(0), ROTATED[mode], atol=1e-5)


def test_bbox_rotate_keeps_size_clips_and_removes_with_labels():
    out, = run_es(lambda b: fn.bbox_rotate(b, angle=30.0, input_shape=[100, 200], keep_size=True), BOXES)
    np.testing.assert_allclose(out.at(0), [[0.078590, 0.240192, 0.525000, 0.986603], [0.0, 0.366987, 0.140192,
                                                                                      0.653590]], atol=1e-5)
    labels = [np.array([1, 2], np.int32)] * 2
    boxes, kept = run_es(lambda b, l: tuple(fn.bbox_rotate(b, l, angle=-45.0, input_shape=[100, 200], keep_size=True,
                                                           remove_threshold=0.5)), BOXES, labels)
    np.testing.assert_allclose(boxes.at(0), [[0.181802, 0.0, 0.606066, 0.570711]], atol=1e-5)
    np.testing.assert_array_equal(kept.at(0), [1])
    xywh, = run_es(lambda b: fn.bbox_rotate(b, angle=30.0, input_shape=[100, 200, 3], shape_layout="HWC",
                                            bbox_layout="xyWH"), BOXES)
    np.testing.assert_allclose(xywh.at(0)[1], [0.001774, 0.429249, 0.176969, 0.152448], atol=1e-5)
