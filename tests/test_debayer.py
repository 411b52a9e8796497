"""debayer on the CPU against OpenCV's Bayer conversions (the algorithms DALI 2.4's CPU operator calls)."""
import numpy as np
import pytest

from penstock import fn, pipeline_def

from _util import run_es, samples

cv2 = pytest.importorskip("cv2")

PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}
rng = np.random.default_rng(15)


def _opencv(raw, blue, grey=False):
    code = getattr(cv2, f"COLOR_Bayer{PATTERNS[tuple(blue)]}2{'GRAY' if grey else 'RGB'}")
    out = cv2.cvtColor(raw, code)
    return out[..., None] if grey else out


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("algorithm", [None, "bilinear_ocv", "gray_ocv"])
def test_every_pattern_equals_opencv(dtype, algorithm):
    top = np.iinfo(dtype).max + 1
    raws = [rng.integers(0, top, (h, w)).astype(dtype) for h, w in ((12, 14), (30, 18), (4, 4), (40, 40))]
    blues = [np.array(b, np.int32) for b in PATTERNS]
    kw = {} if algorithm is None else {"algorithm": algorithm}
    out, = run_es(lambda x, b: fn.debayer(x, blue_position=b, **kw), raws, blues, layouts=["HW", None])
    assert out.layout() == "HWC"
    for raw, blue, o in zip(raws, PATTERNS, samples(out)):
        np.testing.assert_array_equal(o, _opencv(raw, blue, algorithm == "gray_ocv"))


def test_sequences_and_the_deprecated_name():
    seqs = [rng.integers(0, 256, (3, 10, 12, 1)).astype(np.uint8) for _ in range(2)]
    with pytest.warns(DeprecationWarning, match="experimental.debayer"):
        @pipeline_def(batch_size=2, num_threads=2, device_id=None)
        def pipe():
            return fn.experimental.debayer(fn.external_source(source=lambda: seqs, batch=True, layout="FHWC"),
                                           blue_position=[1, 0])
        out = pipe().run()[0]
    assert out.layout() == "FHWC"
    for seq, o in zip(seqs, samples(out)):
        for f in range(3):
            np.testing.assert_array_equal(o[f], _opencv(np.ascontiguousarray(seq[f, ..., 0]), (1, 0)))


@pytest.mark.parametrize("kw, error", [({"algorithm": "vng_ocv"}, NotImplementedError),
                                       ({"algorithm": "bogus"}, ValueError),
                                       ({"blue_position": [2, 0]}, ValueError)])
def test_errors(kw, error):
    args = {"blue_position": [0, 0], **kw}
    with pytest.raises(error):
        run_es(lambda x: fn.debayer(x, **args), [np.zeros((4, 4), np.uint8)], layouts=["HW"])


def test_odd_sizes_are_refused():
    with pytest.raises(RuntimeError, match="must be even; sample 0 is 5 x 4"):
        run_es(lambda x: fn.debayer(x, blue_position=[0, 0]), [np.zeros((5, 4), np.uint8)], layouts=["HW"])
