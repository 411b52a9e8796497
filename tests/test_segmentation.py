"""segmentation.random_mask_pixel: drawn pixels satisfy the foreground condition; coverage."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es, samples


def _masks():
    a = np.zeros((20, 30), np.uint8)
    a[5:8, 10:12] = 3
    a[15, 25] = 7
    b = np.zeros((9, 4), np.uint8)            # no foreground at all
    c = np.zeros((6, 6, 2), np.uint8)
    c[2, 3, 1] = 5
    return [a, b, c[..., 1]]


def test_foreground_pixels_by_value_and_threshold():
    masks = _masks()
    for kw, ok in (({"value": 3}, lambda m, p: m[p] == 3), ({"threshold": 4}, lambda m, p: m[p] > 4)):
        for seed in range(5):
            out, = run_es(lambda m: fn.segmentation.random_mask_pixel(m, foreground=1, seed=seed, **kw), masks)
            for g, m in zip(samples(out), masks):
                assert g.dtype == np.int64 and g.shape == (2,)
                p = tuple(g.tolist())
                assert all(0 <= v < s for v, s in zip(p, m.shape))
                if (kw.get("value") is not None and (m == kw["value"]).any()) or \
                        (kw.get("threshold") is not None and (m > kw["threshold"]).any()):
                    assert ok(m, p)


def test_background_draw_covers_the_mask():
    m = [np.zeros((3, 4), np.uint8)] * 64
    out, = run_es(lambda x: fn.segmentation.random_mask_pixel(x, seed=1), m)
    seen = {tuple(g.tolist()) for g in samples(out)}
    assert len(seen) > 8 and all(0 <= r < 3 and 0 <= c < 4 for r, c in seen)


def _objects(m, background=0):
    """Reference objects: (label, lo, hi) of 4-connected components, by flood fill."""
    seen = np.zeros(m.shape, bool)
    out = []
    for start in zip(*np.nonzero(m != background)):
        if seen[start]:
            continue
        lab, stack, pts = m[start], [start], []
        seen[start] = True
        while stack:
            p = stack.pop()
            pts.append(p)
            for d in range(m.ndim):
                for s in (-1, 1):
                    q = list(p)
                    q[d] += s
                    q = tuple(q)
                    if all(0 <= q[k] < m.shape[k] for k in range(m.ndim)) and not seen[q] and m[q] == lab:
                        seen[q] = True
                        stack.append(q)
        pts = np.array(pts)
        out.append((int(lab), tuple(pts.min(0)), tuple(pts.max(0) + 1), len(pts)))
    return out


def _label_map(seed):
    rng = np.random.default_rng(seed)
    m = np.zeros((24, 20), np.int32)
    for _ in range(6):
        y, x = rng.integers(0, 20), rng.integers(0, 16)
        m[y:y + rng.integers(1, 5), x:x + rng.integers(1, 5)] = rng.integers(1, 4)
    return m


def test_random_object_bbox_returns_real_objects():
    maps = [_label_map(s) for s in range(6)]
    seen = set()
    for seed in range(6):
        anchor, shape, cls = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(
            m, output_class=True, seed=seed)), maps)
        for i, m in enumerate(maps):
            objs = {(lab, lo, hi) for lab, lo, hi, _ in _objects(m)}
            lo = tuple(anchor.at(i).tolist())
            hi = tuple((anchor.at(i) + shape.at(i)).tolist())
            assert (int(cls.at(i)), lo, hi) in objs
            seen.add((i, lo))
    assert len(seen) > len(maps)          # different objects get drawn


def test_random_object_bbox_classes_k_largest_threshold_and_formats():
    maps = [_label_map(s) for s in range(4)]
    box, cls = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(
        m, format="box", classes=[2], k_largest=1, output_class=True, seed=3)), maps)
    for i, m in enumerate(maps):
        objs = [o for o in _objects(m) if o[0] == 2]
        if not objs:   # no object of the class: the whole input, background label
            assert box.at(i).tolist() == [0, 0, *m.shape] and int(cls.at(i)) == 0
            continue
        biggest = max(o[3] for o in objs)
        got = [o for o in objs if list(o[1] + o[2]) == box.at(i).tolist()]
        assert got and got[0][3] == biggest
    start, end = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(
        m, format="start_end", threshold=[3, 3], seed=1)), maps)
    for i, m in enumerate(maps):
        big = [o for o in _objects(m) if all(h - l >= 3 for l, h in zip(o[1], o[2]))]
        s, e = tuple(start.at(i).tolist()), tuple(end.at(i).tolist())
        assert (s, e) in {(o[1], o[2]) for o in big} or (not big and s == (0, 0) and e == m.shape)


def test_random_object_bbox_background_choice():
    maps = [_label_map(0)] * 32
    anchor, shape = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(m, foreground_prob=0.0, seed=2)), maps)
    assert all(anchor.at(i).tolist() == [0, 0] and shape.at(i).tolist() == [24, 20] for i in range(32))


def test_random_object_bbox_class_weights():
    maps = [m for m in (_label_map(s) for s in range(12)) if {1, 2} <= set(np.unique(m).tolist())]
    box, cls = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(
        m, format="box", classes=[1, 2], class_weights=[0.0, 1.0], output_class=True, seed=4)), maps)
    assert maps and all(int(cls.at(i)) == 2 for i in range(len(maps)))


def test_random_object_bbox_no_matching_class_in_the_batch_gives_the_whole_sample():
    # classes=[] (or classes absent from every sample) leaves nothing to choose: the whole sample, as DALI
    x = np.zeros((10, 12), np.int32)
    x[2:4, 3:7] = 5
    for classes in ([], [7]):
        anchor, shape = run_es(lambda m: tuple(fn.segmentation.random_object_bbox(
            m, classes=classes, foreground_prob=1.0, seed=2)), [x, x])
        assert all(anchor.at(i).tolist() == [0, 0] and shape.at(i).tolist() == [10, 12] for i in range(2))


POLYGONS = [np.array([[1, 0, 3], [0, 3, 5], [1, 5, 9], [2, 9, 10]], np.int32)] * 2
VERTICES = [np.arange(20, dtype=np.float32).reshape(10, 2)] * 2


@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks_groups_polygons_in_selection_order(reindex):
    ids = [np.array([1, 0], np.int32), np.array([2], np.int32)]
    polys, verts = run_es(lambda m, p, v: tuple(fn.segmentation.select_masks(m, p, v, reindex_masks=reindex)), ids,
                          POLYGONS, VERTICES)
    first_ids = [0, 0, 1] if reindex else [1, 1, 0]
    np.testing.assert_array_equal(polys.at(0), np.column_stack([first_ids, [0, 3, 7], [3, 7, 9]]))
    np.testing.assert_array_equal(verts.at(0), VERTICES[0][[0, 1, 2, 5, 6, 7, 8, 3, 4]])
    np.testing.assert_array_equal(polys.at(1), [[0 if reindex else 2, 0, 1]])
    np.testing.assert_array_equal(verts.at(1), VERTICES[1][[9]])


def test_select_masks_refuses_an_absent_mask():
    with pytest.raises(RuntimeError, match="mask_id 7 is not present"):
        run_es(lambda m, p, v: tuple(fn.segmentation.select_masks(m, p, v)), [np.array([7], np.int32)] * 2, POLYGONS,
               VERTICES)
