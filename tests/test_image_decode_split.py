"""The host's share of a batch's JPEGs beside the GPU decoder (operators._image_decode_split)."""
import collections

import numpy as np
import pytest

from penstock import _engine

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
        share = HostShare(host_rate=host_rate, gpu_rate=1800e6, probe=8)
        mask, _ = share.choose(lengths, costs)
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
    share = HostShare(host_rate=300e6, gpu_rate=1800e6, probe=8)
    free = share.choose(lengths, costs)[0].sum()
    busy = share.choose(lengths, costs, host_already=0.5 * costs.sum())[0].sum()
    assert busy < free
    assert not share.choose(lengths, costs, host_already=10 * costs.sum())[0].any()  # a slow side gets none


def test_measured_rates_steer_the_split_to_the_true_balance():
    rng = np.random.default_rng(2)
    true_host, true_gpu = 200e6, 2400e6
    share = HostShare(host_rate=2000e6, gpu_rate=100e6, probe=8)  # first guesses far off, the other way round
    for _ in range(40):
        lengths, windows, shapes = _batch(rng)
        costs = host_cost(lengths, windows, shapes)
        mask, _ = share.choose(lengths, costs)
        share.measured("host", costs[mask].sum(), costs[mask].sum() / true_host)
        share.measured("gpu", lengths[~mask].sum(), lengths[~mask].sum() / true_gpu)
    assert abs(share.rates["host"] / true_host - 1) < 0.01
    assert abs(share.rates["gpu"] / true_gpu - 1) < 0.01
    host_time = costs[mask].sum() / true_host
    gpu_time = lengths[~mask].sum() / true_gpu
    assert abs(host_time - gpu_time) <= max(costs.max() / true_host, lengths.max() / true_gpu)


def _whole_images(rng, n=256):
    lengths, windows, shapes = _batch(rng, n)
    windows[:] = np.column_stack([np.zeros((n, 2), np.int64), shapes[:, :2]])
    return lengths, windows, shapes


def _host_rate_for_gain(gain: float, gpu_rate: float) -> float:
    """The host rate at which giving the host its balanced share of whole images would finish a
    batch ``gain`` of the GPU's time alone sooner (the host's share of the bytes is then ``gain``)."""
    return gpu_rate * gain / (1 - gain)


def test_while_the_gpu_decoder_keeps_up_only_windows_that_spare_the_host_qualify():
    """The pipeline alone on an H200: the GPU decoder at ~2 GB/s, 8 host threads at their first guess
    (30 MB/s each). Whole images and windows down to the bottom row stay on the GPU, whatever the
    balance would give the host."""
    rng = np.random.default_rng(3)
    lengths, windows, shapes = _batch(rng)
    windows[:, 0] = shapes[:, 0] - windows[:, 2]  # every window reaches the bottom row
    windows[: len(windows) // 2, 1] = 0
    windows[: len(windows) // 2, 3] = shapes[: len(windows) // 2, 1]  # and half are full width
    share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=8)
    costs = host_cost(lengths, windows, shapes)
    mask, _ = share.choose(lengths, costs)
    assert not mask[: len(windows) // 2].any()
    assert (costs[mask] <= 0.5 * lengths[mask]).all()
    assert not share.cap_lifted
    whole = _whole_images(rng)
    assert not share.choose(whole[0], host_cost(*whole))[0].any()


def test_a_gpu_decoder_slowed_down_gives_the_host_whole_images_to_balance_once_the_cap_is_lifted():
    """Beside a training model the GPU side fell to 350 MB/s: with the cap lifted (the way measured
    quicker) the host takes whole images up to the balance, which finishes far sooner than the GPU
    alone; under the cap (the way at first) it takes none."""
    rng = np.random.default_rng(4)
    lengths, windows, shapes = _whole_images(rng)
    costs = host_cost(lengths, windows, shapes)
    host_rate, gpu_rate = 260e6, 350e6
    share = HostShare(host_rate, gpu_rate, probe=8)
    _measure_host(share, host_rate)
    mask, lifting = share.choose(lengths, costs)
    assert not lifting and not share.cap_lifted and not mask.any()
    share.lifting = True
    mask, lifting = share.choose(lengths, costs)
    assert lifting and share.cap_lifted
    host_time, gpu_time = costs[mask].sum() / host_rate, lengths[~mask].sum() / gpu_rate
    assert abs(host_time - gpu_time) <= max(costs.max() / host_rate, lengths.max() / gpu_rate)
    assert max(host_time, gpu_time) < 0.6 * lengths.sum() / gpu_rate


@pytest.mark.parametrize("gain,lifting,lifted", [
    (0.3, False, False),  # under the cap whatever the gain
    (0.3, True, True),    # past it when lifting ...
    (0.04, True, False),  # ... unless it is expected to save less than _LEAST_GAIN
])
def test_a_split_goes_past_the_cap_when_lifting_and_expected_to_save_enough(gain, lifting, lifted):
    from penstock.operators import _image_decode_split as split
    assert split._LEAST_GAIN > 0.04
    rng = np.random.default_rng(6)
    lengths, windows, shapes = _whole_images(rng)
    costs = host_cost(lengths, windows, shapes)
    share = HostShare(_host_rate_for_gain(gain, 1e9), 1e9, probe=8)
    _measure_host(share, share.rates["host"])
    share.lifting = lifting
    mask, asked = share.choose(lengths, costs)
    assert asked == lifting and share.cap_lifted == lifted
    assert mask.any() == lifted  # no whole image qualifies under the cap
    if lifted:
        assert abs(lengths[mask].sum() / lengths.sum() - gain) < 0.01


def _decode(share, batches, rng, gpu_rate, host_rate, slowing, noise=0.05, in_flight=2, seconds=None,
            stalls=0.0, stall_seconds=0.0):
    """Splits ``batches`` batches of whole images and times them as a GPU side of ``gpu_rate``
    (bytes/s) and a host of ``host_rate`` (cost/s) would, the host's share of the bytes slowing the
    GPU side down by ``slowing`` times that share (what the rates leave out), each time off by
    ``noise`` (log-normal), and some of the GPU side's calls held ``stall_seconds`` longer, whatever
    their part: a share ``stalls`` of them at a whole batch on the GPU, less as the host takes more; a
    batch's times come back ``in_flight`` batches later, as two batches decode at once. Returns, per
    batch, whether its split went past the cap; ``seconds`` gets, per batch, its time and the GPU
    side's time for all of it."""
    flying = collections.deque()
    lifted = []
    for _ in range(batches):
        lengths, windows, shapes = _whole_images(rng)
        costs = host_cost(lengths, windows, shapes)
        mask, lifting = share.choose(lengths, costs)
        lifted.append(share.cap_lifted)
        host_share = lengths[mask].sum() / lengths.sum()
        host_seconds = costs[mask].sum() / host_rate * rng.lognormal(0, noise)
        gpu_seconds = lengths[~mask].sum() / gpu_rate * (1 + slowing * host_share) * rng.lognormal(0, noise)
        gpu_seconds += stall_seconds * (rng.random() < stalls * (1 - host_share))
        if seconds is not None:
            seconds.append((max(host_seconds, gpu_seconds), lengths.sum() / gpu_rate))
        flying.append((lifting, mask, lengths, costs, host_seconds, gpu_seconds))
        if len(flying) > in_flight:
            lifting, mask, lengths, costs, host_seconds, gpu_seconds = flying.popleft()
            share.measured("host", costs[mask].sum(), host_seconds)
            share.measured("gpu", lengths[~mask].sum(), gpu_seconds)
            share.finished(lifting, lengths.sum(), max(host_seconds, gpu_seconds))
    return np.array(lifted)


# The two cases of the H100 runs the rates could not tell apart: the pipeline alone, where the
# host's share slows the GPU decoder down more than it spares it (whole images at 300 MB/s beside
# the GPU side's 1.75 GB/s), and a training model beside it, the GPU side at 820 MB/s
ALONE = dict(gpu_rate=1.75e9, host_rate=300e6, slowing=2.0)
BESIDE_A_MODEL = dict(gpu_rate=820e6, host_rate=280e6, slowing=0.3)


def test_the_cap_stays_down_while_lifting_it_is_measured_slower_and_tries_it_ever_less_often():
    """The rates predict a gain of about a seventh (past _LEAST_GAIN) from whole images on the
    host; measured, the batches take longer. The cap stays down, but for the trials, and those
    back off to one every _LAST_TRIAL_EVERY batches."""
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=8)
    lifted = _decode(share, 1000, np.random.default_rng(10), **ALONE)
    assert not share.lifting
    assert share._trial_every == split._LAST_TRIAL_EVERY
    assert lifted[:split._FIRST_TRIAL].sum() == 0  # the first batches are capped
    assert 0 < lifted[500:].mean() < 0.06  # the trials: a few batches in every few hundred


def test_trials_of_whole_high_res_photographs_on_the_host_cost_little():
    """High-res photographs, the pipeline alone on an H100: the batches split past the cap took 4-6
    times the capped ones' time. Under the cap the host decodes none of the whole images, so its
    rate is a guess at a trial: it gets a probe of them, then what its measured rate is expected to
    save. Over 300 batches the trials cost at most 2% of the capped way's time, and it stays in
    force (with every trial's batches split by the guess, 10%)."""
    rng = np.random.default_rng(13)
    share = HostShare(host_rate=12 * 30e6, gpu_rate=2e9, probe=12)
    seconds = []
    _decode(share, 300, rng, gpu_rate=1.75e9, host_rate=60e6, slowing=6.0, seconds=seconds)
    took, capped = np.array(seconds).sum(axis=0)
    assert not share.lifting
    assert took < 1.02 * capped, took / capped


def _measure_host(share, rate):
    """The host's rate measured at ``rate`` (its first batch is the set-up's and does not count)."""
    for _ in range(2):
        share.measured("host", rate, 1.0)
    assert share.rates["host"] == rate


def test_a_host_of_unmeasured_rate_gets_a_probe_of_whole_images():
    """Past the cap, a host whose rate is still the first guess takes at most ``probe`` samples,
    the cheapest it was given; measured, its balanced share. Under the cap no probe: its windows
    spare it most of their images' work."""
    from penstock.operators import _image_decode_split as split
    rng = np.random.default_rng(5)
    lengths, windows, shapes = _whole_images(rng)
    costs = host_cost(lengths, windows, shapes)
    share = HostShare(host_rate=_host_rate_for_gain(0.3, 1e9), gpu_rate=1e9, probe=12)
    share.lifting = True
    balanced = split._engine.host_share_choose(lengths, costs, 0.0, share.rates["host"], 1e9, split._MAX_HOST_RATIO,
                                               split._LEAST_GAIN)[0]
    mask, lifting = share.choose(lengths, costs)
    assert lifting and share.cap_lifted and np.count_nonzero(mask) == 12 < np.count_nonzero(balanced)
    assert np.array_equal(np.sort(costs[mask]), np.sort(costs[balanced])[:12])
    _measure_host(share, share.rates["host"])
    assert np.array_equal(share.choose(lengths, costs)[0], balanced)
    lengths, windows, shapes = _batch(rng)
    share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=12)
    mask, lifting = share.choose(lengths, host_cost(lengths, windows, shapes))
    assert not lifting and np.count_nonzero(mask) > 12


def test_a_trials_batches_split_by_a_probe_are_not_counted():
    """A probe's batch times the host on a few images, not the way on trial: those of a trial's
    first batches that were probes are left out of its comparison, as its first batch is."""
    from penstock.operators import _image_decode_split as split
    rng = np.random.default_rng(8)
    lengths, windows, shapes = _whole_images(rng)
    costs = host_cost(lengths, windows, shapes)
    share = HostShare(host_rate=_host_rate_for_gain(0.3, 1e9), gpu_rate=1e9, probe=12)
    _past_the_first_trial_start(share, lengths, 1.0)
    for _ in range(2):  # two batches in flight, both split before the host's rate is measured
        mask, lifting = share.choose(lengths, costs)
        assert lifting and np.count_nonzero(mask) == 12
    for _ in range(2):
        share.finished(True, 100.0, 0.5)  # quicker, but probes: not counted
    _measure_host(share, share.rates["host"])
    for _ in range(split._TRIAL_BATCHES - 2):
        assert share.choose(lengths, costs)[1]
        share.finished(True, 100.0, 0.99)  # no quicker by the margin
    assert share._trying and share.choose(lengths, costs)[1]
    share.finished(True, 100.0, 0.99)
    assert not share._trying and not share.lifting


def test_the_cap_lifts_when_lifting_it_is_measured_quicker():
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=8)
    lifted = _decode(share, 1000, np.random.default_rng(11), **BESIDE_A_MODEL)
    assert share.lifting
    assert share._trial_every == split._LAST_TRIAL_EVERY  # the capped way, tried now and then, loses
    assert lifted[:split._FIRST_TRIAL].sum() == 0
    assert lifted[:split._FIRST_TRIAL + 3 * split._TRIAL_BATCHES].any()  # after the first trial
    assert lifted[500:].mean() > 0.94


def test_calls_held_for_a_training_step_do_not_keep_the_cap_down():
    """Beside a training ResNet-50 on an H100 (2026-12-06) the GPU side's calls took 10-15 ms for ~100
    JPEGs, or a whole step of the model (65-75 ms, at times 150-190) whatever their part, 16 JPEGs
    or 220: most calls under the cap (the GPU side ~210 JPEGs), a few past it. One held call among a
    trial's first batches ended it (twice the way in force's time after one batch) and kept the cap
    down for 64 batches more, as if far behind; in one process the cap stayed down in 98% of the
    batches and the model trained at 0.944 of its speed alone, in the next it lifted (98%) at 0.974.
    A trial now ends early only after three of its batches, and the way in force's pace is the mean
    of its latest batches, as the trial's is: a held call is part of a way's cost, a rarer one in
    the way that spares the GPU side. Over 16 runs of 1,000 batches the cap lifts in each (the
    earlier rules kept it down in one: 8% of the batches lifted)."""
    shares = []
    for seed in range(16):
        share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=8)
        lifted = _decode(share, 1000, np.random.default_rng(seed), gpu_rate=1.2e9, host_rate=400e6, slowing=1.0,
                         noise=0.1, stalls=0.5, stall_seconds=0.065)
        shares.append(lifted[300:].mean())
    assert min(shares) > 0.8, shares


def test_a_later_trial_finds_the_way_that_turned_quicker():
    """The pipeline alone for 300 batches, then a model training beside it (its first steps): within
    one interval of the trials (and a trial: one under way when the model came, measured against the
    pace alone, is far behind), the cap lifts."""
    from penstock.operators import _image_decode_split as split
    rng = np.random.default_rng(12)
    share = HostShare(host_rate=8 * 30e6, gpu_rate=2e9, probe=8)
    _decode(share, 300, rng, **ALONE)
    assert not share.lifting
    lifted = _decode(share, 600, rng, **BESIDE_A_MODEL)
    assert share.lifting
    # where the way changed: the first run of lifted batches longer than a trial and those in flight
    edges = np.flatnonzero(np.diff(np.concatenate([[0], lifted.astype(int), [0]])))
    starts, ends = edges[::2], edges[1::2]
    first = int(starts[np.argmax(ends - starts > split._TRIAL_BATCHES + 2)])
    assert first <= split._LAST_TRIAL_EVERY + 2 * split._TRIAL_BATCHES
    assert lifted[first:].mean() > 0.8  # the capped way's trials, often at first after the change


def test_a_trial_is_compared_on_its_own_batches_only():
    """Batches of the way in force that finish during a trial (split before it) count for neither;
    the trial's first batch (it overlaps the way before) does not count either."""
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    for _ in range(split._FIRST_TRIAL - 1):
        assert not share.choose(lengths, lengths)[1]
        share.finished(False, 100.0, 1.0 if share._paced else 9.0)
    assert share.pace() == 0.01  # the first batch (the set-up, 9 s) left out
    assert not share.choose(lengths, lengths)[1]  # the last of the way in force before the trial
    assert share.choose(lengths, lengths)[1]  # the trial's way
    share.finished(False, 100.0, 50.0)  # in force, finishing during the trial: left out
    share.finished(True, 100.0, 0.01)  # the trial's first: left out
    for _ in range(split._TRIAL_BATCHES - 1):
        assert not share.lifting
        share.finished(True, 100.0, 0.9)  # 10% quicker than the way in force
    assert share.lifting and share.pace() == pytest.approx(0.009)  # the trial's batches together
    assert not share._trying and share._until_trial == split._FIRST_TRIAL_AFTER


def test_the_pace_is_the_way_in_forces_latest_batches_not_its_first_slow_ones():
    """The first batches of a process are slow (the decoders' buffers growing, a first epoch's
    check): a trial quicker than those but slower than the way in force runs now changes nothing,
    and ends once its batches are behind by more than 1/k (here after 4)."""
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    times = iter([9.0, 4.0, 3.0, 3.0, 2.0] + [1.0] * (split._FIRST_TRIAL - 5))  # the set-up's, four slow, steady
    for _ in range(split._FIRST_TRIAL):
        assert not share.choose(lengths, lengths)[1]
        share.finished(False, 100.0, next(times))
    assert share.pace() == 0.01
    tried = 0
    while share.choose(lengths, lengths)[1]:
        share.finished(True, 100.0, 1.3)  # quicker than the first batches, slower than the steady ones
        tried += 1
    assert not share.lifting and tried == 1 + 4


def _past_the_first_trial_start(share, lengths, seconds):
    from penstock.operators import _image_decode_split as split
    for _ in range(split._FIRST_TRIAL):
        assert not share.choose(lengths, lengths)[1]
        share.finished(False, 100.0, seconds)


def test_a_trial_no_quicker_by_the_margin_changes_nothing_and_one_that_never_finishes_ends():
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    _past_the_first_trial_start(share, lengths, 1.0)
    for _ in range(split._TRIAL_BATCHES):
        assert share.choose(lengths, lengths)[1]
        share.finished(True, 100.0, 0.97)  # quicker, but by less than _CHANGE_MARGIN
    assert not share.lifting and not share._trying
    assert share._until_trial == 2 * split._FIRST_TRIAL_AFTER
    for _ in range(2 * split._FIRST_TRIAL_AFTER):
        assert not share.choose(lengths, lengths)[1]
    # a trial whose batches fail (finished never called) ends after a few times its length
    asked = [share.choose(lengths, lengths)[1] for _ in range(6 * split._TRIAL_BATCHES)]
    assert asked[:4 * split._TRIAL_BATCHES] == [True] * (4 * split._TRIAL_BATCHES)
    assert not any(asked[4 * split._TRIAL_BATCHES + 1:]) and not share.lifting


@pytest.mark.parametrize("slower, counted, backoff", [(3.5, 3, 8), (2.0, 3, 8), (1.7, 3, 2), (1.3, 4, 2),
                                                     (1.1, 7, 2)])
def test_a_trial_far_behind_ends_early(slower, counted, backoff):
    """A trial whose counted batches took longer for their bytes than the way in force by more than
    1/k after k of them (three at least) ends there, the way in force kept and tried again after
    twice the interval, or eight times it if the trial took twice the time or more (high-res
    photographs whole on the host: 3.5 times as long a batch, ended after three)."""
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    _past_the_first_trial_start(share, lengths, 1.0)
    tried = 0
    while share.choose(lengths, lengths)[1]:
        share.finished(True, 100.0, slower)
        tried += 1
    assert tried == 1 + counted  # the first batch is not counted
    assert not share.lifting and share._until_trial == backoff * split._FIRST_TRIAL_AFTER - 1


def test_one_slow_batch_does_not_end_a_trial_that_wins():
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    _past_the_first_trial_start(share, lengths, 1.0)
    times = iter([5.0, 1.9] + [0.5] * split._TRIAL_BATCHES)  # the uncounted first, one slow, then quicker
    for _ in range(split._TRIAL_BATCHES):
        assert share.choose(lengths, lengths)[1]
        share.finished(True, 100.0, next(times))
    assert share.lifting and not share._trying


def test_empty_batches_and_empty_measurements_change_nothing():
    share = HostShare(host_rate=1.0, gpu_rate=2.0, probe=8)
    assert share.choose(np.zeros(0), np.zeros(0))[0].shape == (0,)
    share.measured("host", 0.0, 1.0)
    share.measured("gpu", 5.0, 0.0)
    assert share.rates == {"host": 1.0, "gpu": 2.0}


def _choose_reference(gpu_bytes, host_costs, host_already, host_rate, gpu_rate, open_gain, max_ratio=0.5):
    """The split written out with numpy: the mask, and whether the cap was lifted."""
    ratio = host_costs / np.maximum(gpu_bytes, 1)
    order = np.argsort(ratio, kind="stable")
    host_time = (host_already + np.concatenate([[0.0], np.cumsum(host_costs[order])])) / host_rate
    gpu_left = float(gpu_bytes.sum()) - np.concatenate([[0.0], np.cumsum(gpu_bytes[order])])
    finish = np.maximum(host_time, np.maximum(gpu_left, 0.0) / gpu_rate)
    capped = int(np.argmin(finish[:int(np.count_nonzero(ratio <= max_ratio)) + 1]))
    best = int(np.argmin(finish))
    lifted = best > capped and finish[best] <= (1 - open_gain) * finish[capped]
    mask = np.zeros(len(gpu_bytes), bool)
    mask[order[:best if lifted else capped]] = True
    return mask, lifted


def test_the_engines_split_is_the_algorithm_written_out():
    rng = np.random.default_rng(5)
    lifted = 0
    for trial in range(120):
        lengths, windows, shapes = _batch(rng)
        costs = host_cost(lengths, windows, shapes)
        host_rate, gpu_rate = rng.uniform(50e6, 3000e6), rng.uniform(200e6, 3000e6)
        already = float(costs.sum()) * rng.choice([0.0, 0.1, 0.5])
        gain = rng.choice([0.0, 0.1, 0.2, 1.0])
        mask, was_lifted = _engine.host_share_choose(lengths, costs, already, host_rate, gpu_rate, 0.5, gain)
        want_mask, want_lifted = _choose_reference(lengths.astype(float), costs, already, host_rate, gpu_rate, gain)
        np.testing.assert_array_equal(mask, want_mask)
        assert was_lifted == want_lifted
        lifted += was_lifted
    assert 10 < lifted < 110  # both ways, often
    share = HostShare(1e6, 1e6, probe=8)
    assert share.choose(np.zeros(0), np.zeros(0))[0].shape == (0,) and not share.cap_lifted


def test_a_sides_rate_is_its_work_over_its_time_not_its_quick_batches():
    """Beside a training model the GPU side's batches take uneven times; the rate that balances the
    sides is the work over the time (20 units a second here), where a smoothed per-batch ratio would
    say ~55. The first batch (the side's set-up, 5 s here) does not count."""
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    share.measured("gpu", 1.0, 5.0)
    assert share.rates["gpu"] == 1.0  # the guess stands until a batch past the set-up
    for k in range(40):
        share.measured("gpu", 1.0, 0.01 if k % 2 else 0.09)
    assert 14 < share.rates["gpu"] < 28
    assert share.rates["host"] == 1.0


def test_a_side_left_without_work_is_measured_again():
    """A side given none of a batch is not measured: after a slow batch of the GPU side (a model's
    warm-up beside it) the split would keep every JPEG on the host for good. After _FORGET_AFTER
    batches in a row without work, the side's rate is the first guess again, and the next split
    gives it work; measured fast again, it keeps most of the batch."""
    from penstock.operators import _image_decode_split as split
    rng = np.random.default_rng(8)
    lengths, windows, shapes = _batch(rng)
    windows[:, :2] = 0
    windows[:, 2:] = shapes[:, :2] // 2  # top-left quarters: all qualify, the cap plays no part
    costs = host_cost(lengths, windows, shapes)
    share = HostShare(host_rate=150e6, gpu_rate=2e9, probe=8)
    share.measured("gpu", 1.0, 1.0)  # the set-up
    share.measured("gpu", float(lengths.sum()), 100.0)  # one batch the GPU side took ages over
    for _ in range(split._FORGET_AFTER):
        assert share.choose(lengths, costs)[0].all()  # the host takes everything, the GPU is not measured
    assert share.rates["gpu"] == 2e9  # forgotten: the guess again
    mask, _ = share.choose(lengths, costs)
    assert mask.mean() < 0.25  # the GPU side takes most of the batch and is measured
    share.measured("gpu", float(lengths[~mask].sum()), float(lengths[~mask].sum()) / 1.5e9)
    assert share.rates["gpu"] == pytest.approx(1.5e9)  # afresh, not smoothed with the slow batch
    assert share.choose(lengths, costs)[0].mean() < 0.25
    # the host side likewise: measured very slow, it is left without work, then its guess comes back
    share.measured("host", 1.0, 1.0)
    share.measured("host", 1.0, 1.0)
    assert share.rates["host"] == 1.0
    for _ in range(split._FORGET_AFTER):
        assert not share.choose(lengths, costs)[0].any()
    assert share.rates["host"] == 150e6


def test_a_side_given_work_now_and_then_keeps_its_measurement():
    from penstock.operators import _image_decode_split as split
    share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    lengths = np.array([100.0, 100.0])
    for k in range(3 * split._FORGET_AFTER):
        # measured so slow that the host takes everything, but for one batch in ten
        share.rates["gpu"] = 1e-9 if k % 10 else 1e9
        measured = share.rates["gpu"]
        share.choose(lengths, lengths)
        assert share.rates["gpu"] == measured  # never idle long enough to be forgotten
