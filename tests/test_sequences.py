"""element_extract, per_frame, batch_permutation and permute_batch."""
import numpy as np
import pytest

from penstock import fn

from _util import run_es, samples


def test_element_extract_gives_frames_without_f():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 255, (f, 4, 3, 2), dtype=np.uint8) for f in (3, 5)]

    def g(x):
        return tuple(fn.element_extract(x, element_map=[0, 2]))

    a, b = run_es(g, seqs, layouts=["FHWC"])
    assert a.layout() == "HWC"
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(a.at(i), s[0])
        np.testing.assert_array_equal(b.at(i), s[2])
    with pytest.raises(RuntimeError, match="out of bounds for sample with sequence length equal `3`"):
        run_es(lambda x: fn.element_extract(x, element_map=[4]), seqs, layouts=["FHWC"])


def test_per_frame_sets_the_layout():
    x = [np.arange(6, dtype=np.float32).reshape(3, 2)]
    out, = run_es(lambda d: fn.per_frame(d), x)
    assert out.layout() == "F*"
    np.testing.assert_array_equal(out.at(0), x[0])
    out, = run_es(lambda d: fn.per_frame(d, replace=True), x, layouts=["HW"])
    assert out.layout() == "FW"
    with pytest.raises(RuntimeError, match="does not start with 'F'"):
        run_es(lambda d: fn.per_frame(d), x, layouts=["HW"])


@pytest.mark.parametrize("kw", [{}, {"no_fixed_points": True}, {"allow_repetitions": True},
                                {"allow_repetitions": True, "no_fixed_points": True}])
def test_batch_permutation_properties(kw):
    data = [np.array([i], np.int32) for i in range(9)]

    def g(x):
        p = fn.batch_permutation(seed=5, **kw)
        return p, fn.permute_batch(x, indices=p)

    perm, moved = run_es(g, data)
    idx = np.array([int(perm.at(i)) for i in range(9)])
    assert perm.at(0).shape == () and perm.at(0).dtype == np.int32
    assert ((idx >= 0) & (idx < 9)).all()
    if not kw.get("allow_repetitions"):
        assert sorted(idx.tolist()) == list(range(9))
    if kw.get("no_fixed_points"):
        assert (idx != np.arange(9)).all()
    assert [int(moved.at(i)[0]) for i in range(9)] == idx.tolist()


def test_sequence_rearrange_reorders_repeats_and_drops_frames():
    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, 255, (f, 4, 3, 2), dtype=np.uint8) for f in (3, 5)]
    out, = run_es(lambda x: fn.sequence_rearrange(x, new_order=[2, 0, 0, 1]), seqs, layouts=["FHWC"])
    assert out.layout() == "FHWC"
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(out.at(i), s[[2, 0, 0, 1]])
    orders = [np.array([1], np.int32), np.array([4, 3, 2, 1, 0, 0], np.int32)]
    out, = run_es(lambda x, o: fn.sequence_rearrange(x, new_order=o), seqs, orders, layouts=["FHWC", None])
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(out.at(i), s[orders[i]])


def test_sequence_rearrange_errors():
    seqs = [np.zeros((3, 2), np.float32)] * 2
    with pytest.raises(RuntimeError, match="between 0 and input_sequence_length = 3 for sample 0, but it is: 3"):
        run_es(lambda x: fn.sequence_rearrange(x, new_order=[0, 3]), seqs)
    with pytest.raises(RuntimeError, match='got data with layout = "HW"'):
        run_es(lambda x: fn.sequence_rearrange(x, new_order=[0]), seqs, layouts=["HW"])
    orders = [np.array([], np.int32), np.array([0], np.int32)]
    with pytest.raises(RuntimeError, match="Empty `new_order` for sample 0"):
        run_es(lambda x, o: fn.sequence_rearrange(x, new_order=o), seqs, orders)
