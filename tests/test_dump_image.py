"""dump_image writes plain PPM files named as DALI 2.4 names them, and passes the images on."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es


def test_writes_ppm_files_and_passes_the_batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    images = [np.arange(18, dtype=np.uint8).reshape(2, 3, 3), np.full((1, 2, 3), 200, np.uint8)]
    out, = run_es(lambda x: fn.dump_image(x, suffix="abc"), images, layouts=["HWC"])
    np.testing.assert_array_equal(out.at(0), images[0])
    assert (tmp_path / "0-abc-0.ppm").read_text() == "P3\n3 2\n255\n0 1 2 3 4 5 6 7 8 \n9 10 11 12 13 14 15 16 17 \n"
    assert (tmp_path / "1-abc-0.ppm").read_text() == "P3\n2 1\n255\n200 200 200 200 200 200 \n"


def test_refuses_other_types_and_layouts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="uint8 HWC"):
        run_es(lambda x: fn.dump_image(x), [np.zeros((2, 2, 3), np.float32)], layouts=["HWC"])
    with pytest.raises(RuntimeError, match="input_layout"):
        run_es(lambda x: fn.dump_image(x, input_layout="CHW"), [np.zeros((3, 2, 2), np.uint8)], layouts=["CHW"])


@pytest.mark.gpu
def test_gpu_images_are_written_from_the_host(tmp_path, monkeypatch):
    pytest.importorskip("cupy")
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    from test_gpu_breadth import run_mixed
    monkeypatch.chdir(tmp_path)
    images = [np.arange(18, dtype=np.uint8).reshape(2, 3, 3)]
    run_mixed("gpu", lambda x: fn.dump_image(x, suffix="g"), [images], layouts=["HWC"])
    assert (tmp_path / "0-g-0.ppm").read_text().startswith("P3\n3 2\n255\n0 1 2")
