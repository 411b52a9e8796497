"""Box, point, label and reduction operators and the numpy/COCO/TFRecord/WebDataset readers
compared with real NVIDIA DALI 2.4 (skipped without DALI). Deterministic operators must agree
exactly or within float rounding."""
import io
import json
import os
import sys
import tarfile

import numpy as np
import pytest

dali = pytest.importorskip("nvidia.dali")

import penstock  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import tf_example, tfrecord_record  # noqa: E402

pytestmark = pytest.mark.dali

RNG = np.random.default_rng(5)


def _boxes(counts, ltrb=True):
    out = []
    for m in counts:
        lo = RNG.uniform(0, 0.6, (m, 2))
        out.append(np.concatenate([lo, lo + RNG.uniform(0.05, 0.4, (m, 2)) if ltrb else
                                   RNG.uniform(0.05, 0.4, (m, 2))], 1).astype(np.float32))
    return out


BOXES = _boxes([3, 1, 5, 2])
LABELS = [RNG.integers(1, 20, len(b)).astype(np.int32) for b in BOXES]
INTS = [RNG.integers(0, 6, s).astype(np.int32) for s in [(4, 1), (2, 3), (5, 2), (1, 1)]]
IMAGES = [RNG.integers(0, 255, s).astype(np.uint8) for s in [(6, 7, 3), (4, 9, 3), (6, 7, 3), (3, 3, 3)]]
ANCHORS = np.clip(np.concatenate([RNG.uniform(0, 0.8, (40, 2)), np.zeros((40, 2))], 1), 0, 1)
ANCHORS[:, 2:] = np.minimum(ANCHORS[:, :2] + RNG.uniform(0.05, 0.5, (40, 2)), 1)


def _const(data):
    return lambda: data


def _run(lib, graph, *inputs):
    @lib.pipeline_def(batch_size=len(inputs[0][0]), num_threads=2, device_id=None, seed=1)
    def pipe():
        srcs = [lib.fn.external_source(source=_const(d), layout=lay) for d, lay in inputs]
        out = graph(lib.fn, lib.types, *srcs)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    return [[np.array(o.at(i)) for i in range(len(inputs[0][0]))] for o in pipe().run()]


CASES = {
    "bb_flip_xywh": (lambda fn, t, b: fn.bb_flip(b, horizontal=1, vertical=1), [(_boxes([3, 1, 5, 2], False), None)]),
    "bb_flip_ltrb": (lambda fn, t, b: fn.bb_flip(b, ltrb=True, vertical=1), [(BOXES, None)]),
    "bbox_paste": (lambda fn, t, b: fn.bbox_paste(b, ratio=1.7, paste_x=0.2, paste_y=0.9, ltrb=True),
                   [(BOXES, None)]),
    "box_encoder": (lambda fn, t, b, l: fn.box_encoder(b, l, anchors=ANCHORS.ravel().tolist(), criteria=0.3),
                    [(BOXES, None), (LABELS, None)]),
    "box_encoder_offset": (lambda fn, t, b, l: fn.box_encoder(
        b, l, anchors=ANCHORS.ravel().tolist(), criteria=0.3, offset=True, scale=2.0, stds=[0.1, 0.1, 0.2, 0.2]),
        [(BOXES, None), (LABELS, None)]),
    "coord_flip": (lambda fn, t, b: fn.coord_flip(fn.reshape(b, shape=[-1, 2]), flip_y=1, center_x=0.3),
                   [(BOXES, None)]),
    "coord_transform": (lambda fn, t, b: fn.coord_transform(fn.reshape(b, shape=[-1, 2]), M=[1, 2, 3, 4, 5, 6],
                                                            T=[0.5, 1, -1]), [(BOXES, None)]),
    "one_hot": (lambda fn, t, x: fn.one_hot(x, num_classes=5, axis=0), [(INTS, None)]),
    "lookup_table": (lambda fn, t, x: fn.lookup_table(x, keys=[1, 3, 4], values=[0.5, -1, 7], default_value=2),
                     [(INTS, None)]),
    "reductions": (lambda fn, t, x: (fn.reductions.sum(x, axes=[0, 1]), fn.reductions.mean(x),
                                     fn.reductions.max(x, axis_names="C"), fn.reductions.rms(x, axes=[2]),
                                     fn.reductions.std_dev(x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1])),
                   [(IMAGES, "HWC")]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_dali(name):
    graph, inputs = CASES[name]
    ours = _run(penstock, graph, *inputs)
    theirs = _run(dali, graph, *inputs)
    for o, t in zip(ours, theirs):
        for a, b in zip(o, t):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _read(lib, batch, reader, **kw):
    @lib.pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=1)
    def pipe():
        out = reader(lib)(**kw)
        if isinstance(out, dict):
            out = [out[k] for k in sorted(out)]
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    return [[np.array(o.at(i)) for i in range(batch)] for o in pipe().run()]


def _same(ours, theirs, max_ulp=0):
    for o, t in zip(ours, theirs):
        for a, b in zip(o, t):
            assert a.dtype == b.dtype and a.shape == b.shape
            if max_ulp:
                np.testing.assert_array_max_ulp(a, b, maxulp=max_ulp)
            else:
                np.testing.assert_array_equal(a, b)


def test_numpy_reader_matches_dali(tmp_path):
    for i in range(4):
        np.save(tmp_path / f"{i}.npy", np.asfortranarray(RNG.random((5, 6 + i)).astype(np.float32)))
    kw = dict(file_root=str(tmp_path), roi_start=[1, 2], roi_end=[4, 9], out_of_bounds_policy="pad", fill_value=-1)
    _same(_read(penstock, 4, lambda lib: lib.fn.readers.numpy, **kw),
          _read(dali, 4, lambda lib: lib.fn.readers.numpy, **kw))


def test_coco_reader_matches_dali(tmp_path):
    from PIL import Image
    (tmp_path / "img").mkdir()
    images, anns = [], []
    for i in range(4):
        Image.fromarray(RNG.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(tmp_path / "img" / f"{i}.jpg")
        images.append({"id": 10 - i, "file_name": f"{i}.jpg", "width": 30, "height": 20})
        for k in range(i + 1):
            anns.append({"id": len(anns), "image_id": 10 - i, "category_id": int(RNG.choice([3, 9, 27])),
                         "bbox": RNG.uniform(1, 10, 4).tolist(), "iscrowd": 0,
                         "segmentation": [RNG.uniform(0, 20, 8).tolist()]})
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns,
                               "categories": [{"id": c} for c in (27, 3, 9)]}))
    kw = dict(file_root=str(tmp_path / "img"), annotations_file=str(ann), ratio=True, ltrb=True,
              polygon_masks=True, image_ids=True)
    # boxes within 1 float32 ulp: the JSON's decimals reach float32 through a double here, directly in DALI
    _same(_read(penstock, 4, lambda lib: lib.fn.readers.coco, **kw),
          _read(dali, 4, lambda lib: lib.fn.readers.coco, **kw), max_ulp=1)


def test_webdataset_reader_matches_dali(tmp_path):
    path = tmp_path / "s.tar"
    with tarfile.open(path, "w") as tar:
        for i in range(4):
            for ext, data in (("jpg", bytes([i]) * (3 + i)), ("cls", str(i).encode())):
                info = tarfile.TarInfo(f"k{i}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    kw = dict(paths=[str(path)], ext=["jpg", "cls"])
    _same(_read(penstock, 4, lambda lib: lib.fn.readers.webdataset, **kw),
          _read(dali, 4, lambda lib: lib.fn.readers.webdataset, **kw))


def test_tfrecord_reader_matches_dali(tmp_path):
    import penstock.tfrecord as ptf
    import nvidia.dali.tfrecord as dtf

    path, idx = tmp_path / "r.tfrecord", tmp_path / "r.idx"
    with open(path, "wb") as f:
        for i in range(3):
            f.write(tfrecord_record(tf_example({"label": [i + 1], "data": bytes([i]) * 4})))
    ptf.make_index(str(path), str(idx))

    def reader(tf):
        return lambda lib: (lambda **kw: lib.fn.readers.tfrecord(
            features={"label": tf.FixedLenFeature([1], tf.int64, -1),
                      "data": tf.FixedLenFeature((), tf.string, "")}, **kw))

    kw = dict(path=[str(path)], index_path=[str(idx)])
    _same(_read(penstock, 3, reader(ptf), **kw), _read(dali, 3, reader(dtf), **kw))
