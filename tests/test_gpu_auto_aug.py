"""GPU kernels of ``equalize`` and the automatic augmentations' point operators
(operators/point_ops.py, csrc/cuda/point_ops.cu) against the CPU, and whole auto-augment policies
run on GPU images against the same pipelines on the CPU. Needs CuPy and a CUDA device.

Tolerances: equalize, auto-contrast, invert, posterize, solarize, solarize-add and sharpness
must match exactly (integer tables, or the CPU kernel's float32 steps without fused
multiply-adds). Contrast may differ by 1: its grey level is a float64 dot product of the
channel means that numpy hands to BLAS (which may fuse multiply-adds) and the GPU sums in order,
so a grey level right at .5 may round apart, moving the output by at most |1 - factor| <= 1 for
the factors used here (0..2)."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn  # noqa: E402
from penstock._graph import make_op  # noqa: E402
from penstock.auto_aug import auto_augment, rand_augment, trivial_augment  # noqa: E402
from penstock.operators import point_ops  # noqa: E402
from test_gpu_operators import assert_same, run_on  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(23)


def _low_contrast(shape):
    return rng.integers(40, 180, shape).astype(np.uint8)


# odd sizes; a flat image (equalize and auto-contrast leave it alone); one large enough for several
# histogram blocks per sample; a 2x2 one (sharpness: all border)
RGB = [_low_contrast((37, 53, 3)), np.full((9, 11, 3), 77, np.uint8), rng.integers(0, 256, (97, 83, 3), np.uint8),
       _low_contrast((2, 2, 3)), _low_contrast((1, 31, 3)), _low_contrast((64, 48, 3))]
GRAY = [_low_contrast((21, 17)), _low_contrast((50, 3)), np.full((5, 5), 200, np.uint8)]
MIXED = [_low_contrast((13, 7, 3)), _low_contrast((11, 9, 1)), _low_contrast((19, 5, 4))]  # max 4 channels
MANY = [_low_contrast((15, 9, 10)), _low_contrast((33, 40, 10))]  # more channels than shared-memory bins
BATCHES = [(RGB, "HWC"), (GRAY, "HW"), (MIXED, "HWC"), (MANY, "HWC")]


def _const(d):
    return lambda: d


def _internal(schema, params=None, constant=None):
    """``graph(x)`` applying an internal point operator with per-sample (or constant) parameters,
    the per-sample ones an argument input from the CPU."""
    def graph(x):
        kwargs = {}
        if params is not None:
            kwargs["param"] = fn.external_source(source=_const([np.float32(p) for p in params]))
        elif constant is not None:
            kwargs["param"] = constant
        return make_op(schema, (x,), kwargs)[0]
    return graph


@pytest.mark.parametrize("batch,layout", BATCHES)
@pytest.mark.parametrize("schema", [point_ops.EQUALIZE, point_ops.AUTO_CONTRAST, point_ops.INVERT])
def test_parameterless_point_ops_match_cpu_exactly(schema, batch, layout):
    graph = fn.equalize if schema is point_ops.EQUALIZE else _internal(schema)
    assert_same(graph, [batch], [layout], atol_int=0)


def test_equalize_matches_cpu_on_a_large_batch():
    images = [rng.integers(0, 256, (128 + i, 96 + 3 * i, 3), np.uint8) // (1 + i % 4) for i in range(16)]
    assert_same(fn.equalize, [images], ["HWC"], atol_int=0)


# one value per sample of the largest batch (RGB), fractional ones included
PER_SAMPLE = [(point_ops.POSTERIZE, [8, 6, 4, 2.4, 1, 0]), (point_ops.SOLARIZE, [0, 60, 100, 128.5, 200, 256]),
              (point_ops.SOLARIZE_ADD, [0, 10, 50.5, 100, 110, 200]),
              (point_ops.CONTRAST, [0.1, 0.5, 1.0, 1.9, 0.0, 1.37]),
              (point_ops.SHARPNESS, [0.1, 0.5, 1.0, 1.9, 0.0, 1.37])]


@pytest.mark.parametrize("schema,values", PER_SAMPLE)
def test_point_ops_with_per_sample_magnitudes_match_cpu(schema, values):
    atol = 1 if schema is point_ops.CONTRAST else 0
    batches = [(RGB, "HWC")] if schema is point_ops.SHARPNESS else BATCHES
    for batch, layout in batches:
        params = values[:len(batch)]
        assert_same(_internal(schema, params), [batch], [layout], atol_int=atol)


@pytest.mark.parametrize("schema,value", [(point_ops.POSTERIZE, 3), (point_ops.SOLARIZE, 128),
                                          (point_ops.SOLARIZE_ADD, 30), (point_ops.CONTRAST, 1.6),
                                          (point_ops.SHARPNESS, 1.8)])
def test_point_ops_with_a_constant_magnitude_match_cpu(schema, value):
    atol = 1 if schema is point_ops.CONTRAST else 0
    assert_same(_internal(schema, constant=value), [RGB], ["HWC"], atol_int=atol)


def _photo_like(h, w):
    """Smooth gradients with a little noise: what the policies' warps and colour changes expect."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], axis=-1)
    return np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)


POLICIES = {
    "rand_augment": lambda x: rand_augment.rand_augment(x, n=3, m=17, seed=11),
    "trivial_augment_wide": lambda x: trivial_augment.trivial_augment_wide(x, seed=12),
    "auto_augment": lambda x: auto_augment.auto_augment(x, seed=13),
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_policies_on_gpu_images_match_cpu(policy):
    """The same random choices on both devices (drawn on the host from the same seeds), so every
    sample gets the same operations. The warps and colour operations agree within 1 level on their
    own; a later threshold (solarize, posterize, equalize) can turn such a level into a larger
    jump on a few elements, so at most 5% of each sample's elements may differ by more than 1 and
    the mean difference stays within 1 level (another operation or magnitude would exceed both)."""
    images = [_photo_like(40 + 3 * i, 56 - i) for i in range(16)]
    kw = dict(layouts=["HWC"], enable_conditionals=True)
    cpu = run_on("cpu", POLICIES[policy], [images], **kw)[0]
    gpu = run_on("gpu", POLICIES[policy], [images], **kw)[0]
    changed = 0
    for img, c, g in zip(images, cpu, gpu):
        assert c.shape == g.shape == img.shape and c.dtype == g.dtype == np.uint8
        diff = np.abs(c.astype(np.int64) - g.astype(np.int64))
        assert (diff > 1).mean() <= 0.05 and diff.mean() <= 1, (policy, diff.max(), (diff > 1).mean(), diff.mean())
        changed += not np.array_equal(c, img)
    assert changed >= 8
