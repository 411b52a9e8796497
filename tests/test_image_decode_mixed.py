"""The mixed decoders' split of a batch between GPU decoders, and their failures sent to the host
(operators._image_decode_mixed, with stand-in decoders); the decoding itself is tested on the GPU
(tests/test_gpu_operators.py, mixed decoders)."""
import time
import types

import numpy as np
import pytest

from penstock._cuda._nvimgcodec import IdleClock
from penstock.operators._image_decode_mixed import _split_by_bytes


def test_a_batch_splits_into_consecutive_runs_of_about_equal_bytes():
    rng = np.random.default_rng(3)
    lengths = rng.integers(50_000, 160_000, 256)
    for parts in (1, 2, 3):
        runs = _split_by_bytes(lengths, parts)
        assert len(runs) == parts
        np.testing.assert_array_equal(np.concatenate(runs), np.arange(256))
        shares = np.array([lengths[r].sum() for r in runs])
        assert shares.max() - shares.min() <= 2 * lengths.max()


def test_fewer_samples_than_parts_leave_runs_empty_but_aligned_with_the_parts():
    assert [r.tolist() for r in _split_by_bytes(np.array([7]), 2)] == [[0], []]
    assert _split_by_bytes(np.zeros(0, np.int64), 2) == []
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 1, 1]), 2)] == [[0, 1], [2, 3]]
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 100]), 2)] == [[0, 1], [2]]


def test_faster_decoders_get_more_of_the_bytes():
    lengths = np.full(300, 1000)
    runs = _split_by_bytes(lengths, np.array([1.0, 2.0, 1.0]))  # the second decodes twice as fast
    assert [len(r) for r in runs] == [75, 150, 75]
    np.testing.assert_array_equal(np.concatenate(runs), np.arange(300))


class _FakeOperator:
    label = "decoders.image"
    max_pixels = None

    def __init__(self, fancy_upsampling=False):
        self.args = {"cache_size": 0, "adjust_orientation": True, "output_type": 0, "use_fast_idct": False,
                     "jpeg_fancy_upsampling": fancy_upsampling, "accept_corrupt_jpeg": False}


class _FakeDecoder:
    """Stands in for a GPU decoder: keeps each call's bytes and where their windows were to go, and
    reports the local positions listed in ``fails`` as undecodable, having decoded for ``seconds``
    after waiting ``waited`` for its turn."""

    usable = True

    def __init__(self, fails=(), seconds=0.0, waited=0.0):
        self.fails = list(fails)
        self.seconds = seconds
        self.waited = waited
        self.calls = []
        self.closed = False
        self.idle = IdleClock()

    def decode(self, encoded, starts, lengths, shapes, windows, reverse, out, out_offsets, ready, orient):
        self.calls.append({"bytes": [bytes(encoded[s:s + n]) for s, n in zip(starts, lengths)],
                           "out_offsets": out_offsets.tolist(), "ready": ready})
        time.sleep(self.waited + self.seconds)
        self.idle.turn(time.perf_counter(), self.seconds)
        decoded = np.ones(len(starts), bool)
        decoded[self.fails] = False
        return decoded, self.seconds

    def close(self):
        self.closed = True


def _output(n):
    """Where the batch's samples would go: only their offsets matter to the split."""
    return types.SimpleNamespace(_buf=None, _offsets=np.arange(n, dtype=np.int64) * 1000)


def _jpeg_batch(sizes, rng):
    """An encoded batch of random JPEGs of ``sizes`` (h, w): the batch, the images' shapes and
    each one's bytes."""
    import io

    from PIL import Image

    from penstock.tensors import TensorListCPU
    images = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in sizes]
    encoded = []
    for px in images:
        out = io.BytesIO()
        Image.fromarray(px).save(out, "JPEG", quality=95)
        encoded.append(np.frombuffer(out.getvalue(), np.uint8))
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])[:-1]])
    src = TensorListCPU._from_packed(np.concatenate(encoded), np.array([[len(e)] for e in encoded]), offsets,
                                     source_info=[f"img{i}.jpg" for i in range(len(sizes))])
    return src, np.array([px.shape for px in images], np.int64), encoded


@pytest.mark.parametrize("fancy", [False, True])
def test_a_batch_goes_to_every_decoder_and_their_failures_to_the_host(fancy):
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    rng = np.random.default_rng(5)
    src, shapes, encoded = _jpeg_batch([(8 + i, 12) for i in range(7)], rng)
    windows = np.zeros((7, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    op = _FakeOperator(fancy_upsampling=fancy)
    decoder = _mixed_decode.MixedDecoder(op)
    decoders = decoder.decoders = [_FakeDecoder(), _FakeDecoder(fails=[1]), _FakeDecoder()]
    decoder._parts = _mixed_decode.Workers(4, "test-parts")
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0)
    gpu_idx = np.array([0, 1, 3, 4, 5, 6])  # sample 2 is for the host from the start
    out, ready = _output(7), object()
    try:
        failed, host = decoder._decode_sides(ws, src, shapes, None, windows, gpu_idx, np.array([2]), out, ready)
    finally:
        decoder._release()
    assert all(d.closed for d in decoders) and decoder.decoders == []
    assert [len(d.calls) for d in decoders] == [1, 1, 1]
    calls = [call for d in decoders for call in d.calls]
    received = [b for call in calls for b in call["bytes"]]
    assert received == [encoded[i].tobytes() for i in gpu_idx]  # in order, each its own bytes
    # each sample's window goes to its own place in the output, after the output was allocated
    assert [o for call in calls for o in call["out_offsets"]] == out._offsets[gpu_idx].tolist()
    assert all(call["ready"] is ready for call in calls)
    second = len(decoders[0].calls[0]["bytes"]) + 1  # the second decoder's second sample, in gpu_idx
    assert failed.tolist() == [int(gpu_idx[second])]
    # the host's own sample, then (a part of its own) the one the second decoder failed on
    assert [idx.tolist() for idx, _, _, _ in host] == [[2], [int(gpu_idx[second])]]
    for idx, buf, hshapes, hoffsets in host:
        assert hshapes.tolist() == shapes[idx].tolist()
        for k, i in enumerate(idx):
            decoded = buf[hoffsets[k]:hoffsets[k] + shapes[i].prod()].reshape(shapes[i])
            # the host decoded that very image, upsampling its chroma as the operator asks (the
            # GPU decoders do the same)
            alone = [_engine.decode_images(ws.pool, encoded[i], np.array([[len(encoded[i])]]), np.zeros(1, np.int64),
                                           0, True, fancy_upsampling=f)[0].reshape(shapes[i]) for f in (False, True)]
            np.testing.assert_array_equal(decoded, alone[int(fancy)])
            assert (alone[0] != alone[1]).any()


def test_the_host_share_takes_jpegs_off_the_gpu_and_both_sides_time_feeds_its_rates():
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.operators._image_decode_split import HostShare, host_cost
    rng = np.random.default_rng(6)
    src, shapes, _ = _jpeg_batch([(16 + 2 * i, 24) for i in range(12)], rng)
    windows = np.zeros((12, 4), np.int64)
    windows[:, 2:] = shapes[:, :2] // 2  # top-left quarters: the host decodes those cheaply
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    decoder.decoders = [_FakeDecoder(seconds=0.25, waited=0.25)]
    lengths = src._volumes().astype(float)
    # rates that make the host take about a third: it is half as fast as the GPU side
    decoder._share = share = HostShare(host_rate=lengths.sum(), gpu_rate=2 * lengths.sum(), probe=8)
    gpu_ok = np.ones(12, bool)
    gpu_ok[3] = False  # a sample the host decodes anyway
    share.lifting = True  # past the cap if need be (here the host's quarters qualify anyway)
    lifting = decoder._give_host_its_share(src, windows, shapes, gpu_ok)
    assert lifting
    host_idx = np.nonzero(~gpu_ok)[0]
    gpu_idx = np.nonzero(gpu_ok)[0]
    assert 3 in host_idx and 2 <= len(host_idx) < 12
    assert host_cost(lengths, windows, shapes)[host_idx].sum() <= lengths[gpu_idx].sum() / 2 + lengths.max()
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0)
    before = dict(share.rates)
    try:
        batches, after = [], []
        for _ in range(2):
            batches.append(decoder._decode_sides(ws, src, shapes, windows, windows, gpu_idx, host_idx, _output(12),
                                                 object(), lifting=lifting))
            after.append(dict(share.rates))
    finally:
        decoder._release()
    for failed, host in batches:
        assert not len(failed) and len(host) == 1 and host[0][0].tolist() == host_idx.tolist()
        assert host[0][2].tolist() == (shapes[host_idx] // [2, 2, 1]).tolist()  # the windows
    # a side's first batch (its set-up) leaves the guesses; the second measures the GPU side at its
    # bytes over the time it decoded (0.25 s), not counting its wait for the turn (another 0.25 s)
    assert after[0] == before
    assert share.rates["gpu"] == lengths[gpu_idx].sum() / 0.25
    assert share.rates["host"] != before["host"]
    # the slower side's time (the GPU side's 0.25 s over the host's few small JPEGs) to the choice of
    # way, for the batch's bytes; the first batch is the set-up's
    assert share.pace() == 0.25 / lengths.sum()


def _device_that_stages(short=False):
    """The host's stand-in for a DeviceContext, keeping the staging it lent (``made``); with
    ``short``, each one byte shorter than asked, as if the windows said less than the decoder makes."""
    from _cuda_on_host import HostDevice

    class Device(HostDevice):
        def __init__(self):
            super().__init__({})
            self.made = []

        def staging(self, nbytes, block_bytes=0):
            staged = super().staging(nbytes, block_bytes)
            staged.view = staged.view[:nbytes - short]
            self.made.append(staged)
            return staged
    return Device()


@pytest.mark.parametrize("short", [False, True])
def test_the_hosts_pixels_are_decoded_into_pinned_staging_and_uploaded_from_there(short):
    """With an upload (the GPU path), the host's part decodes straight into pinned staging, its samples
    at places sized by their windows, and uploads from there (no copy on the host); were the staging
    too small, the engine decodes elsewhere and the staging goes back unused."""
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    src, shapes, encoded = _jpeg_batch([(24 + 4 * i, 32) for i in range(4)], np.random.default_rng(12))
    windows = np.zeros((4, 4), np.int64)
    windows[:, 2:] = shapes[:, :2] // [2, 1]  # the top halves
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    decoder.decoders = [_FakeDecoder()]
    gpu = _device_that_stages(short)
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0, gpu=gpu)
    host_idx = np.array([1, 3])
    def upload(idx, buf, hshapes, offsets, staged):
        return _mixed_decode.upload_host_part(gpu, buf, hshapes, staged)
    try:
        failed, host = decoder._decode_sides(ws, src, shapes, windows, windows, np.array([0, 2]), host_idx,
                                             _output(4), object(), upload)
    finally:
        decoder._release()
    assert not len(failed) and len(gpu.made) == 1 and gpu.calls["upload"] == 1
    staged = gpu.made[0]
    assert staged.view.nbytes == int((windows[host_idx, 2] * windows[host_idx, 3] * 3).sum()) - short
    (idx, pixels, hshapes, offsets), = host
    assert idx.tolist() == [1, 3]
    assert staged.uploaded != short and staged.given_back == short  # short: decoded elsewhere, then uploaded
    for k, i in enumerate(idx):
        h, w = windows[i, 2:]
        whole = _engine.decode_images(ws.pool, encoded[i], np.array([[len(encoded[i])]]), np.zeros(1, np.int64),
                                      0, True, fancy_upsampling=False)[0].reshape(shapes[i])
        np.testing.assert_array_equal(pixels[offsets[k]:offsets[k] + h * w * 3].reshape(h, w, 3), whole[:h])


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_a_host_part_in_staging_is_copied_into_its_places_in_a_uint8_batch(dtype):
    """A host part decoded into pinned staging goes from there straight into its samples' places in the
    batch, in one call: no device memory beside the batch, no gather. A float batch takes the upload
    and the gather, which converts. A sample decoded to another shape than its place is its error,
    before anything is written, and the staging goes back."""
    from penstock import _engine
    from penstock._operator import SampleError
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.operators._image_decode_staging import HostStaging
    from _cuda_on_host import host_array
    gpu = _device_that_stages()
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    out_shapes = np.array([[2, 3, 3], [4, 2, 3], [1, 5, 3], [3, 3, 3]], np.int64)
    sizes = out_shapes.prod(1)
    out_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = types.SimpleNamespace(_shapes=out_shapes, _offsets=out_offsets,
                                _buf=host_array(np.zeros(int(sizes.sum()), dtype)))
    idx = np.array([3, 1])  # the host's samples, in the order it decoded them
    part_shapes = out_shapes[idx]
    staging = HostStaging(gpu, part_shapes)
    (staged,) = gpu.made
    staged.view[:] = np.arange(staged.view.size) % 251 + 1  # as the host decoded them, back to back
    pixels = staged.view.copy()
    empty = np.zeros(0, np.uint8)  # the pixels are in the staging
    try:
        result = decoder._deliver(gpu, out, None, idx, empty, part_shapes, _engine.packed_offsets(part_shapes),
                                  staging)
    finally:
        decoder._release()
    part_offsets = staging.places[:, 1]
    if dtype == np.uint8:
        assert result is None and staged.uploaded and gpu.calls["upload"] == 1
        for k, i in enumerate(idx):
            np.testing.assert_array_equal(out._buf[out_offsets[i]:out_offsets[i] + sizes[i]],
                                          pixels[part_offsets[k]:part_offsets[k] + sizes[i]])
        assert not out._buf[out_offsets[0]:out_offsets[0] + sizes[0]].any()  # the GPU side's place, untouched
    else:
        np.testing.assert_array_equal(np.asarray(result), pixels)  # packed, as _fill gathers it
        assert staged.uploaded
        assert not out._buf.any()  # for _fill's gather
    wrong = HostStaging(gpu, part_shapes)
    with pytest.raises(SampleError, match="decoded to shape") as raised:
        decoder._deliver(gpu, out, None, idx, empty, part_shapes[::-1], part_offsets, wrong)
    assert raised.value.sample == 3 and gpu.made[-1].given_back and not gpu.made[-1].uploaded


def test_the_host_parts_time_and_rate_count_getting_its_staging_and_its_upload():
    """What the host's share costs a batch beyond its decoding counts as its time and in the host's rate:
    pinned staging that has to grow (hundreds of MB for whole high-resolution images) and an upload
    whose device memory has to grow. Both were left out, and the share's trials of whole images on
    the host looked quicker than the batches they made. With the staging left out of the rate alone
    (tried on an H100, 2026-12-07), high-resolution validation gave the host whole images whose
    staging then grew by 2-3 GB in a few batches, 300 ms of pinning a batch, and ran at 607-1,619
    img/s against 1,880-1,916 with it counted."""
    import time
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.operators._image_decode_split import HostShare, host_cost
    src, shapes, _ = _jpeg_batch([(16, 16)] * 4, np.random.default_rng(14))
    windows = np.zeros((4, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    gpu = _device_that_stages()
    staging = type(gpu).staging

    def slow_staging(nbytes, block_bytes=0):
        time.sleep(0.2)
        return staging(gpu, nbytes, block_bytes)
    gpu.staging = slow_staging

    def slow_upload(idx, buf, hshapes, offsets, staged):
        time.sleep(0.3)
        return _mixed_decode.upload_host_part(gpu, buf, hshapes, staged)
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    decoder.decoders = [_FakeDecoder()]
    decoder._share = share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0, gpu=gpu)
    host_idx = np.array([2, 3])
    before = _mixed_decode.split_counts()
    try:
        for _ in range(2):  # the host's first batch is its set-up's: its rate is measured on the second
            decoder._decode_sides(ws, src, shapes, None, windows, np.array([0, 1]), host_idx, _output(4), object(),
                                  slow_upload)
    finally:
        decoder._release()
    after = _mixed_decode.split_counts()
    assert after["host_samples"] - before["host_samples"] == 4 and gpu.calls["upload"] == 2
    assert after["host_seconds"] - before["host_seconds"] >= 1.0
    cost = float(host_cost(src._volumes()[host_idx], windows[host_idx], shapes[host_idx]).sum())
    assert 0.5 <= cost / share.rates["host"] < 0.65  # the staging, the upload and two 16 x 16 JPEGs' decoding


@pytest.mark.parametrize("skip", [False, True])
def test_a_batch_during_which_the_staging_pool_grew_is_measured_unless_the_split_skips_it(monkeypatch, skip):
    """By default what getting a host part's staging took counts, pinning new memory included. With
    PENSTOCK_SPLIT_SKIP_PINNING=on a batch during which the pinned staging pool grew (its own part's
    staging, or the other batch's in flight, whose pinning holds the driver) feeds neither side's rate
    nor the way's pace: its time is the growth's, not the split's. A batch during which nothing was
    pinned is measured either way."""
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.operators._image_decode_split import HostShare
    monkeypatch.setenv(_mixed_decode.SKIP_PINNING_ENV, "on" if skip else "off")
    src, shapes, _ = _jpeg_batch([(16, 16)] * 4, np.random.default_rng(15))
    windows = np.zeros((4, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    gpu = _device_that_stages()
    pins = []  # per batch, the blocks the pool pins while its GPU part decodes (another batch's staging)

    class Pinning(_FakeDecoder):
        def decode(self, *args):
            gpu.calls["pinned"] += pins.pop(0)
            return super().decode(*args)
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    decoder.decoders = [Pinning()]
    decoder._share = share = HostShare(host_rate=1.0, gpu_rate=1.0, probe=8)
    measured, finished = [], []
    monkeypatch.setattr(share, "measured", lambda side, cost, seconds: measured.append(side))
    monkeypatch.setattr(share, "finished", lambda lifting, nbytes, seconds: finished.append(lifting))
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0, gpu=gpu)
    try:
        for pinned in (2, 0):
            pins.append(pinned)
            decoder._decode_sides(ws, src, shapes, None, windows, np.array([0, 1]), np.array([2, 3]), _output(4),
                                  object(), lambda idx, buf, hshapes, offsets, staged:
                                  _mixed_decode.upload_host_part(gpu, buf, hshapes, staged), lifting=True)
    finally:
        decoder._release()
    first_batch = [] if skip else ["gpu", "host"]
    assert measured == first_batch + ["gpu", "host"]
    assert finished == [True] * (1 if skip else 2)


def test_host_parts_of_any_size_stop_pinning_staging_once_the_most_blocks_in_flight_are_pinned():
    """A host part holds from one whole high-resolution image to a few dozen, or dozens of random
    crops of varying size. Its staging comes in blocks of one size (a part smaller than a block: one
    block of the next power of two), so a block a part gave back serves the next of its size, and
    pinning (0.4-1.2 ms a MB on an H100, slowing both sides of the decoder) stops once the most
    blocks two parts in flight held are pinned; a part that grows pins only the blocks it adds. With
    a block as large as the largest part so far, each larger part pinned a block for each part in
    flight, and the smaller blocks went unused."""
    from penstock._cuda import _pools
    from penstock.operators import _image_decode_staging
    from penstock.operators._image_decode_staging import HostStaging

    class Pinned:
        def __init__(self, size):
            self.ptr, self.size = 1 << 20, size

    class Staged:  # a DeviceContext's staging as HostStaging uses it, lent by the pool
        def __init__(self, nbytes, block_bytes):
            self.block = pool.take(max(nbytes, block_bytes))
            self.view = np.zeros(0, np.uint8)

        def give_back(self):
            pool.give_back(self.block, None)
    allocations = []
    pool = _pools.PinnedPool(lambda size: allocations.append(size) or Pinned(size))
    gpu = types.SimpleNamespace(staging=Staged)
    block = _image_decode_staging.BLOCK_BYTES
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 30, 400)
    counts[:40] = np.minimum(counts[:40], 6)  # the largest parts come later, as a trial's do
    pinned_at, in_flight, held = [], None, []
    for i, count in enumerate(counts):
        widths = np.exp(rng.uniform(np.log(100), np.log(8000), count)).astype(np.int64)  # 0.3-24 MB a sample
        shapes = np.stack([np.full(count, 1000), widths, np.full(count, 3)], 1)
        before = len(allocations)
        staging = HostStaging(gpu, shapes)
        assert staging.places[:, 2].tolist() == shapes.prod(1).tolist()
        if shapes.prod(1).sum() < block:
            assert len(staging._blocks) == 1
        if len(allocations) > before:
            pinned_at.append(i)
        held.append(len(staging._blocks) + (0 if in_flight is None else len(in_flight._blocks)))
        if in_flight is not None:  # two batches in flight: the one before gives its blocks back now
            in_flight.give_back()
        in_flight = staging
    assert all(size <= block and size & (size - 1) == 0 for size in allocations)  # one size, or a power of two
    assert allocations.count(block) == max(held)  # the most blocks in flight at once
    assert len(allocations) <= max(held) + 2 * len(set(allocations)) and max(pinned_at) < 200


def test_a_batch_whose_gpu_part_fails_gives_the_hosts_staging_back():
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    src, shapes, _ = _jpeg_batch([(16, 16)] * 3, np.random.default_rng(13))
    windows = np.zeros((3, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]

    class Broken(_FakeDecoder):
        def decode(self, *args):
            raise RuntimeError("the GPU decoder broke")
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    decoder.decoders = [Broken()]
    gpu = _device_that_stages()
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0, gpu=gpu)
    try:
        with pytest.raises(RuntimeError, match="the GPU decoder broke"):
            decoder._decode_sides(ws, src, shapes, None, windows, np.array([0, 1]), np.array([2]), _output(3),
                                  object(), lambda idx, buf, hshapes, offsets, staged: None)
    finally:
        decoder._release()
    assert len(gpu.made) == 1 and gpu.made[0].given_back and not gpu.made[0].uploaded


def test_a_window_outside_its_image_is_that_samples_error_before_any_gpu_work():
    """decoders.image_crop on the mixed backend with a crop larger than an image: refused as on the
    CPU, naming the sample, before the GPU's gather could read outside the decoded image."""
    from penstock._operator import SampleError
    from penstock.operators import _image_decode_mixed as _mixed_decode
    src, shapes, _ = _jpeg_batch([(20, 30), (10, 12)], np.random.default_rng(1))
    decoder = _mixed_decode.MixedDecoder(_FakeOperator())
    try:
        inside = np.array([[0, 0, 20, 30], [2, 3, 8, 9]], np.int64)
        _mixed_decode.check_windows(inside, shapes)
        for window in ([-2, 0, 8, 8], [0, -1, 8, 8], [3, 4, 8, 9], [0, 0, 0, 5], [4, 0, 7, 12]):
            crop = np.array([[0, 0, 20, 30], window], np.int64)
            with pytest.raises(SampleError, match=r"crop window \(y=.*\) lies outside the 10x12 image") as info:
                decoder.decode(None, src, shapes, crop)  # no workspace needed: refused first
            assert info.value.sample == 1
    finally:
        decoder._release()


def test_a_decoder_process_that_cannot_start_says_why_and_leaves_its_share_to_the_others(monkeypatch):
    # the child is a real process started as in a pipeline; here it finds no usable GPU (or no
    # CuPy), tells the parent, and ends: no part of a batch goes to it
    import warnings

    from penstock._cuda import _decode_process
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    ctx = types.SimpleNamespace(device_id=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        child = _decode_process.DecoderProcess(ctx, "", 2, 0.65, True, label="decoders.image")
        child._receiver.join(60)
    assert not child._receiver.is_alive() and not child.usable
    assert child.proc.wait(30) == 0  # it ended by itself, having answered
    said = [str(w.message) for w in caught]
    assert any(m.startswith("decoders.image: a decoder process did not start (") for m in said), said
    decoded, seconds = child.decode(np.zeros(10, np.uint8), np.array([0]), np.array([10]), np.array([[4, 4, 3]]),
                                    np.array([[0, 0, 4, 4]]), False, None, np.array([0]), None, True)
    assert decoded.tolist() == [False] and seconds == 0.0


@pytest.mark.parametrize("value, count", [(None, 0), ("1", 1), ("3", 3)])
def test_the_number_of_decoder_processes_comes_from_the_environment(monkeypatch, value, count):
    from penstock._cuda import _decode_process
    if value is None:
        monkeypatch.delenv(_decode_process.ENV_PROCESSES, raising=False)
    else:
        monkeypatch.setenv(_decode_process.ENV_PROCESSES, value)
    assert _decode_process.process_count() == count


@pytest.mark.parametrize("value", ["-1", "two"])
def test_a_bad_number_of_decoder_processes_is_refused_naming_the_variable(monkeypatch, value):
    from penstock._cuda import _decode_process
    monkeypatch.setenv(_decode_process.ENV_PROCESSES, value)
    with pytest.raises(ValueError, match="PENSTOCK_DECODER_PROCESSES"):
        _decode_process.process_count()


@pytest.mark.parametrize("value", ["yes", "1", "ON"])
def test_a_bad_pinning_switch_is_refused_naming_the_variable(monkeypatch, value):
    from penstock.operators import _image_decode_mixed as _mixed_decode
    monkeypatch.setenv(_mixed_decode.SKIP_PINNING_ENV, value)
    with pytest.raises(ValueError, match="PENSTOCK_SPLIT_SKIP_PINNING=.*expected one of 'off', 'on'"):
        _mixed_decode.MixedDecoder(_FakeOperator())


def test_the_host_share_refuses_a_corrupt_jpeg_whatever_its_window():
    """The mixed backend's host share decodes with the CPU decoder's check: a JPEG whose scan a few
    flipped bytes put out of step is its sample's error, also for a window above the damage."""
    import io

    from PIL import Image

    from penstock import _engine
    from penstock._operator import SampleError
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.tensors import TensorListCPU
    src, shapes, encoded = _jpeg_batch([(64, 96), (64, 96)], np.random.default_rng(2))
    good = np.asarray(Image.open(io.BytesIO(encoded[1].tobytes())))
    out = io.BytesIO()
    Image.fromarray(np.clip(good.astype(int) // 2 + 60, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90)
    damaged = _damaged_copy(np.frombuffer(out.getvalue(), np.uint8))
    src = TensorListCPU._from_packed(np.concatenate([encoded[0], damaged]), np.array([[len(encoded[0])],
                                     [len(damaged)]]), np.array([0, len(encoded[0])]), source_info=["a", "b"])
    windows = np.array([[0, 0, 8, 96], [0, 0, 8, 96]], np.int64)  # the top rows, above the damage
    op = _FakeOperator()  # the decoder holds its operator weakly
    decoder = _mixed_decode.MixedDecoder(op)
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0)
    try:
        with pytest.raises(SampleError, match="Corrupt JPEG data") as info:
            decoder._decode_sides(ws, src, shapes, windows, windows, np.zeros(0, np.int64), np.array([0, 1]),
                                  _output(2), None)
        assert info.value.sample == 1
        # the first alone decodes: its window is the whole image's top rows
        _, host = decoder._decode_sides(ws, src, shapes, windows, windows, np.zeros(0, np.int64), np.array([0]),
                                        _output(2), None)
        whole = _engine.decode_images(ws.pool, encoded[0], np.array([[len(encoded[0])]]), np.zeros(1, np.int64),
                                      0, True, fancy_upsampling=False)[0].reshape(64, 96, 3)
        np.testing.assert_array_equal(host[0][1][:8 * 96 * 3].reshape(8, 96, 3), whole[:8])
    finally:
        decoder._release()


def _damaged_copy(jpeg: np.ndarray) -> np.ndarray:
    """``jpeg`` with bytes in the middle of its scan flipped (none made a marker): libjpeg-turbo
    decodes around them and notices only at the end marker (bytes left over)."""
    blob = bytearray(jpeg.tobytes())
    sos = blob.index(b"\xff\xda")
    middle = sos + (len(blob) - sos) // 2
    for pos in range(middle, middle + 40, 2):
        if 0xFF not in (blob[pos - 1], blob[pos], blob[pos + 1], blob[pos] ^ 0x5A):
            blob[pos] ^= 0x5A
    return np.frombuffer(bytes(blob), np.uint8)


@pytest.mark.parametrize("accept_corrupt", [False, True])
def test_the_host_reads_the_gpus_jpegs_through_and_refuses_a_corrupt_one(accept_corrupt):
    # a GPU decoder decodes the damaged scan without a word (nvImageCodec's do): the host's check
    # beside it makes the file its sample's error, as on the CPU, unless corruption is accepted
    from penstock import _engine
    from penstock._operator import SampleError
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.tensors import TensorListCPU
    _, shapes, encoded = _jpeg_batch([(64, 96), (64, 96), (64, 96)], np.random.default_rng(8))
    damaged = _damaged_copy(encoded[2])
    blobs = [encoded[0], encoded[1], damaged]
    src = TensorListCPU._from_packed(np.concatenate(blobs), np.array([[len(b)] for b in blobs]),
                                     np.concatenate([[0], np.cumsum([len(b) for b in blobs])[:-1]]),
                                     source_info=["a.jpg", "b.jpg", "c.jpg"])
    windows = np.zeros((3, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    op = _FakeOperator()
    op.args["accept_corrupt_jpeg"] = accept_corrupt
    decoder = _mixed_decode.MixedDecoder(op)
    stand_in = _FakeDecoder()
    decoder.decoders = [stand_in]
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0)
    try:
        clean = np.array([0, 1])
        failed, host = decoder._decode_sides(ws, src, shapes, None, windows, clean, np.zeros(0, np.int64),
                                             _output(3), None)
        assert failed.tolist() == [] and host == []
        if accept_corrupt:
            failed, _ = decoder._decode_sides(ws, src, shapes, None, windows, np.array([0, 1, 2]),
                                              np.zeros(0, np.int64), _output(3), None)
            assert failed.tolist() == []
        else:
            with pytest.raises(SampleError, match="Corrupt JPEG data") as info:
                decoder._decode_sides(ws, src, shapes, None, windows, np.array([0, 1, 2]), np.zeros(0, np.int64),
                                      _output(3), None)
            assert info.value.sample == 2  # the batch's sample, not the GPU part's
        assert len(stand_in.calls) == 2  # the GPU decoded every batch whole, the corrupt file too
    finally:
        decoder._release()


def test_the_read_through_does_not_wait_for_the_hosts_share_of_the_decoding():
    """In a first epoch the read-through of the GPU's JPEGs is the host's largest work: it runs beside
    the host's share of the decoding, on the pipeline's threads, not queued behind it."""
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    src, shapes, encoded = _jpeg_batch([(48 + i, 64) for i in range(3)], np.random.default_rng(11))
    op = _FakeOperator()
    decoder = _mixed_decode.MixedDecoder(op)
    decoder._host_pool = _engine.ThreadPool(1)
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(1), defer=lambda: 0)
    copies = 8000  # a long share for the host: ~0.4 s of decoding on its one thread
    many = np.concatenate([encoded[0]] * copies)
    lengths = np.full((copies, 1), len(encoded[0]), np.int64)
    share = _engine.decode_images_later(decoder._host, decoder._host_pool, many, lengths,
                                        np.arange(copies, dtype=np.int64) * len(encoded[0]), 0, True, None, False,
                                        False, None, False)
    try:
        decoder._check_jpegs(ws, src, np.array([0, 1, 2]))()  # read through while the share decodes
        assert not share.done()
        assert len(share.result()[0]) > 0
    finally:
        decoder._release()


class _OpeningDecoder:
    """Stands in for _nvimgcodec.DeviceDecoder where the mixed decoder opens its GPU decoders."""
    usable = True

    def __init__(self, ctx, options, cpu_threads, hw_load, adaptive):
        self.threads, self.hw_load, self.adaptive = cpu_threads, hw_load, adaptive
        self.closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("mode", ["off", "on", "starved"])
def test_the_cuda_decoder_opens_beside_the_hardware_engines_only_when_asked(monkeypatch, mode):
    from penstock import _engine
    from penstock._cuda import _nvimgcodec
    from penstock.operators import _image_decode_mixed as _mixed_decode
    from penstock.types import DALIDataType
    monkeypatch.setenv(_mixed_decode.CUDA_WAY_ENV, mode)
    monkeypatch.setattr(_mixed_decode, "_has_nvimgcodec", lambda: True)
    monkeypatch.setattr(_nvimgcodec, "DeviceDecoder", _OpeningDecoder)
    op = _FakeOperator()
    op.args.update(preallocate_width_hint=0, preallocate_height_hint=0, hybrid_huffman_threshold=1000000,
                   hw_decoder_load=_mixed_decode.DEFAULT_HW_LOAD, dtype=DALIDataType.UINT8)
    decoder = _mixed_decode.MixedDecoder(op)
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(4), batch_size=8, gpu=None,
                               kernels=types.SimpleNamespace(load_gather=lambda dtype: None))
    try:
        opened = list(decoder._device_decoders(ws))
    finally:
        decoder._release()
    engines = opened[0]
    assert (engines.adaptive, engines.hw_load, engines.threads) == (True, _mixed_decode.DEFAULT_HW_LOAD, 2)
    if mode == "off":
        assert len(opened) == 1
    else:  # the CUDA decoder alone, with the Huffman decoding's threads (the pipeline's, up to the cores)
        threads = max(2, _mixed_decode._decoder_thread_budget(4))
        assert len(opened) == 2 and (opened[1].adaptive, opened[1].hw_load, opened[1].threads) == (False, 0.0, threads)
    assert all(d.closed for d in opened) and decoder._cuda_way is None


@pytest.mark.parametrize("mode, starved, takes_part", [("on", 0.0, True), ("starved", 0.1, False),
                                                        ("starved", 0.5, True)])
def test_the_cuda_decoder_takes_a_part_of_the_gpus_large_jpegs_always_or_while_the_consumer_waits(monkeypatch, mode,
                                                                                                   starved, takes_part):
    from penstock import _engine
    from penstock.operators import _image_decode_mixed as _mixed_decode
    monkeypatch.setenv(_mixed_decode.CUDA_WAY_ENV, mode)
    src, shapes, encoded = _jpeg_batch([(8 + i, 12) for i in range(6)], np.random.default_rng(9))
    windows = np.zeros((6, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    op = _FakeOperator()  # (the decoder holds a weak reference)
    op.args["hybrid_huffman_threshold"] = 8 * 12  # all but the first are larger: its Huffman decoding on the GPU
    decoder = _mixed_decode.MixedDecoder(op)
    engines, cuda = _FakeDecoder(), _FakeDecoder()
    decoder.decoders, decoder._cuda_way = [engines, cuda], cuda
    decoder._parts = _mixed_decode.Workers(2, "test-parts")
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2), defer=lambda: 0, starved=lambda: starved)
    before = _mixed_decode.split_counts()
    try:
        failed, host = decoder._decode_sides(ws, src, shapes, None, windows, np.arange(6), np.zeros(0, np.int64),
                                             _output(6), object())
    finally:
        decoder._release()
    after = _mixed_decode.split_counts()
    assert len(failed) == 0 and host == []
    # every JPEG once, in order: the engines' run, then the CUDA decoder's
    assert [b for d in (engines, cuda) for call in d.calls for b in call["bytes"]] == [e.tobytes() for e in encoded]

    taken = len(cuda.calls[0]["bytes"]) if cuda.calls else 0
    assert (len(cuda.calls), taken > 0) == (int(takes_part), takes_part)
    assert encoded[0].tobytes() in engines.calls[0]["bytes"]  # too small for the CUDA decoder
    assert after["cuda_samples"] - before["cuda_samples"] == taken
    assert after["cuda_batches"] - before["cuda_batches"] == int(takes_part)

    # images no larger than the threshold all go to the engines, the CUDA decoder engaged or not
    op.args["hybrid_huffman_threshold"] = 10 ** 6
    decoder = _mixed_decode.MixedDecoder(op)
    engines, cuda = _FakeDecoder(), _FakeDecoder()
    decoder.decoders, decoder._cuda_way = [engines, cuda], cuda
    decoder._parts = _mixed_decode.Workers(2, "test-parts")
    try:
        decoder._decode_sides(ws, src, shapes, None, windows, np.arange(6), np.zeros(0, np.int64), _output(6), object())
    finally:
        decoder._release()
    assert engines.calls[0]["bytes"] == [e.tobytes() for e in encoded] and not cuda.calls


@pytest.mark.parametrize("value", ["yes", "auto", "ON"])
def test_a_bad_cuda_decoder_switch_is_refused_naming_the_variable(monkeypatch, value):
    from penstock.operators import _image_decode_mixed as _mixed_decode
    monkeypatch.setenv(_mixed_decode.CUDA_WAY_ENV, value)
    with pytest.raises(ValueError, match="PENSTOCK_CUDA_DECODER=.*expected one of 'off', 'on', 'starved'"):
        _mixed_decode.MixedDecoder(_FakeOperator())
