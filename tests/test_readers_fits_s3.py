"""experimental.readers.fits over an object store: FITS files under an s3:// file_root, or listed as URLs,
on a real S3 server (rclone serve s3 on loopback) give the images the same reader gives over the same
files on local disk; a missing file is named by its URL."""
from __future__ import annotations

import os

import numpy as np
import pytest
from astropy.io import fits

from _reader_runs import assert_checkpoint_resumes, assert_same_rows, reader_pipeline, rows
from _s3_server import s3_server  # noqa: F401 - the fixture
from penstock import fn, types
from test_readers_fits import write_fits

URL = "s3://fits/set"
HDUS = {"hdu_indices": [2, 3, 4], "dtypes": [types.INT16, types.FLOAT, types.UINT8]}


@pytest.fixture(scope="module")
def folder(s3_server):  # noqa: F811
    root = os.path.join(s3_server.bucket("fits"), "set")
    os.makedirs(root)
    write_fits(root)
    return root


def _pipe(batch_size=2, **reader):
    return reader_pipeline(fn.experimental.readers.fits, batch_size, **reader)


@pytest.mark.parametrize("reader", [
    {},
    {"random_shuffle": True, "initial_fill": 3},
    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True},
    {"shuffle_after_epoch": True},
])
def test_images_as_on_local_disk(folder, reader):
    on_disk = _pipe(file_root=folder, file_filter="img*.fits", **HDUS, **reader)
    on_s3 = _pipe(file_root=URL, file_filter="img*.fits", **HDUS, **reader)
    assert on_s3.reader_meta("r") == on_disk.reader_meta("r")
    assert_same_rows(rows(on_s3, 5), rows(on_disk, 5), folder, URL)


def test_images_are_astropys(folder):
    got = rows(_pipe(batch_size=5, file_root=URL, file_filter="img*.fits", **HDUS), 1)
    for k, row in enumerate(got):
        assert row[-1] == f"{URL}/img{k}.fits"
        with fits.open(os.path.join(folder, f"img{k}.fits")) as hdul:
            for image, hdu in zip(row[:-1], (2, 3, 4)):
                assert np.array_equal(image, np.asarray(hdul[hdu - 1].data))
    assert got[4][0].tolist() == (np.arange(12).reshape(3, 4) * 5 - 7).tolist()  # RICE-compressed, decompressed


def test_files_and_file_list(folder):
    with open(os.path.join(folder, "list.txt"), "w") as f:
        f.write("img3.fits\nimg1.fits\n")
    for listed in ({"file_list": f"{URL}/list.txt"}, {"files": ["img3.fits", "img1.fits"], "file_root": URL},
                   {"files": [f"{URL}/img3.fits", f"{URL}/img1.fits"]}):
        got = rows(_pipe(hdu_indices=[4], **listed), 1)
        assert [(row[0].tolist(), row[1]) for row in got] == [(list(range(6)), f"{URL}/img3.fits"),
                                                             (list(range(4)), f"{URL}/img1.fits")]
    scaled = rows(_pipe(batch_size=1, files=[f"{URL}/scaled.fit"], dtypes=[types.UINT16]), 1)
    assert scaled[0][0].tolist() == [[0, 40000, 65535]]  # BZERO applied


def test_checkpoint_resumes_exactly(folder):
    assert_checkpoint_resumes(fn.experimental.readers.fits, 2, 4, file_root=URL, file_filter="img*.fits",
                              hdu_indices=[4], random_shuffle=True, initial_fill=3)


def test_missing_or_bad_files_name_the_url_and_the_reader(folder):
    p = _pipe(files=[f"{URL}/img0.fits", f"{URL}/gone.fits"], hdu_indices=[4])
    with pytest.raises(RuntimeError, match=r"readers\.fits.*'s3://fits/set/gone\.fits'.*no such object"):
        p.run()
    p = _pipe(files=[f"{URL}/notes.txt", f"{URL}/img0.fits"], hdu_indices=[4])
    with pytest.raises(RuntimeError, match=r"readers\.fits.*cannot read 's3://fits/set/notes\.txt' as a FITS file"):
        p.run()
