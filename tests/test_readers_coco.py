"""readers.coco on a COCO subset written by the test: boxes, labels, ids, polygons, options."""
import json
import os
import pathlib

import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def

# images (id, file, w, h) listed out of id order; categories listed out of id order
IMAGES = [(7, "c.jpg", 40, 30), (3, "a.jpg", 32, 24), (5, "b.jpg", 20, 50), (9, "empty.jpg", 16, 16)]
CATS = [18, 1, 44]
ANNS = [  # (image id, category, bbox xywh, iscrowd, polygons)
    (3, 44, [1.0, 2.0, 10.0, 8.0], 0, [[1, 2, 11, 2, 11, 10]]),
    (3, 1, [5.0, 5.0, 0.05, 4.0], 0, []),                    # below size_threshold: dropped
    (7, 18, [0.0, 0.0, 40.0, 30.0], 1, None),                # crowd (RLE segmentation)
    (7, 1, [10.0, 3.0, 5.0, 6.0], 0, [[10, 3, 15, 3, 15, 9], [10, 3, 12, 5, 11, 8, 10, 9]]),
    (5, 18, [2.0, 20.0, 6.0, 12.0], 0, [[2, 20, 8, 20, 8, 32, 2, 32]]),
    (3, 18, [20.0, 10.0, 5.0, 5.0], 0, [[20, 10, 25, 15, 20, 15]]),
]


@pytest.fixture
def coco(tmp_path):
    return write_coco(tmp_path)


def write_coco(folder) -> tuple[str, str]:
    """The images (under images/) and the annotations file (instances.json) of the subset, in ``folder``."""
    folder = pathlib.Path(folder)
    root = folder / "images"
    root.mkdir(parents=True)
    for k, (_, name, w, h) in enumerate(IMAGES):
        Image.fromarray(np.full((h, w, 3), 40 * k, np.uint8)).save(root / name)
    anns = []
    for k, (img, cat, box, crowd, polys) in enumerate(ANNS):
        seg = {"size": [30, 40], "counts": [0, 1200]} if polys is None else polys
        anns.append({"id": k, "image_id": img, "category_id": cat, "bbox": box, "iscrowd": crowd,
                     "segmentation": seg, "area": box[2] * box[3]})
    data = {"images": [{"id": i, "file_name": f, "width": w, "height": h} for i, f, w, h in IMAGES],
            "categories": [{"id": c, "name": str(c)} for c in CATS], "annotations": anns}
    path = folder / "instances.json"
    path.write_text(json.dumps(data))
    return str(root), str(path)


def _expected(skip_empty=False, ltrb=False, ratio=False, include_iscrowd=True, remap=True):
    """Per image in id order: (file, boxes, labels, id), computed from the tables above."""
    out = []
    for img, name, w, h in sorted(IMAGES):
        boxes, labels = [], []
        for a_img, cat, box, crowd, _ in ANNS:
            if a_img != img or box[2] < 0.1 or box[3] < 0.1 or (crowd and not include_iscrowd):
                continue
            b = np.array(box)
            if ltrb:
                b[2:] += b[:2]
            if ratio:
                b /= [w, h, w, h]
            boxes.append(b)
            labels.append(CATS.index(cat) + 1 if remap else cat)
        if skip_empty and not boxes:
            continue
        out.append((name, np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int32), img))
    return out


def _read(coco, batch, iters=1, **kw):
    root, ann = coco

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=1)
    def p():
        outs = fn.readers.coco(file_root=root, annotations_file=ann, name="R", **kw)
        return tuple(outs)

    pipe = p()
    res = []
    for _ in range(iters):
        outs = pipe.run()
        res += [tuple(np.array(o.at(i)) for o in outs) + (outs[0].source_info(i),) for i in range(batch)]
    return res, pipe


@pytest.mark.parametrize("opts", [{}, {"ltrb": True}, {"ratio": True, "ltrb": True}, {"skip_empty": True},
                                  {"include_iscrowd": False}, {"avoid_class_remapping": True}])
def test_boxes_labels_ids_follow_the_annotations(coco, opts):
    remap = not opts.get("avoid_class_remapping", False)
    want = _expected(remap=remap, **{k: v for k, v in opts.items() if k != "avoid_class_remapping"})
    got, pipe = _read(coco, len(want), image_ids=True, **opts)
    assert pipe.reader_meta("R")["epoch_size"] == len(want)
    for (data, boxes, labels, ids, src), (name, wb, wl, wid) in zip(got, want):
        assert src == name
        assert data.tobytes() == open(os.path.join(coco[0], src), "rb").read()
        np.testing.assert_allclose(boxes, wb, rtol=1e-6)
        np.testing.assert_array_equal(labels, wl)
        assert ids.tolist() == [wid]


def test_images_argument_selects_and_orders(coco):
    got, _ = _read(coco, 2, images=["c.jpg", "a.jpg"])
    assert [g[-1] for g in got] == ["c.jpg", "a.jpg"]  # the file names as the annotations give them, as DALI


def test_polygons_and_vertices(coco):
    got, _ = _read(coco, 4, polygon_masks=True, ratio=True)
    by_name = {g[-1]: g for g in got}
    for img, name, w, h in IMAGES:
        _, _, _, polys, verts, _ = by_name[name]
        want_p, want_v, obj = [], [], 0
        for a_img, _, box, _, rings in ANNS:
            if a_img != img or box[2] < 0.1 or box[3] < 0.1:
                continue
            for ring in rings or []:
                xy = np.array(ring, np.float64).reshape(-1, 2) / [w, h]
                want_p.append((obj, len(want_v), len(want_v) + len(xy)))
                want_v += list(xy)
            obj += 1
        np.testing.assert_array_equal(polys.reshape(-1, 3), np.array(want_p, np.int32).reshape(-1, 3))
        np.testing.assert_allclose(verts.reshape(-1, 2), np.array(want_v).reshape(-1, 2), rtol=1e-6)


def test_preprocessed_annotations_round_trip(coco, tmp_path):
    saved = tmp_path / "pre"
    first, _ = _read(coco, 4, image_ids=True, polygon_masks=True, save_preprocessed_annotations=True,
                     save_preprocessed_annotations_dir=str(saved))
    root, _ = coco

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def p():
        return tuple(fn.readers.coco(file_root=root, preprocessed_annotations=str(saved), image_ids=True,
                                     polygon_masks=True))

    outs = p().run()
    for i, row in enumerate(first):
        for k, o in enumerate(outs):
            np.testing.assert_array_equal(np.array(o.at(i)), row[k])


def test_sharding_and_shuffle(coco):
    got, _ = _read(coco, 2, num_shards=2, shard_id=1, image_ids=True)
    assert [int(g[3][0]) for g in got] == [7, 9]   # shard 1 of ids [3, 5, 7, 9]
    got, _ = _read(coco, 4, shuffle_after_epoch=True, image_ids=True)
    assert sorted(int(g[3][0]) for g in got) == [3, 5, 7, 9]


def test_errors_name_the_problem(coco, tmp_path):
    root, _ = coco
    with pytest.raises(RuntimeError, match="annotations_file"):
        _read((root, str(tmp_path / "missing.json")), 1)
    with pytest.raises(ValueError, match="cannot be combined"):
        _read(coco, 1, pixelwise_masks=True, polygon_masks=True)


def _encode_rle(counts):
    """COCO's compressed run-length string, written independently of the reader's decoder."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def _inside(poly, h, w):
    """Pixels whose centres lie inside the polygon (even-odd ray casting), in numpy."""
    xy = np.asarray(poly, np.float64).reshape(-1, 2)
    cy, cx = np.mgrid[0:h, 0:w] + 0.5
    inside = np.zeros((h, w), bool)
    for (x0, y0), (x1, y1) in zip(xy, np.roll(xy, -1, axis=0)):
        crosses = (y0 <= cy) != (y1 <= cy)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = x0 + (cy - y0) * (x1 - x0) / (y1 - y0)
        inside ^= crosses & (cx < xc)
    return inside


def test_pixelwise_masks(tmp_path):
    root = tmp_path / "img"
    root.mkdir(parents=True)
    h, w = 12, 16
    Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(root / "m.jpg")
    crowd = np.zeros((h, w), bool)
    crowd[2:9, 1:4] = True
    flat = crowd.T.reshape(-1).astype(int)              # column-major, runs start with zeros
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flat, [1 - flat[-1]]])))
    runs = np.diff(np.concatenate([[0], edges])).tolist()
    tri = [2.0, 1.0, 14.0, 3.0, 6.0, 11.0]
    sq = [9.0, 6.0, 15.0, 6.0, 15.0, 12.0, 9.0, 12.0]
    anns = [{"id": 1, "image_id": 1, "category_id": 5, "bbox": [2, 1, 12, 10], "segmentation": [tri]},
            {"id": 2, "image_id": 1, "category_id": 9, "bbox": [1, 2, 3, 7], "iscrowd": 1,
             "segmentation": {"size": [h, w], "counts": _encode_rle(runs)}},
            {"id": 3, "image_id": 1, "category_id": 7, "bbox": [9, 6, 6, 6], "segmentation": [sq]}]
    ann = tmp_path / "a.json"
    ann.write_text(json.dumps({"images": [{"id": 1, "file_name": "m.jpg", "width": w, "height": h}],
                               "categories": [{"id": 5}, {"id": 7}, {"id": 9}], "annotations": anns}))
    got, _ = _read((str(root), str(ann)), 1, pixelwise_masks=True, ratio=True)
    mask = got[0][3]
    assert mask.shape == (h, w, 1) and mask.dtype == np.int32
    want = np.zeros((h, w), np.int32)
    for label, region in sorted([(1, _inside(tri, h, w)), (3, crowd), (2, _inside(sq, h, w))]):
        want[region] = label                           # larger labels painted last
    np.testing.assert_array_equal(mask[..., 0], want)
