"""bench/photos.py: the benchmarks' photo sets have the sizes and encodings they promise, and are
the same every time they are made."""
import importlib.util
import os
import sys

import numpy as np
import pytest

pytest.importorskip("PIL")
if importlib.util.find_spec("skimage") is None:
    pytest.skip("the photo sets are made from scikit-image's photographs", allow_module_level=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import photos  # noqa: E402
from PIL import Image, JpegImagePlugin  # noqa: E402


def _files(root):
    return sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names)


def _contents(root):
    return [open(p, "rb").read() for p in _files(root)]


def test_imagenet_like_pictures_have_imagenet_sizes_and_encoding(tmp_path):
    root, stats = photos.photo_set("imagenet-like", 4, cache=str(tmp_path))
    files = _files(root)
    assert len(files) == stats["images"] == 4
    sizes = []
    for path in files:
        with Image.open(path) as im:
            assert im.format == "JPEG" and im.mode == "RGB"
            assert JpegImagePlugin.get_sampling(im) == 2  # 4:2:0
            assert 300 <= min(im.size) <= 500
            assert not im.info.get("progressive")
            sizes.append((os.path.getsize(path), *im.size))
        assert 20_000 <= sizes[-1][0] <= 300_000
    assert stats == {**stats, **photos.statistics_of(sizes)}
    assert stats["mean_bytes"] == int(np.mean([s[0] for s in sizes]))
    # the folder is what readers.file and ImageFolder take: class sub-folders of JPEGs, nothing else
    assert all(os.path.dirname(os.path.relpath(p, root)).startswith("class_") for p in files)


def test_a_high_res_picture_is_high_res():
    spec = photos.SETS["high-res"]
    image = photos.picture(spec, 0, 0)
    assert 1600 <= max(image.size) <= 4000
    assert 300_000 <= len(photos.encode(image, spec.quality)) <= 3_000_000


def test_sets_are_the_same_whatever_the_workers_and_made_once(tmp_path):
    one, _ = photos.photo_set("imagenet-like", 3, cache=str(tmp_path / "a"), workers=1)
    two, stats = photos.photo_set("imagenet-like", 3, cache=str(tmp_path / "b"), workers=2)
    assert _contents(one) == _contents(two)
    before = [os.stat(p).st_mtime_ns for p in _files(two)]
    again, cached = photos.photo_set("imagenet-like", 3, cache=str(tmp_path / "b"))
    assert again == two and cached == stats
    assert [os.stat(p).st_mtime_ns for p in _files(two)] == before


def test_the_seed_and_the_index_change_the_picture():  # (the same ones give the same: above)
    spec = photos.SETS["imagenet-like"]
    first = photos.encode(photos.picture(spec, 0, 1), spec.quality)
    assert photos.encode(photos.picture(spec, 1, 1), spec.quality) != first
    assert photos.encode(photos.picture(spec, 0, 2), spec.quality) != first


def test_noise_stays_a_named_stress_set(tmp_path):
    assert "noise" in photos.ALL_SETS and "noise" not in photos.SETS
    root, stats = photos.photo_set("noise", 16, cache=str(tmp_path))
    assert stats["images"] == 16 and (stats["mean_width"], stats["mean_height"]) == (520, 430)
    with pytest.raises(ValueError, match="unknown photo set"):
        photos.photo_set("imagenet", 4, cache=str(tmp_path))


def test_missing_photographs_say_how_to_bring_them(monkeypatch):
    monkeypatch.setattr(photos.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="--no-deps"):
        photos.photographs_folder()
