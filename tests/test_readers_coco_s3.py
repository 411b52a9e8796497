"""readers.coco over an object store: images under an s3:// file_root and the annotations file (or the
preprocessed annotations) as s3:// objects, on a real S3 server (rclone serve s3 on loopback), give
what the same reader gives over the same files on local disk."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn, pipeline_def
from test_readers_coco import write_coco

URL = "s3://coco/set"


@pytest.fixture(scope="module")
def coco(s3_server):  # noqa: F811
    """The subset in the bucket's folder (local paths) and the same files as URLs."""
    root, annotations = write_coco(os.path.join(s3_server.bucket("coco"), "set"))
    return (root, annotations), (f"{URL}/images", f"{URL}/instances.json")


def _pipe(batch_size=3, checkpoint=None, **reader):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=6, enable_checkpointing=True,
                  checkpoint=checkpoint)
    def pipe():
        return tuple(fn.readers.coco(name="r", **reader))
    p = pipe()
    p.build()
    return p


def _run(p, iterations):
    rows = []
    for _ in range(iterations):
        outs = p.run()
        rows += [[np.array(o.at(i)) for o in outs] + [outs[0].source_info(i)] for i in range(len(outs[0]))]
    return rows


def _same(got, expected, local_root, url_root):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g[-1] == e[-1].replace(local_root, url_root)  # the image's URL where the local path was
        assert len(g) == len(e) and all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(g[:-1], e[:-1]))


@pytest.mark.parametrize("reader", [
    {"image_ids": True},
    {"polygon_masks": True, "ratio": True, "ltrb": True},
    {"pixelwise_masks": True, "skip_empty": True},
    {"random_shuffle": True, "initial_fill": 3, "image_ids": True},
    {"num_shards": 3, "shard_id": 2, "pad_last_batch": True, "image_ids": True},
    {"shuffle_after_epoch": True, "image_ids": True},
])
def test_images_and_annotations_as_on_local_disk(coco, reader):
    (root, annotations), (url_root, url_annotations) = coco
    on_disk = _pipe(file_root=root, annotations_file=annotations, **reader)
    on_s3 = _pipe(file_root=url_root, annotations_file=url_annotations, **reader)
    assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
    expected = _run(on_disk, 4)
    with open(os.path.join(root, "c.jpg"), "rb") as f:  # the images' bytes as stored
        stored = np.frombuffer(f.read(), np.uint8)
    assert any(np.array_equal(row[0], stored) for row in expected)
    _same(_run(on_s3, 4), expected, root, url_root)


def test_preprocessed_annotations_from_the_store(coco, tmp_path):
    (root, annotations), (url_root, _) = coco
    saved = os.path.join(os.path.dirname(root), "pre")
    reader = {"image_ids": True, "polygon_masks": True}
    expected = _run(_pipe(file_root=root, annotations_file=annotations, save_preprocessed_annotations=True,
                          save_preprocessed_annotations_dir=saved, **reader), 2)
    got = _run(_pipe(file_root=url_root, preprocessed_annotations=f"{URL}/pre", **reader), 2)
    _same(got, expected, root, url_root)
    with pytest.raises(NotImplementedError, match=r"readers\.coco.*save_preprocessed_annotations_dir.*s3://coco"):
        _pipe(file_root=url_root, annotations_file=annotations, save_preprocessed_annotations=True,
              save_preprocessed_annotations_dir=f"{URL}/again")


def test_checkpoint_resumes_exactly(coco):
    _, (url_root, url_annotations) = coco
    reader = {"file_root": url_root, "annotations_file": url_annotations, "random_shuffle": True,
              "initial_fill": 3, "image_ids": True}
    reference = _run(_pipe(**reader), 5)
    first = _pipe(**reader)
    head = _run(first, 2)
    rest = _run(_pipe(checkpoint=first.checkpoint(), **reader), 3)
    _same(head + rest, reference, url_root, url_root)


def test_missing_objects_name_the_url_and_the_reader(coco, s3_server):  # noqa: F811
    (root, annotations), (url_root, url_annotations) = coco
    with pytest.raises(RuntimeError, match=r"readers\.coco.*'s3://coco/set/gone\.json'.*no such object"):
        _pipe(file_root=url_root, annotations_file=f"{URL}/gone.json")
    moved = os.path.join(s3_server.bucket("coco"), "partial")
    os.makedirs(moved)
    os.link(os.path.join(root, "a.jpg"), os.path.join(moved, "a.jpg"))  # the others are missing
    p = _pipe(batch_size=2, file_root="s3://coco/partial", annotations_file=url_annotations)
    with pytest.raises(RuntimeError, match=r"readers\.coco.*'s3://coco/partial/b\.jpg'.*no such object"):
        p.run()
