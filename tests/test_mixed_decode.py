"""The mixed decoders' split of a batch between decoder processes (operators._mixed_decode); the
decoding itself is tested on the GPU (tests/test_gpu_operators.py, mixed decoders)."""
import numpy as np

from penstock.operators._mixed_decode import _split_by_bytes


def test_a_batch_splits_into_consecutive_runs_of_about_equal_bytes():
    rng = np.random.default_rng(3)
    lengths = rng.integers(50_000, 160_000, 256)
    for parts in (1, 2, 3):
        runs = _split_by_bytes(lengths, parts)
        assert len(runs) == parts
        np.testing.assert_array_equal(np.concatenate(runs), np.arange(256))
        shares = np.array([lengths[r].sum() for r in runs])
        assert shares.max() - shares.min() <= 2 * lengths.max()


def test_fewer_samples_than_parts_give_no_empty_runs():
    assert [r.tolist() for r in _split_by_bytes(np.array([7]), 2)] == [[0]]
    assert _split_by_bytes(np.zeros(0, np.int64), 2) == []
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 1, 1]), 2)] == [[0, 1], [2, 3]]
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 100]), 2)] == [[0, 1], [2]]
