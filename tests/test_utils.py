"""penstock.utils: a batch of images as one grid, drawn or saved."""
import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def, types, utils


def _images():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((20, 30), (24, 16), (10, 10))]


def test_grid_places_each_image_in_its_cell_whatever_its_size():
    images = _images()
    grid = utils.make_grid(images, columns=2, padding=1)
    # cells are as large as the largest image (24 x 30) plus padding: 2 rows, 2 columns
    assert grid.shape == (1 + 2 * 25, 1 + 2 * 31, 3) and grid.dtype == np.uint8
    np.testing.assert_array_equal(grid[1:21, 1:31], images[0])
    np.testing.assert_array_equal(grid[1:25, 32:48], images[1])
    np.testing.assert_array_equal(grid[26:36, 1:11], images[2])
    assert not grid[26:, 32:].any()  # the empty fourth cell


def test_pipeline_batches_in_chw_float_are_stretched_to_the_full_range():
    images = _images()

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        return fn.crop_mirror_normalize(x, mean=[128.0] * 3, std=[50.0] * 3, dtype=types.FLOAT, output_layout="CHW")

    (batch,) = pipe().run()
    assert batch.layout() == "CHW"
    grid = utils.make_grid(batch, columns=3, padding=0)
    first = grid[:20, :30].astype(np.float32)
    expected = images[0].astype(np.float32)
    expected = (expected - expected.min()) * 255 / (expected.max() - expected.min())
    assert np.abs(first - expected).max() <= 1  # the same picture, min-max stretched


def test_save_grid_writes_the_grid(tmp_path):
    path = str(tmp_path / "grid.png")
    batch = np.stack([np.full((8, 8, 1), v, np.uint8) for v in (0, 128, 255)])
    assert utils.save_grid(batch, path, columns=3) is None  # an interactive session prints nothing
    grid = utils.make_grid(batch, columns=3)
    np.testing.assert_array_equal(np.asarray(Image.open(path).convert("RGB")), grid)
    assert grid[2, 2 + 10].tolist() == [128, 128, 128]  # grey, expanded to RGB


def test_show_batch_draws_one_titled_axis_per_image():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    figure = utils.show_batch(_images(), labels=[3, 1, 4], columns=2)
    drawn = [ax for ax in figure.axes if ax.images]
    assert [ax.get_title() for ax in drawn] == ["3", "1", "4"]
    np.testing.assert_array_equal(drawn[1].images[0].get_array(), _images()[1])
