"""The layouts an operator accepts (``OpSchema.input_layouts``, DALI's rule), checked in one place:
an empty layout takes the first declared layout with as many dimensions, anything else that no
declared layout matches is an error naming the operator and the valid layouts."""
import numpy as np
import pytest

from penstock import fn
from penstock._registry import schemas
from penstock._image_layout import input_layout

from _util import run_es, samples
from test_resize_kernel import ref_resize, round_sat

RNG = np.random.default_rng(7)


def _resize_frames(frames, h, w):
    """Numpy reference: each frame of an FHWC sample resized on its own (leading dims are frames)."""
    return round_sat(ref_resize(frames, (h, w)), np.uint8)


def test_resize_reads_4d_samples_without_layout_as_frames():
    video = RNG.integers(0, 256, (3, 12, 16, 3), dtype=np.uint8)
    out, = run_es(lambda x: fn.resize(x, resize_x=8, resize_y=6), [video, video[:2]])
    got = samples(out)
    np.testing.assert_allclose(got[0], _resize_frames(video, 6, 8), atol=1)
    np.testing.assert_allclose(got[1], _resize_frames(video[:2], 6, 8), atol=1)
    assert got[0].shape == (3, 6, 8, 3)  # frames kept: not resized as a 3-D volume


@pytest.mark.parametrize("shape, layout, message", [  # DALI's words
    ((12, 16), None, "The number of dimensions 2 does not match any of the allowed layouts for input 0"),
    ((2, 2, 2, 12, 16, 3), None, "The number of dimensions 6 does not match any of the allowed layouts"),
    ((12, 16, 3), "WHC", 'The layout "WHC" does not match any of the allowed layouts for input 0'),
])
def test_resize_rejects_layouts_it_does_not_accept(shape, layout, message):
    x = RNG.integers(0, 256, shape, dtype=np.uint8)
    with pytest.raises(RuntimeError) as info:
        run_es(lambda s: fn.resize(s, resize_x=4, resize_y=4), [x], layouts=[layout])
    text = str(info.value)
    assert "resize ('" in text and message in text  # names the operator instance
    assert "Valid layouts are:\nHWC\nFHWC\nCHW" in text  # the valid layouts are listed


def test_resize_accepts_every_declared_layout():
    vol = RNG.integers(0, 256, (4, 6, 8, 1), dtype=np.uint8)
    out, = run_es(lambda s: fn.resize(s, size=(2, 3, 4)), [vol], layouts=["DHWC"])
    assert samples(out)[0].shape == (2, 3, 4, 1)


class _Op:
    label = "fn.test ('t')"

    def __init__(self, layouts):
        self.schema = type("S", (), {"input_layouts": layouts})()


class _TL:
    def __init__(self, ndim, layout):
        self._layout, self._ndim = layout, ndim

    def ndim(self):
        return self._ndim


def test_rule_first_match_by_ndim_and_passthrough_without_declared_layouts():
    op = _Op(("HWC", "FHWC", "CHW", "DHWC"))
    assert input_layout(op, _TL(4, "")) == "FHWC"
    assert input_layout(op, _TL(3, "")) == "HWC"
    assert input_layout(op, _TL(3, "CHW")) == "CHW"
    assert input_layout(_Op(()), _TL(5, "")) == ""
    assert input_layout(_Op(()), _TL(2, "XY")) == "XY"
    with pytest.raises(ValueError, match="not valid for 2-dimensional"):
        input_layout(_Op(()), _TL(2, "HWC"))


@pytest.mark.parametrize("name", sorted(n for n, s in schemas().items() if s.input_layouts))
def test_declared_layouts_are_well_formed(name):
    layouts = schemas()[name].input_layouts
    assert len(set(layouts)) == len(layouts)
    assert all(layout and len(set(layout)) == len(layout) for layout in layouts)


@pytest.mark.parametrize("build", [
    lambda x: fn.jpeg_compression_distortion(x),
    lambda x: fn.grid_mask(x),
    lambda x: fn.hsv(x),
])
def test_operators_declaring_layouts_share_the_check(build):
    x = RNG.integers(0, 256, (8, 8), dtype=np.uint8)  # 2-D: no declared layout has 2 dims
    with pytest.raises(RuntimeError, match="The number of dimensions 2 does not match any of the allowed layouts"):
        run_es(build, [x])
