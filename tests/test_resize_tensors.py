"""tensor_resize: sizes or scales for chosen axes, size rounding, alignment and ROIs, against resize on
images and numpy on 1-D signals; a GPU test compares devices."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es

rng = np.random.default_rng(23)
IMAGES = [rng.uniform(0, 255, (24, 32, 3)).astype(np.float32) for _ in range(2)]


def test_sizes_on_image_axes_are_resize():
    a, b = run_es(lambda x: (fn.tensor_resize(x, sizes=[12, 17], axes=[0, 1]), fn.resize(x, size=[12, 17])), IMAGES,
                  layouts=["HWC"])
    for i in range(2):
        np.testing.assert_allclose(a.at(i), b.at(i), atol=1e-3)
    a, = run_es(lambda x: fn.tensor_resize(x, sizes=[13], axis_names="W"), IMAGES, layouts=["HWC"])
    assert a.at(0).shape == (24, 13, 3)


@pytest.mark.parametrize("rounding, expected", [("round", (9, 13)), ("truncate", (8, 13)), ("ceil", (9, 14))])
def test_scales_and_size_rounding(rounding, expected):
    out, = run_es(lambda x: fn.tensor_resize(x, scales=[0.37, 0.41], axes=[0, 1], size_rounding=rounding), IMAGES,
                  layouts=["HWC"])
    assert out.at(0).shape == expected + (3,)


def test_one_dimensional_linear_resampling():
    signal = [np.arange(10, dtype=np.float32)] * 2
    out, = run_es(lambda x: fn.tensor_resize(x, sizes=[20], antialias=False), signal)
    centres = (np.arange(20) + 0.5) / 2 - 0.5  # output centres in input pixels; linear, edges clamped
    np.testing.assert_allclose(out.at(0), np.clip(centres, 0, 9), atol=1e-5)


def test_errors():
    with pytest.raises(IndexError):
        run_es(lambda x: fn.tensor_resize(x, sizes=[5, 5], axes=[2, 3]), IMAGES, layouts=["HWC"])
    with pytest.raises(ValueError, match="exactly one"):
        run_es(lambda x: fn.tensor_resize(x, sizes=[5], scales=[2.0]), IMAGES, layouts=["HWC"])
    with pytest.raises(ValueError, match="at most 3"):
        run_es(lambda x: fn.tensor_resize(x, sizes=[3, 3, 3, 3]), [np.zeros((2, 2, 2, 2), np.float32)])


@pytest.mark.gpu
def test_gpu_equals_cpu():
    pytest.importorskip("cupy")
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    from test_gpu_breadth import assert_mixed
    assert_mixed(lambda x: fn.tensor_resize(x, scales=[0.37, 1.5], axes=[0, 1], alignment=[0.0, 1.0]), [IMAGES],
                 layouts=["HWC"], rtol=1e-4)


@pytest.mark.gpu
def test_resizing_three_axes_on_the_gpu_is_refused_naming_the_operator():
    pytest.importorskip("cupy")
    from penstock import _cuda
    if not _cuda.available():
        pytest.skip("needs a CUDA device")
    from test_gpu_breadth import assert_mixed
    with pytest.raises(Exception, match=r"tensor_resize[\s\S]*NotImplementedError[\s\S]*volumes"):
        assert_mixed(lambda x: fn.tensor_resize(x, scales=[0.37, 1.5], axes=[0, 2]), [IMAGES], layouts=["HWC"])
