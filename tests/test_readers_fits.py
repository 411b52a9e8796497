"""experimental.readers.fits on FITS files written here with astropy: image HDUs (plain, scaled and
tile-compressed) against astropy's own reading, the ways of listing files, shuffling, sharding,
checkpoints, and the errors of bad HDUs and types. DALI 2.4's CPU reader needs a CUDA driver even
on the CPU, so only its errors are compared (tests/differential/test_db_readers.py)."""
import os

import numpy as np
import pytest

from penstock import fn, pipeline_def, types

fits = pytest.importorskip("astropy.io.fits")


def write_fits(folder: str, count: int = 5) -> list[str]:
    """Files of four HDUs: an empty primary, an int16 image, a float32 one and a 1-D uint8 one; the
    last file's int16 image is RICE-compressed and its float one big."""
    paths = []
    for k in range(count):
        ints = (np.arange(12, dtype=np.int16).reshape(3, 4) * (k + 1) - 7)
        floats = (np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3) + k)
        first = fits.CompImageHDU(ints, compression_type="RICE_1") if k == count - 1 else fits.ImageHDU(ints)
        if k == count - 1:
            floats = np.linspace(-1, 1, 7 * 5, dtype=np.float32).reshape(7, 5)
        path = os.path.join(folder, f"img{k}.fits")
        fits.HDUList([fits.PrimaryHDU(), first, fits.ImageHDU(floats),
                      fits.ImageHDU(np.arange(k + 3, dtype=np.uint8))]).writeto(path, overwrite=True)
        paths.append(path)
    with open(os.path.join(folder, "notes.txt"), "w") as f:
        f.write("not a FITS file")
    scaled = os.path.join(folder, "scaled.fit")  # uint16 stored as int16 with BZERO = 32768
    fits.HDUList([fits.PrimaryHDU(), fits.ImageHDU(np.array([[0, 40000, 65535]], np.uint16))]).writeto(scaled)
    return paths


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fits"))
    write_fits(root)
    return root


def read(batch_size=2, iterations=1, checkpoint=None, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=9,
                  enable_checkpointing=checkpoint is not None)
    def pipe():
        out = fn.experimental.readers.fits(name="fits", **kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe(checkpoint=checkpoint if isinstance(checkpoint, (bytes, str)) else None)
    p.build()
    return p, [[[np.array(s) for s in o] for o in p.run()] for _ in range(iterations)]


def astropy_image(path: str, hdu: int) -> np.ndarray:
    with fits.open(path) as hdul:
        return np.asarray(hdul[hdu - 1].data)


def test_the_hdus_are_astropys_images(folder):
    p, runs = read(batch_size=5, file_root=folder, hdu_indices=[2, 3, 4],
                   dtypes=[types.INT16, types.FLOAT, types.UINT8])
    ints, floats, bytes_ = runs[0]
    paths = [os.path.join(folder, f"img{k}.fits") for k in range(5)]
    for k, path in enumerate(paths):
        for out, hdu in ((ints, 2), (floats, 3), (bytes_, 4)):
            want = astropy_image(path, hdu)
            assert out[k].dtype == want.dtype.newbyteorder("=") and np.array_equal(out[k], want)
    assert ints[4].tolist() == (np.arange(12).reshape(3, 4) * 5 - 7).tolist()  # decompressed (RICE)
    assert floats[4].shape == (7, 5)
    out = p.run()
    assert out[0].dtype == types.INT16 and out[0][0].source_info() == paths[0] and out[0].layout() == ""


def test_files_file_list_and_filter(folder, tmp_path):
    _, runs = read(batch_size=1, files=["scaled.fit"], file_root=folder, dtypes=[types.UINT16])
    assert runs[0][0][0].tolist() == [[0, 40000, 65535]]   # BZERO applied
    listing = tmp_path / "list.txt"
    listing.write_text("img3.fits\nimg1.fits\n")
    _, runs = read(batch_size=2, file_list=str(listing), file_root=folder, hdu_indices=[4])
    assert [x.size for x in runs[0][0]] == [6, 4]
    p, _ = read(file_root=folder, file_filter="*.fit", dtypes=[types.UINT16])
    assert p.reader_meta("fits")["epoch_size"] == 1


def test_shards_shuffles_and_checkpoints(folder):
    kwargs = dict(file_root=folder, hdu_indices=[4], random_shuffle=True, initial_fill=3, num_shards=2, shard_id=1)
    _, runs = read(batch_size=2, iterations=5, **kwargs)
    sizes = [x.size - 3 for it in runs for x in it[0]]
    assert sorted(sizes[:3]) == [2, 3, 4]   # shard 1 of 2 over 5 files: img2..img4
    p, _ = read(batch_size=2, iterations=2, checkpoint=True, **kwargs)
    _, rest = read(batch_size=2, iterations=3, checkpoint=p.checkpoint(), **kwargs)
    assert [x.size for it in rest for x in it[0]] == [x.size for it in runs[2:] for x in it[0]]


@pytest.mark.parametrize("kwargs, words", [
    (dict(hdu_indices=[1]), "HDU 1 of '.*img0.fits' holds no image"),
    (dict(hdu_indices=[5]), "has 4 HDUs; hdu_indices asks for HDU 5"),
    (dict(hdu_indices=[2]), "holds int16 data, its output is declared UINT8"),
    (dict(file_filter="*.txt"), "cannot read '.*notes.txt' as a FITS file"),
])
def test_bad_samples_raise_naming_the_file(folder, kwargs, words):
    with pytest.raises(RuntimeError, match=words):
        read(file_root=folder, **{"file_filter": "img*.fits", **kwargs})


def test_argument_errors(folder):
    with pytest.raises(ValueError, match="one of dtypes per HDU index"):
        read(file_root=folder, hdu_indices=[2, 3], dtypes=[types.INT16])
    with pytest.raises(ValueError, match="hdu_indices must be HDU numbers from 1"):
        read(file_root=folder, hdu_indices=[0])
    with pytest.raises(TypeError, match="dtypes must be a list of types"):
        read(file_root=folder, dtypes=["no such type"])
    with pytest.raises(RuntimeError, match="No files found"):
        read(file_root=folder, file_filter="*.none")


@pytest.mark.gpu
def test_gpu_reader_gives_the_cpu_images(folder):
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")

    def run(device):
        @pipeline_def(batch_size=3, num_threads=2, device_id=0, seed=9)
        def pipe():
            return tuple(fn.experimental.readers.fits(file_root=folder, hdu_indices=[2, 3], device=device,
                                                      dtypes=[types.INT16, types.FLOAT], random_shuffle=True))

        return [[np.array(o.as_cpu()[i]) for i in range(len(o))] for o in pipe().run()]

    for cpu, gpu in zip(run("cpu"), run("gpu")):
        for a, b in zip(cpu, gpu):
            assert a.dtype == b.dtype and np.array_equal(a, b)
