"""readers.coco over an object store: images under an s3:// file_root and the annotations file (or the
preprocessed annotations) as s3:// objects, on a real S3 server (rclone serve s3 on loopback), give
what the same reader gives over the same files on local disk."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _reader_runs import assert_checkpoint_resumes, assert_same_rows, reader_pipeline, rows
from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn
from test_readers_coco import write_coco

URL = "s3://coco/set"


@pytest.fixture(scope="module")
def coco(s3_server):  # noqa: F811
    """The subset in the bucket's folder (local paths) and the same files as URLs."""
    root, annotations = write_coco(os.path.join(s3_server.bucket("coco"), "set"))
    return (root, annotations), (f"{URL}/images", f"{URL}/instances.json")


def _pipe(batch_size=3, **reader):
    return reader_pipeline(fn.readers.coco, batch_size, **reader)


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
    expected = rows(on_disk, 4)
    with open(os.path.join(root, "c.jpg"), "rb") as f:  # the images' bytes as stored
        stored = np.frombuffer(f.read(), np.uint8)
    assert any(np.array_equal(row[0], stored) for row in expected)
    assert {row[-1] for row in expected} <= {"a.jpg", "b.jpg", "c.jpg", "empty.jpg"}  # names as annotated
    assert_same_rows(rows(on_s3, 4), expected)


def test_preprocessed_annotations_from_the_store(coco):
    (root, annotations), (url_root, _) = coco
    saved = os.path.join(os.path.dirname(root), "pre")
    reader = {"image_ids": True, "polygon_masks": True}
    expected = rows(_pipe(file_root=root, annotations_file=annotations, save_preprocessed_annotations=True,
                          save_preprocessed_annotations_dir=saved, **reader), 2)
    got = rows(_pipe(file_root=url_root, preprocessed_annotations=f"{URL}/pre", **reader), 2)
    assert_same_rows(got, expected)
    with pytest.raises(NotImplementedError, match=r"readers\.coco.*save_preprocessed_annotations_dir.*s3://coco"):
        _pipe(file_root=url_root, annotations_file=annotations, save_preprocessed_annotations=True,
              save_preprocessed_annotations_dir=f"{URL}/again")


def test_checkpoint_resumes_exactly(coco):
    _, (url_root, url_annotations) = coco
    assert_checkpoint_resumes(fn.readers.coco, 2, 3, batch_size=3, file_root=url_root,
                              annotations_file=url_annotations, random_shuffle=True, initial_fill=3, image_ids=True)


def test_missing_objects_name_the_url_and_the_reader(coco, s3_server):  # noqa: F811
    (root, _), (url_root, url_annotations) = coco
    with pytest.raises(RuntimeError, match=r"readers\.coco.*'s3://coco/set/gone\.json'.*no such object"):
        _pipe(file_root=url_root, annotations_file=f"{URL}/gone.json")
    partial = os.path.join(s3_server.bucket("coco"), "partial")
    os.makedirs(partial)
    os.link(os.path.join(root, "a.jpg"), os.path.join(partial, "a.jpg"))  # the others are missing
    p = _pipe(batch_size=2, file_root="s3://coco/partial", annotations_file=url_annotations)
    with pytest.raises(RuntimeError, match=r"readers\.coco.*'s3://coco/partial/b\.jpg'.*no such object"):
        p.run()
