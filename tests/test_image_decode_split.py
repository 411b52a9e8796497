"""The host's share of a batch's JPEGs beside the GPU decoder (operators._image_decode_split)."""
import numpy as np

from penstock.operators._image_decode_split import HostShare, host_cost


def _batch(rng, n=256):
    lengths = rng.integers(60_000, 140_000, n).astype(float)
    shapes = np.tile([430, 520, 3], (n, 1))
    h = rng.integers(50, 431, n)
    w = rng.integers(50, 521, n)
    y = rng.integers(0, 431 - h + 1)
    x = rng.integers(0, 521 - w + 1)
    return lengths, np.column_stack([y, x, h, w]), shapes


def test_the_host_cost_follows_the_rows_down_to_the_window_bottom_and_its_width():
    lengths = np.array([1000.0, 1000.0, 1000.0, 1000.0])
    shapes = np.tile([400, 600, 3], (4, 1))
    windows = np.array([[0, 0, 400, 600],     # the whole image: every byte
                        [0, 0, 200, 600],     # the top half
                        [200, 0, 200, 600],   # the bottom half: every row is entropy-decoded
                        [0, 0, 400, 300]])    # the left half: every row, half the transform
    cost = host_cost(lengths, windows, shapes)
    assert cost[0] == 1000.0
    assert cost[1] == 500.0
    assert cost[2] == cost[0]
    assert cost[1] < cost[3] < cost[0]


def test_the_split_makes_both_sides_expected_to_finish_together():
    rng = np.random.default_rng(0)
    lengths, windows, shapes = _batch(rng)
    costs = host_cost(lengths, windows, shapes)
    for host_rate in (100e6, 300e6):
        share = HostShare(host_rate=host_rate, gpu_rate=1800e6)
        mask = share.choose(lengths, costs)
        host_time = costs[mask].sum() / host_rate
        gpu_time = lengths[~mask].sum() / 1800e6
        qualifying = costs <= 0.5 * lengths
        assert mask.any() and not mask[~qualifying].any()
        if host_rate == 100e6:
            # one sample more or less for the host would not bring the two closer than the largest one
            assert abs(host_time - gpu_time) <= max(costs.max() / host_rate, lengths.max() / 1800e6)
        else:  # a faster host runs out of samples it may take, and finishes first
            assert (mask == qualifying).all() and host_time < gpu_time
        # the host gets the samples it is relatively fastest at
        ratio = costs / lengths
        assert ratio[mask].max() <= ratio[~mask].min()
        # and the two sides together beat the GPU alone
        assert max(host_time, gpu_time) < lengths.sum() / 1800e6


def test_what_the_host_decodes_anyway_counts_against_its_share():
    rng = np.random.default_rng(1)
    lengths, windows, shapes = _batch(rng)
    costs = host_cost(lengths, windows, shapes)
    share = HostShare(host_rate=300e6, gpu_rate=1800e6)
    free = share.choose(lengths, costs).sum()
    busy = share.choose(lengths, costs, host_already=0.5 * costs.sum()).sum()
    assert busy < free
    assert not share.choose(lengths, costs, host_already=10 * costs.sum()).any()  # a slow side gets none


def test_measured_rates_steer_the_split_to_the_true_balance():
    rng = np.random.default_rng(2)
    true_host, true_gpu = 200e6, 2400e6
    share = HostShare(host_rate=2000e6, gpu_rate=100e6)  # first guesses far off, the other way round
    for _ in range(40):
        lengths, windows, shapes = _batch(rng)
        costs = host_cost(lengths, windows, shapes)
        mask = share.choose(lengths, costs)
        share.measured("host", costs[mask].sum(), costs[mask].sum() / true_host)
        share.measured("gpu", lengths[~mask].sum(), lengths[~mask].sum() / true_gpu)
    assert abs(share.rates["host"] / true_host - 1) < 0.01
    assert abs(share.rates["gpu"] / true_gpu - 1) < 0.01
    host_time = costs[mask].sum() / true_host
    gpu_time = lengths[~mask].sum() / true_gpu
    assert abs(host_time - gpu_time) <= max(costs.max() / true_host, lengths.max() / true_gpu)


def test_whole_images_and_windows_down_to_the_bottom_stay_on_the_gpu():
    rng = np.random.default_rng(3)
    lengths, windows, shapes = _batch(rng)
    windows[:, 0] = shapes[:, 0] - windows[:, 2]  # every window reaches the bottom row
    windows[: len(windows) // 2, 1] = 0
    windows[: len(windows) // 2, 3] = shapes[: len(windows) // 2, 1]  # and half are full width
    share = HostShare(host_rate=1e12, gpu_rate=1.0)  # however fast the host seems
    costs = host_cost(lengths, windows, shapes)
    mask = share.choose(lengths, costs)
    assert not mask[: len(windows) // 2].any()
    assert (costs[mask] <= 0.5 * lengths[mask]).all()


def test_empty_batches_and_empty_measurements_change_nothing():
    share = HostShare(host_rate=1.0, gpu_rate=2.0)
    assert share.choose(np.zeros(0), np.zeros(0)).shape == (0,)
    share.measured("host", 0.0, 1.0)
    share.measured("gpu", 5.0, 0.0)
    assert share.rates == {"host": 1.0, "gpu": 2.0}


def _choose_reference(gpu_bytes, host_costs, host_already, host_rate, gpu_rate, max_ratio=0.5):
    """The split written out with numpy."""
    mask = np.zeros(len(gpu_bytes), bool)
    ratio = host_costs / np.maximum(gpu_bytes, 1)
    order = np.argsort(ratio, kind="stable")
    order = order[:int(np.count_nonzero(ratio <= max_ratio))]
    host_time = (host_already + np.concatenate([[0.0], np.cumsum(host_costs[order])])) / host_rate
    gpu_left = float(gpu_bytes.sum()) - np.concatenate([[0.0], np.cumsum(gpu_bytes[order])])
    k = int(np.argmin(np.maximum(host_time, np.maximum(gpu_left, 0.0) / gpu_rate)))
    mask[order[:k]] = True
    return mask


def test_the_engines_split_is_the_algorithm_written_out():
    rng = np.random.default_rng(5)
    for trial in range(60):
        lengths, windows, shapes = _batch(rng)
        costs = host_cost(lengths, windows, shapes)
        host_rate, gpu_rate = rng.uniform(50e6, 3000e6), rng.uniform(500e6, 3000e6)
        already = float(costs.sum()) * rng.choice([0.0, 0.1, 0.5])
        share = HostShare(host_rate, gpu_rate)
        np.testing.assert_array_equal(share.choose(lengths, costs, already),
                                      _choose_reference(lengths.astype(float), costs, already, host_rate, gpu_rate))
    assert HostShare(1e6, 1e6).choose(np.zeros(0), np.zeros(0)).shape == (0,)


def test_a_sides_rate_is_its_work_over_its_time_not_its_quick_batches():
    """Beside a training model the GPU side's batches take uneven times; the rate that balances the
    sides is the work over the time (20 units a second here), where a smoothed per-batch ratio would
    say ~55. The first batch (the side's set-up, 5 s here) does not count."""
    share = HostShare(host_rate=1.0, gpu_rate=1.0)
    share.measured("gpu", 1.0, 5.0)
    assert share.rates["gpu"] == 1.0  # the guess stands until a batch past the set-up
    for k in range(40):
        share.measured("gpu", 1.0, 0.01 if k % 2 else 0.09)
    assert 14 < share.rates["gpu"] < 28
    assert share.rates["host"] == 1.0
