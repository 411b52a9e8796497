"""fn.random.* (operators.md §6): distributions, determinism, per-sample arguments."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types

N = 4000  # elements per sample for the distribution checks


def _run(graph, batch_size=2, iters=1, inputs=None, **kw):
    kw.setdefault("num_threads", 2)
    kw.setdefault("seed", 123)

    @pipeline_def(batch_size=batch_size, device_id=None, **kw)
    def p():
        srcs = [fn.external_source(source=(lambda d: lambda: d)(d)) for d in (inputs or [])]
        out = graph(*srcs)
        return out if isinstance(out, tuple) else (out,)

    pipe = p()
    return [pipe.run() for _ in range(iters)]


def _one(graph, **kw):
    return _run(graph, **kw)[0][0]


def test_uniform_defaults():
    out = _one(lambda: fn.random.uniform(), batch_size=64)
    assert out.dtype == types.FLOAT
    assert out.shape() == [()] * 64
    v = out.as_array()
    assert (v >= -1).all() and (v < 1).all()
    assert len(np.unique(v)) > 60  # samples are not all the same draw


def test_uniform_distribution():
    v = _one(lambda: fn.random.uniform(range=[2, 5], shape=[N])).as_array().ravel()
    assert (v >= 2).all() and (v < 5).all()
    assert v.mean() == pytest.approx(3.5, abs=0.05)
    assert v.var() == pytest.approx(9 / 12, rel=0.07)


def test_uniform_values():
    v = _one(lambda: fn.random.uniform(values=[1, 7, 9.5], shape=[N])).as_array().ravel()
    assert set(np.unique(v)) == {1.0, 7.0, 9.5}
    for x in (1.0, 7.0, 9.5):
        assert (v == x).mean() == pytest.approx(1 / 3, abs=0.03)


def test_uniform_values_must_not_be_empty():
    with pytest.raises(ValueError, match=r"random.uniform.*'values' must not be empty"):
        _one(lambda: fn.random.uniform(values=[]))


def test_uniform_integer_dtype():
    out = _one(lambda: fn.random.uniform(range=[0, 10], shape=[N], dtype=types.INT32))
    assert out.dtype == types.INT32
    v = out.as_array()
    assert v.min() >= 0 and v.max() <= 10
    assert len(np.unique(v)) >= 10


def test_normal_distribution():
    out = _one(lambda: fn.random.normal(mean=3.0, stddev=2.0, shape=[N]))
    assert out.dtype == types.FLOAT
    v = out.as_array().ravel()
    assert v.mean() == pytest.approx(3.0, abs=0.1)
    assert v.std() == pytest.approx(2.0, rel=0.05)


def test_normal_defaults():
    v = _one(lambda: fn.random.normal(shape=[N])).as_array().ravel()
    assert v.mean() == pytest.approx(0, abs=0.05) and v.std() == pytest.approx(1, rel=0.05)


def test_coin_flip():
    out = _one(lambda: fn.random.coin_flip(probability=0.3, shape=[N]))
    assert out.dtype == types.INT32
    v = out.as_array()
    assert set(np.unique(v)) <= {0, 1}
    assert v.mean() == pytest.approx(0.3, abs=0.03)


def test_coin_flip_defaults_and_bool():
    out = _one(lambda: fn.random.coin_flip(), batch_size=200)
    assert out.dtype == types.INT32 and out.shape()[0] == ()
    assert out.as_array().mean() == pytest.approx(0.5, abs=0.12)
    out = _one(lambda: fn.random.coin_flip(dtype=types.BOOL, shape=[10]))
    assert out.dtype == types.BOOL
    zero, one = _run(lambda: (fn.random.coin_flip(probability=0.0, shape=[50]),
                              fn.random.coin_flip(probability=1.0, shape=[50])))[0]
    assert zero.as_array().sum() == 0 and one.as_array().min() == 1


def test_beta():
    v = _one(lambda: fn.random.beta(alpha=2.0, beta=5.0, shape=[N])).as_array().ravel()
    assert (v >= 0).all() and (v <= 1).all()
    assert v.mean() == pytest.approx(2 / 7, abs=0.02)
    var = 2 * 5 / (7 ** 2 * 8)
    assert v.var() == pytest.approx(var, rel=0.1)


def test_choice_int():
    out = _run(lambda a: fn.random.choice(a, shape=[N]), inputs=[[np.array(5, np.int32)] * 2])[0][0]
    v = out.as_array()
    assert set(np.unique(v)) == set(range(5))
    assert out.dtype == types.INT32


def test_choice_with_p():
    p = [0.1, 0.2, 0.7]
    out = _run(lambda a: fn.random.choice(a, p=p, shape=[N]),
               inputs=[[np.array([10, 20, 30], np.int64)] * 2])[0][0]
    v = out.as_array().ravel()
    assert out.dtype == types.INT64
    for val, prob in zip((10, 20, 30), p):
        assert (v == val).mean() == pytest.approx(prob, abs=0.03)


def test_choice_zero_probability_never_drawn():
    out = _run(lambda a: fn.random.choice(a, p=[0.5, 0.0, 0.5], shape=[N]),
               inputs=[[np.array(3, np.int32)] * 2])[0][0]
    assert 1 not in set(out.as_array().ravel().tolist())


def test_choice_scalar_output():
    out = _run(lambda a: fn.random.choice(a), inputs=[[np.array(4, np.int32)] * 2])[0][0]
    assert out.shape() == [(), ()]


# ---- determinism -------------------------------------------------------------------------------

def _stream(seed_kw, op_seed=None, iters=3, **kw):
    outs = _run(lambda: (fn.random.uniform(shape=[5], seed=op_seed), fn.random.normal(shape=[3]),
                         fn.random.coin_flip(shape=[4])), iters=iters, **seed_kw, **kw)
    return [[o.as_array().tolist() for o in it] for it in outs]


def test_pipeline_seed_reproducible():
    assert _stream(dict(seed=5)) == _stream(dict(seed=5))
    assert _stream(dict(seed=5)) != _stream(dict(seed=6))


def test_op_seed_reproducible():
    a = _run(lambda: fn.random.uniform(shape=[5], seed=77), seed=1)[0][0].as_array()
    b = _run(lambda: fn.random.uniform(shape=[5], seed=77), seed=2)[0][0].as_array()
    c = _run(lambda: fn.random.uniform(shape=[5], seed=78), seed=1)[0][0].as_array()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_no_seed_differs_between_pipelines():
    a = _run(lambda: fn.random.uniform(shape=[8]), seed=None)[0][0].as_array()
    b = _run(lambda: fn.random.uniform(shape=[8]), seed=None)[0][0].as_array()
    assert not np.array_equal(a, b)


def test_iterations_differ():
    outs = _run(lambda: fn.random.uniform(shape=[8]), iters=3)
    vals = [o[0].as_array().tobytes() for o in outs]
    assert len(set(vals)) == 3


def test_two_ops_differ():
    a, b = _run(lambda: (fn.random.uniform(shape=[8]), fn.random.uniform(shape=[8])))[0]
    assert not np.array_equal(a.as_array(), b.as_array())


@pytest.mark.parametrize("threads, depth, exec_async, pipelined", [
    (1, 1, False, False), (2, 2, True, True), (4, 3, True, True), (3, 1, False, True)])
def test_independent_of_threads_and_prefetch(threads, depth, exec_async, pipelined):
    ref = _stream(dict(seed=9), num_threads=1, prefetch_queue_depth=2, iters=4)
    got = _stream(dict(seed=9), num_threads=threads, prefetch_queue_depth=depth, iters=4,
                  exec_async=exec_async, exec_pipelined=pipelined)
    assert got == ref


# ---- per-sample arguments / shapes --------------------------------------------------------------

def test_per_sample_range():
    ranges = [np.array([0, 1], np.float32), np.array([100, 101], np.float32)]
    out = _run(lambda r: fn.random.uniform(range=r, shape=[50]), inputs=[ranges])[0][0]
    a, b = out.at(0), out.at(1)
    assert ((a >= 0) & (a < 1)).all() and ((b >= 100) & (b < 101)).all()


def test_per_sample_normal_mean():
    means = [np.array(-10, np.float32), np.array(10, np.float32)]
    out = _run(lambda m: fn.random.normal(mean=m, stddev=0.1, shape=[100]), inputs=[means])[0][0]
    assert out.at(0).mean() == pytest.approx(-10, abs=0.1)
    assert out.at(1).mean() == pytest.approx(10, abs=0.1)


def test_per_sample_probability():
    probs = [np.array(0.0, np.float32), np.array(1.0, np.float32)]
    out = _run(lambda p: fn.random.coin_flip(probability=p, shape=[20]), inputs=[probs])[0][0]
    assert out.at(0).sum() == 0 and out.at(1).sum() == 20


def test_random_node_as_argument():
    # a random draw used as another op's per-sample argument
    out = _one(lambda: fn.random.normal(mean=fn.random.uniform(range=[50, 60]), stddev=0.01,
                                        shape=[10]), batch_size=3)
    for i in range(3):
        s = out.at(i)
        assert 49.9 < s.mean() < 60.1 and s.std() < 0.1


def test_per_sample_shape():
    shapes = [np.array([2, 3], np.int32), np.array([4, 1], np.int32)]
    out = _run(lambda s: fn.random.uniform(shape=s), inputs=[shapes])[0][0]
    assert out.shape() == [(2, 3), (4, 1)]


def test_shape_like_input():
    data = [np.zeros((3, 2), np.uint8), np.zeros((5, 1), np.uint8)]
    out = _run(lambda x: fn.random.normal(x), inputs=[data])[0][0]
    assert out.shape() == [(3, 2), (5, 1)]
    assert out.dtype == types.FLOAT


def test_probability_outside_0_1_acts_as_never_or_always():
    below, above = _run(lambda: (fn.random.coin_flip(probability=-1.0, shape=[50]),
                                 fn.random.coin_flip(probability=1.5, shape=[50])))[0]
    assert below.as_array().sum() == 0 and (above.as_array() == 1).all()


@pytest.mark.parametrize("graph, dtype", [
    (lambda dtype: fn.random.coin_flip(dtype=dtype), types.FLOAT),
    (lambda dtype: fn.random.coin_flip(dtype=dtype), types.INT16),
    (lambda dtype: fn.random.beta(dtype=dtype), types.UINT8),
    (lambda dtype: fn.random.beta(dtype=dtype), types.INT32),
])
def test_unsupported_dtypes_raise_at_build(graph, dtype):
    with pytest.raises(RuntimeError, match=f"dtype {dtype.name} is not supported"):
        _one(lambda: graph(dtype))


def test_coin_flip_uint8_and_beta_float64():
    flips, draws = _run(lambda: (fn.random.coin_flip(dtype=types.UINT8, shape=[20]),
                                 fn.random.beta(alpha=2.0, beta=2.0, dtype=types.FLOAT64, shape=[20])))[0]
    assert flips.dtype == types.UINT8 and set(np.unique(flips.as_array())) <= {0, 1}
    v = draws.as_array()
    assert draws.dtype == types.FLOAT64 and v.dtype == np.float64 and ((v >= 0) & (v <= 1)).all()


@pytest.mark.parametrize("rng_, dtype", [([2.0], types.FLOAT), ([2.0, 2.0], types.FLOAT), ([3.0, 2.0], types.FLOAT),
                                         ([2.0, 2.0], types.INT32)])
def test_uniform_empty_range_raises(rng_, dtype):
    # [lo, hi) must hold a value: lo < hi, also for integers (whose draws include hi);
    # one value is [v, v), empty
    with pytest.raises(RuntimeError, match="range"):
        _one(lambda: fn.random.uniform(range=rng_, dtype=dtype))


def test_generators_follow_variable_batch_size():
    def src(i):
        return [np.array([i], np.int32)] * (i % 3 + 1)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
    def p():
        x = fn.external_source(source=src)
        return x, fn.random.uniform(), fn.random.coin_flip(), x + fn.random.normal()

    pipe = p()
    for expected in (1, 2, 3, 1):
        assert [len(o) for o in pipe.run()] == [expected] * 4


def test_uniform_integer_dtype_includes_both_truncated_ends():
    for rng_, want in [([0, 3], {0, 1, 2, 3}), ([0.6, 2.7], {0, 1, 2}), ([-1.7, -0.2], {-1, 0})]:
        @pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=4)
        def p():
            return fn.random.uniform(range=rng_, dtype=types.INT32, shape=[200])

        (out,) = p().run()
        assert out.dtype == types.INT32
        assert set(np.asarray(out.as_tensor()).reshape(-1).tolist()) == want


def test_choice_from_a_python_list_with_probabilities():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=4)
    def p():
        return fn.random.choice([10, 20, 30], p=[0.1, 0.3, 0.6], shape=[5000])

    (out,) = p().run()
    values = np.asarray(out.as_tensor()).reshape(-1)
    assert out.dtype == types.INT32
    freq = np.array([(values == v).mean() for v in (10, 20, 30)])
    np.testing.assert_allclose(freq, [0.1, 0.3, 0.6], atol=0.02)


def test_choice_has_no_dtype_argument():
    """The output takes the type of `a`; DALI 2.4 has no `dtype` for random.choice (KeyError)."""
    with pytest.raises(KeyError):
        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def p():
            return fn.random.choice(5, dtype=types.INT8)
        p()


@pytest.mark.parametrize("seed, iteration", [(0, 0), (1234, 5), (2**63 + 7, 2**40)])
def test_an_operators_draws_are_philox_keyed_on_its_seed_at_the_iteration(seed, iteration):
    from penstock._operator import Operator
    op = Operator.__new__(Operator)
    op.seed = seed
    key = np.array([seed & 0xFFFFFFFFFFFFFFFF, 0x9E3779B97F4A7C15], np.uint64)
    expected = np.random.Generator(np.random.Philox(key=key, counter=np.array([0, 0, 0, iteration], np.uint64)))
    assert op.rng_for(iteration).integers(0, 2**62, 8).tolist() == expected.integers(0, 2**62, 8).tolist()


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox, np.random.MT19937, np.random.SFC64])
def test_the_engines_doubles_are_numpys(bit_generator):
    from penstock.operators.random import uniform_doubles
    ours, theirs = np.random.Generator(bit_generator(11)), np.random.Generator(bit_generator(11))
    for count in (0, 1, 7, 256, 1000):
        np.testing.assert_array_equal(uniform_doubles(ours, count), theirs.random(count))
    assert ours.integers(1 << 40) == theirs.integers(1 << 40)  # both generators moved alike
    with pytest.raises(ValueError, match="count"):
        uniform_doubles(ours, -1)


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox, np.random.MT19937, np.random.SFC64])
def test_the_engines_integers_are_numpys(bit_generator):
    from penstock.operators.random import uniform_integers
    ours, theirs = np.random.Generator(bit_generator(12)), np.random.Generator(bit_generator(12))
    # below 2^32 - 1 on 32-bit words (Lemire's rejection), at it one word as is, above on 64-bit words
    for high in (1, 2, 3, 14, 1000, (1 << 31) + 5, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 40) + 3):
        np.testing.assert_array_equal(uniform_integers(ours, 600, high), theirs.integers(0, high, 600))
    assert ours.random() == theirs.random()  # both generators moved alike
    with pytest.raises(ValueError, match="high"):
        uniform_integers(ours, 3, 0)
