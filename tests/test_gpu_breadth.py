"""GPU kernels of the breadth operators (boxes, points, sequences, lookup_table, noise,
permute_batch, reductions) against the CPU: the same graph run on both devices must agree.
Needs CuPy and a CUDA device."""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from penstock import _cuda, fn, pipeline_def, types  # noqa: E402
from penstock.tensors import TensorListGPU  # noqa: E402

from test_gpu_operators import assert_same, run_on  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")]

rng = np.random.default_rng(11)


def _const(d):
    return lambda: d


def run_mixed(device, graph, data, args=(), layouts=None, seed=1234):
    """``graph(*data_nodes, *arg_nodes)``: the data sources on ``device``, the argument inputs
    (per-sample kwargs) on the CPU. Returns host numpy outputs and their layouts."""
    layouts = layouts or [None] * len(data)

    @pipeline_def(batch_size=len(data[0]), num_threads=2, device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        srcs = [fn.external_source(source=_const(d), layout=lay) for d, lay in zip(data, layouts)]
        if device == "gpu":
            srcs = [s.gpu() for s in srcs]
        extra = [fn.external_source(source=_const(a)) for a in args]
        out = graph(*srcs, *extra)
        return out if isinstance(out, tuple) else (out,)

    outs = pipe().run()
    if device == "gpu":
        assert all(isinstance(o, TensorListGPU) for o in outs)
    return [([o.as_cpu().at(i) for i in range(len(o))], o.layout()) for o in outs]


def assert_mixed(graph, data, args=(), layouts=None, rtol=1e-5, atol_int=0):
    cpu = run_mixed("cpu", graph, data, args, layouts)
    gpu = run_mixed("gpu", graph, data, args, layouts)
    assert len(cpu) == len(gpu)
    for (co, clay), (go, glay) in zip(cpu, gpu):
        assert clay == glay
        for c, g in zip(co, go):
            assert c.shape == g.shape and c.dtype == g.dtype
            if c.dtype.kind == "f":
                np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), rtol=rtol, atol=rtol)
            else:
                assert np.abs(g.astype(np.int64) - c.astype(np.int64)).max(initial=0) <= atol_int


def _scalars(values, dtype):
    return [np.array(v, dtype) for v in values]


# ---- boxes and points -----------------------------------------------------------------------

BOXES = [rng.uniform(0, 0.5, (m, 4)).astype(np.float32) for m in (3, 0, 5, 1)]
for _b in BOXES:
    _b[:, 2:] += _b[:, :2]  # valid ltrb as well as xywh


@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_matches_cpu(ltrb):
    assert_mixed(lambda b: fn.bb_flip(b, ltrb=ltrb), [BOXES])
    assert_mixed(lambda b: fn.bb_flip(b, ltrb=ltrb, horizontal=0, vertical=1), [BOXES])
    assert_mixed(lambda b, h, v: fn.bb_flip(b, ltrb=ltrb, horizontal=h, vertical=v), [BOXES],
                 [_scalars([1, 0, 1, 0], np.int32), _scalars([1, 1, 0, 0], np.int32)])


def test_bb_flip_of_flat_and_double_boxes():
    flat = [b.reshape(-1) for b in BOXES]
    assert_mixed(lambda b: fn.bb_flip(b, vertical=1), [flat])
    assert_mixed(lambda b: fn.bb_flip(b), [[b.astype(np.float64) for b in BOXES]])


POINTS2 = [rng.uniform(-2, 2, (m, 2)).astype(np.float32) for m in (4, 0, 7, 2)]
POINTS3 = [rng.uniform(-2, 2, (m, 3)).astype(np.float32) for m in (5, 1, 0, 3)]


def test_coord_flip_matches_cpu():
    assert_mixed(lambda p: fn.coord_flip(p), [POINTS2])
    assert_mixed(lambda p: fn.coord_flip(p, layout="yx", flip_x=0, flip_y=1, center_y=0.3), [POINTS2])
    assert_mixed(lambda p: fn.coord_flip(p, flip_z=1, center_x=0.0, center_z=-1.5), [POINTS3])
    assert_mixed(lambda p, f, c: fn.coord_flip(p, flip_y=f, center_y=c), [POINTS3],
                 [_scalars([1, 0, 1, 1], np.int32), _scalars([0.1, 0.2, 0.7, -3.0], np.float32)])
    assert_mixed(lambda p: fn.coord_flip(p), [[(p * 100).astype(np.int16) for p in POINTS2]])


@pytest.mark.parametrize("dtype", [types.FLOAT, types.FLOAT64, types.INT16, types.UINT8, types.INT32])
def test_coord_transform_matches_cpu(dtype):
    t = np.dtype(types.to_numpy_type(dtype))  # DALI's rule: dtype is the points' type (or float)

    def pts(points):
        return [(np.abs(p) * 50).astype(t) if t.kind in "iu" else p.astype(t) for p in points]
    m = [0.5, -1.2, 2.0, 0.3, 1.5, -0.7]
    assert_mixed(lambda p: fn.coord_transform(p, M=m, T=[3.0, -4.5], dtype=dtype), [pts(POINTS3)])
    assert_mixed(lambda p: fn.coord_transform(p, MT=[2.0], dtype=dtype), [pts(POINTS2)])
    assert_mixed(lambda p: fn.coord_transform(p, M=[1.5], T=[7.25], dtype=dtype), [pts(POINTS2)])


def test_coord_transform_per_sample_matrices_and_integer_points():
    mts = [rng.uniform(-2, 2, (3, 3)).astype(np.float32) for _ in range(4)]
    assert_mixed(lambda p, mt: fn.coord_transform(p, MT=mt), [POINTS2], [mts])
    ints = [(p * 50).astype(np.int32) for p in POINTS3]
    assert_mixed(lambda p: fn.coord_transform(p, M=[1, 0, 0, 0, 0, 1], T=[0.5, -0.5], dtype=types.INT32), [ints])


def _anchors(k=9):
    c = (np.arange(k) + 0.5) / k
    cx, cy = np.meshgrid(c, c)
    out = []
    for s in (0.1, 0.25):
        out.append(np.stack([cx - s, cy - s, cx + s, cy + s], -1).reshape(-1, 4))
    return np.concatenate(out).astype(np.float32)


@pytest.mark.parametrize("kw", [{}, {"criteria": 0.3}, {"offset": True},
                                {"offset": True, "scale": 2.0, "means": [0.1, -0.1, 0.0, 0.2],
                                 "stds": [0.1, 0.1, 0.2, 0.2]}])
def test_box_encoder_matches_cpu(kw):
    anchors = _anchors()
    labels = [rng.integers(1, 20, len(b)).astype(np.int32) for b in BOXES]
    boxes = [np.clip(b + [0, 0, 0.1, 0.1], 0, 1).astype(np.float32) for b in BOXES]
    boxes[2][1] = anchors[40]  # an exact match: IoU 1
    assert_mixed(lambda b, lab: tuple(fn.box_encoder(b, lab, anchors=anchors.reshape(-1).tolist(), **kw)),
                 [boxes, labels])


# ---- sequences and batches ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_element_extract_matches_cpu(dtype):
    seqs = [(rng.uniform(0, 100, (f, 4, 3, 2))).astype(dtype) for f in (3, 5, 4)]
    assert_mixed(lambda x: tuple(fn.element_extract(x, element_map=[0, 2, 1, 2])), [seqs], layouts=["FHWC"])
    empty = [np.zeros((3, 0, 2), dtype), np.ones((4, 1, 2), dtype)]
    assert_mixed(lambda x: fn.element_extract(x, element_map=[2]), [empty])


def test_per_frame_on_the_gpu_marks_frames_without_a_copy():
    x = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)]
    assert_mixed(lambda d: fn.per_frame(d), [x])
    assert_mixed(lambda d: fn.per_frame(d, replace=True), [x], layouts=["HW"])
    (out, layout), = run_mixed("gpu", lambda d: fn.per_frame(d, replace=True), [x], layouts=["HW"])
    assert layout == "FW"
    for o, s in zip(out, x):
        np.testing.assert_array_equal(o, s)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64])
def test_permute_batch_matches_cpu(dtype):
    data = [rng.integers(0, 100, (k, 3)).astype(dtype) for k in (2, 0, 5, 1)]
    assert_mixed(lambda x: fn.permute_batch(x, indices=[3, 3, 0, 2]), [data])
    assert_mixed(lambda x, i: fn.permute_batch(x, indices=i), [data], [_scalars([1, 0, 2, 2], np.int32)])
    (out, _), = run_mixed("gpu", lambda x: fn.permute_batch(x, indices=[2, 1, 1, 0]), [data])
    for o, i in zip(out, [2, 1, 1, 0]):
        np.testing.assert_array_equal(o, data[i])


# ---- lookup_table ---------------------------------------------------------------------------

@pytest.mark.parametrize("src_dtype", [np.uint8, np.int16, np.int64, np.uint64])
@pytest.mark.parametrize("dtype", [types.FLOAT, types.UINT8, types.INT32, types.FLOAT64, types.INT16])
def test_lookup_table_matches_cpu(src_dtype, dtype):
    lo = 0 if np.dtype(src_dtype).kind == "u" else -5
    data = [rng.integers(lo, 12, (4, 5)).astype(src_dtype), np.zeros((0,), src_dtype).reshape(0, 5),
            rng.integers(lo, 12, (2, 5)).astype(src_dtype)]
    assert_mixed(lambda x: fn.lookup_table(x, keys=[0, 3, 4, 9], values=[-1.5, 2.5, 300.0, 7.0],
                                           default_value=0.5, dtype=dtype), [data])


def test_lookup_table_of_bools_and_without_keys():
    data = [rng.integers(0, 2, (6,)).astype(bool) for _ in range(3)]
    assert_mixed(lambda x: fn.lookup_table(x, keys=[1], values=[4.0], default_value=-2.0), [data])
    ints = [rng.integers(0, 5, (6,)).astype(np.int32) for _ in range(3)]
    assert_mixed(lambda x: fn.lookup_table(x, default_value=3.0, dtype=types.INT32), [ints])


# ---- noise ----------------------------------------------------------------------------------

IMAGES = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((17, 23), (8, 31), (0, 5), (12, 12))]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.float16])
def test_gaussian_noise_gives_the_cpu_values(dtype):
    data = [im.astype(dtype) for im in IMAGES]
    # integers round the noisy float; a last-ulp difference of logf/cosf may round the other way
    atol_int = 1
    rtol = 2e-3 if dtype == np.float16 else 1e-5
    assert_mixed(lambda x: fn.noise.gaussian(x, stddev=7.0), [data], layouts=["HWC"], rtol=rtol, atol_int=atol_int)
    assert_mixed(lambda x, m, s: fn.noise.gaussian(x, mean=m, stddev=s), [data],
                 [_scalars([0.0, 3.0, -1.0, 2.0], np.float32), _scalars([1.0, 0.0, 20.0, 5.0], np.float32)],
                 layouts=["HWC"], rtol=rtol, atol_int=atol_int)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.bool_])
@pytest.mark.parametrize("per_channel", [False, True])
def test_salt_and_pepper_gives_the_cpu_values(dtype, per_channel):
    data = [(im > 128).astype(dtype) if dtype == np.bool_ else im.astype(dtype) for im in IMAGES]
    assert_mixed(lambda x: fn.noise.salt_and_pepper(x, prob=0.3, per_channel=per_channel), [data], layouts=["HWC"])
    assert_mixed(lambda x, p: fn.noise.salt_and_pepper(x, prob=p, salt_vs_pepper=0.8, salt_val=9, pepper_val=2,
                                                       per_channel=per_channel),
                 [data], [_scalars([0.0, 0.5, 1.0, 0.2], np.float32)], layouts=["HWC"])


@pytest.mark.parametrize("level", [4.0, 60.0])  # the two Poisson samplers: products of uniforms, PTRS
def test_shot_noise_agrees_in_distribution(level):
    """Shot noise draws each element from its own stream on the GPU (documented): the values
    differ from the CPU's, the distribution Poisson(level / factor) * factor is the same."""
    data = [np.full((200, 250), level, np.float32) for _ in range(2)] + [np.zeros((3, 0), np.float32).reshape(0, 250)]
    factor = 2.0
    graph = lambda x: fn.noise.shot(x, factor=factor)  # noqa: E731
    (gpu, _), = run_mixed("gpu", graph, [data])
    (again, _), = run_mixed("gpu", graph, [data])
    (cpu, _), = run_mixed("cpu", graph, [data])
    lam = level / factor
    for g, a, c in zip(gpu, again, cpu):
        np.testing.assert_array_equal(g, a)  # deterministic for a seed
        assert g.shape == c.shape
        if g.size == 0:
            continue
        k = g.astype(np.float64) / factor
        np.testing.assert_array_equal(k, np.round(k))  # whole photon counts
        sem = np.sqrt(lam / k.size)
        assert abs(k.mean() - lam) < 5 * sem
        assert abs(k.var() / lam - 1) < 0.05
        assert abs(k.mean() - c.astype(np.float64).mean() / factor) < 7 * sem
    assert not np.array_equal(gpu[0], gpu[1])  # samples draw from different streams


# ---- reductions -----------------------------------------------------------------------------

RAGGED = [rng.uniform(-50, 50, s).astype(np.float32) for s in ((4, 6, 3), (2, 5, 3), (7, 1, 3), (3, 6, 3))]
KINDS = ["sum", "mean", "mean_square", "rms", "min", "max"]


def _reduction(kind):
    return getattr(fn.reductions, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axes", [None, (0,), (2,), (0, 2), (-1, 1)])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reductions_match_cpu(kind, axes, keep_dims):
    kw = {} if axes is None else {"axes": list(axes)}
    assert_mixed(lambda x: _reduction(kind)(x, keep_dims=keep_dims, **kw), [RAGGED], layouts=["HWC"])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.uint64, np.float64, np.bool_])
@pytest.mark.parametrize("kind", KINDS)
def test_reductions_of_every_type(dtype, kind):
    data = [(x > 0) if dtype == np.bool_ else (np.abs(x) if np.dtype(dtype).kind == "u" else x).astype(dtype)
            for x in RAGGED]
    assert_mixed(lambda x: _reduction(kind)(x, axes=[0, 1]), [data])
    assert_mixed(lambda x: _reduction(kind)(x, axis_names="C"), [data], layouts=["HWC"])


# The (input, reduction, dtype) combinations DALI accepts; others raise on both devices.
@pytest.mark.parametrize("op,dtype", [("sum", types.INT32), ("sum", types.INT64), ("sum", types.FLOAT),
                                      ("mean", types.INT32), ("mean", types.FLOAT), ("mean_square", types.INT64),
                                      ("mean_square", types.FLOAT), ("rms", types.INT32), ("rms", types.FLOAT)])
def test_reductions_of_ints_with_an_output_type(op, dtype):
    ints = [(x * 3).astype(np.int32) for x in RAGGED]
    assert_mixed(lambda x: getattr(fn.reductions, op)(x, axes=[1], dtype=dtype), [ints])


def test_integer_sums_and_means_wrap_in_a_narrow_output_type():
    bytes_ = [(np.abs(x) * 5).astype(np.uint8) for x in RAGGED]  # sums past 255
    assert_mixed(lambda x: fn.reductions.sum(x, axes=[0], dtype=types.UINT8), [bytes_])
    assert_mixed(lambda x: fn.reductions.mean(x, dtype=types.UINT8), [bytes_])


def test_unsupported_output_types_are_rejected_on_the_gpu():
    with pytest.raises(RuntimeError, match="is not supported for float32 input"):
        run_mixed("gpu", lambda x: fn.reductions.sum(x, dtype=types.INT32), [RAGGED])


def test_sum_and_mean_of_empty_samples():
    data = [np.zeros((0, 3), np.float32), rng.standard_normal((4, 3)).astype(np.float32), np.zeros((2, 0), np.float32)]
    assert_mixed(lambda x: fn.reductions.sum(x, axes=[0]), [data[:2]])
    assert_mixed(lambda x: fn.reductions.sum(x), [data])
    assert_mixed(lambda x: fn.reductions.sum(x, axes=[1], keep_dims=True), [data])


@pytest.mark.parametrize("kind", ["variance", "std_dev"])
@pytest.mark.parametrize("axes,ddof", [(None, 0), ((0,), 1), ((0, 1), 0), ((2,), 2)])
def test_variance_and_std_dev_match_cpu(kind, axes, ddof):
    kw = {} if axes is None else {"axes": list(axes)}

    def graph(x):
        mean = fn.reductions.mean(x, **kw)
        return _reduction(kind)(x, mean, ddof=ddof, **kw)

    assert_mixed(graph, [RAGGED], layouts=["HWC"])
    ints = [(x * 2).astype(np.int16) for x in RAGGED]
    assert_mixed(graph, [ints], layouts=["HWC"])


def test_gpu_reductions_of_float16_are_refused_by_name():
    data = [x.astype(np.float16) for x in RAGGED]
    with pytest.raises(Exception, match="FLOAT16"):
        run_mixed("gpu", lambda x: fn.reductions.sum(x), [data])


def test_assert_same_helper_still_compares_plain_graphs():
    # the shared helpers of test_gpu_operators run the plain (all-on-GPU) form as well
    assert_same(lambda x: fn.reductions.max(x, axes=[2]), [RAGGED], ["HWC"])
    outs = run_on("gpu", lambda x: fn.reductions.min(x), [RAGGED])
    assert [o.item() for o in outs[0]] == [float(x.min()) for x in RAGGED]
