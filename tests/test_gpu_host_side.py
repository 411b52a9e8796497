"""The GPU path's host side on a machine without a GPU: a training pipeline (file reader, mixed
random-crop decoder, resize, crop_mirror_normalize with a random mirror, labels to the device) built
with device_id=0 runs its executor stages, deferred fills, planning and uploads against HostDevice
(tests/_cuda_on_host.py): device memory is host memory and the kernels are csrc/cuda's, compiled for
the host. Its batches must be the CPU pipeline's, and a batch must not hold the host for the device
(no stream or event synchronization between batches). With a stand-in for nvImageCodec (the host's
decoder writing the GPU side's windows), the mixed decoder's split between its sides and its check
of the GPU's JPEGs run in the pipeline too."""
import threading
import time

import numpy as np
import pytest

from penstock import _engine, fn, pipeline_def, types
from penstock._cuda import _nvimgcodec

from _cuda_on_host import HostDevice, compile_for_host, use_host_device
from _util import staging_blocks_a_part, write_smooth_jpegs
from test_crop_mirror_normalize_emulated import CMN_HARNESS, GATHER_HARNESS
from test_resize_emulated import HARNESS as RESIZE_HARNESS

MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return {module: compile_for_host(tmp_path_factory.mktemp(module), f"{module}.cu", harness, with_common=True)
            for module, harness in (("resize", RESIZE_HARNESS), ("crop_mirror_normalize", CMN_HARNESS),
                                    ("image_decode", GATHER_HARNESS))}


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Smooth photo-like JPEGs of several sizes in two classes."""
    return write_smooth_jpegs(tmp_path_factory.mktemp("photos"), 9, lambda i, c: (40 + 7 * i, 56 + 5 * i + 9 * c))


def _train_pipeline(root, device_id, batch_size=5, num_threads=2):
    # the mixed decoder upsamples chroma as the CPU one does (by default it does as nvJPEG does)
    decoder = {"device": "cpu"} if device_id is None else {"device": "mixed", "jpeg_fancy_upsampling": True}

    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=17)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, initial_fill=8, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, random_area=[0.3, 1.0], **decoder)
        images = fn.resize(images, resize_x=32, resize_y=24)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, (labels if device_id is None else labels.gpu())
    p = pipe()
    p.build()
    return p


def _samples(batch):
    """The samples of a host or HostDevice batch as numpy arrays."""
    buf = np.asarray(batch._buf)
    return [buf[o:o + int(np.prod(s))].reshape(s) for o, s in zip(batch._offsets, batch._shapes)]


@pytest.mark.parametrize("staging_block", [None, 16 << 10])
def test_the_gpu_pipelines_batches_are_the_cpu_pipelines(monkeypatch, kernels, photos, staging_block):
    """The host emulation's batches are the CPU pipeline's, without host synchronizations between
    them; the host's pixels staged in blocks of the default size (one a part here) or of 16 KB (a part
    in several, a large window in a block of its own)."""
    from penstock.operators import _image_decode_staging
    if staging_block is not None:
        monkeypatch.setattr(_image_decode_staging, "BLOCK_BYTES", staging_block)
    blocks_a_part = staging_blocks_a_part(monkeypatch)
    device = HostDevice(kernels)
    use_host_device(monkeypatch, device)
    gpu, cpu = _train_pipeline(photos, 0), _train_pipeline(photos, None)
    gpu.run(), cpu.run()
    settled = dict(device.calls)  # after the first batch: the pools' and the decoder's first use
    for _ in range(4):  # across an epoch's end (18 files, batches of 5)
        (images, labels), (cpu_images, cpu_labels) = gpu.run(), cpu.run()
        assert [s.tolist() for s in _samples(labels)] == [s.tolist() for s in _samples(cpu_labels)]
        assert images._shapes.tolist() == [[3, 24, 32]] * 5
        for got, want in zip(_samples(images), _samples(cpu_images)):
            # resize's passes on the host-compiled GPU kernels are within 1 of the CPU kernel's (uint8)
            np.testing.assert_allclose(got, want, atol=1.01 / min(STD))
        assert len({float(np.abs(s).sum()) for s in _samples(images)}) == 5  # five different windows
    calls = {k: v - settled.get(k, 0) for k, v in device.calls.items()}
    assert calls.get("stream.synchronize", 0) == 0 and calls.get("event.synchronize", 0) == 0
    assert len(blocks_a_part) >= 5  # a host part a batch (no GPU decoders here), some ahead
    assert max(blocks_a_part) == 1 if staging_block is None else min(blocks_a_part) >= 2


def test_the_stages_let_the_consumer_run_first_while_the_pipeline_is_ahead(monkeypatch, kernels, photos):
    """The thread that takes the batches is the consumer. Taken as the framework iterators take them
    (the next one scheduled as one is handed out: two on the way), the stages' threads and the mixed
    decoder's jobs defer to it, each run's waits bounded by its budget, the consumer never to
    itself; not to run()'s caller, whether run() schedules the batch it then waits for (where it
    cannot schedule ahead: the one on the way is the one it takes next) or ahead of it (two on the way
    while the caller works: the caller gets no turn), nor a pipeline on the host alone, nor one with
    the waits turned off."""
    from penstock import _consumer
    calls = []

    def defer(max_us=None):
        calls.append((threading.current_thread().name, max_us))
        return 0
    monkeypatch.setattr(_consumer, "defer", defer)
    use_host_device(monkeypatch, HostDevice(kernels))

    def take(pipe):
        pipe.share_outputs()
        pipe.release_outputs()
        pipe.schedule_run()
    monkeypatch.setenv(_consumer.ENV, "0")
    off = _train_pipeline(photos, 0)
    off.schedule_run()
    for _ in range(3):
        take(off)
    assert calls == []
    monkeypatch.delenv(_consumer.ENV)  # on by default
    cpu = _train_pipeline(photos, None)
    cpu.schedule_run()
    for _ in range(3):
        take(cpu)
    from penstock._executor import Executor
    submit = Executor.submit

    def submit_then_pause(self, it):  # run() schedules a batch, then waits: the threads see two on the way
        submit(self, it)
        time.sleep(0.05)
    monkeypatch.setattr(Executor, "submit", submit_then_pause)
    by_run, at_the_call = _train_pipeline(photos, 0), _train_pipeline(photos, 0)
    monkeypatch.setattr(at_the_call, "_runs_ahead", lambda: False)  # as with an input operator
    for pipe in (by_run, at_the_call):
        for _ in range(4):
            pipe.run()
            time.sleep(0.05)  # the caller's step: the pipeline's threads work ahead meanwhile
    monkeypatch.setattr(Executor, "submit", submit)
    assert calls == []
    monkeypatch.setenv(_consumer.ENV, "4000")  # a run's waits: at most 4 ms (half the period is more)
    gpu = _train_pipeline(photos, 0)
    gpu.schedule_run()
    for _ in range(6):  # the consumer's period is known from the second
        take(gpu)
        time.sleep(0.05)  # the pipeline's threads work ahead meanwhile
    assert _consumer.consumer() == threading.get_native_id()
    names = {name.rsplit("_", 1)[0] for name, _ in calls}
    assert {"penstock-stage0", "penstock-stage1", "penstock-stage2", "penstock-mixed-decode"} <= names
    assert threading.current_thread().name not in names
    stage_calls = [max_us for name, max_us in calls if name.startswith("penstock-stage")]
    assert stage_calls and all(0 < max_us <= 4000 for max_us in stage_calls)


def test_between_runs_the_prefetch_depth_is_on_the_way_with_the_same_batches(monkeypatch, kernels, photos):
    """run() of a GPU pipeline that reads its own data schedules the next run's iteration before it
    returns: while the caller works between runs, the prefetch depth's iterations are on the way (a
    training step's Python beside them, not one batch's latency after it). The batches are those of
    run() scheduling at the call, as it does for a pipeline fed by an input operator."""
    use_host_device(monkeypatch, HostDevice(kernels))

    def batches(pipe, on_the_way):  # one pipeline at a time: the host-compiled kernels share their indices
        got = []
        for _ in range(4):  # across an epoch's end (18 files, batches of 5)
            images, labels = pipe.run()
            assert len(pipe._pending) == on_the_way and pipe._executor._on_the_way == on_the_way
            got.append(([s.copy() for s in _samples(images)], [s.tolist() for s in _samples(labels)]))
        for it in pipe._pending:
            it.done.wait()
        return got
    ahead = batches(_train_pipeline(photos, 0), 2)
    at_the_call = _train_pipeline(photos, 0)
    monkeypatch.setattr(at_the_call, "_runs_ahead", lambda: False)
    for (images, labels), (want_images, want_labels) in zip(ahead, batches(at_the_call, 1)):
        assert labels == want_labels
        for got, want in zip(images, want_images):
            np.testing.assert_allclose(got, want, atol=1.01 / min(STD))
    monkeypatch.undo()
    use_host_device(monkeypatch, HostDevice(kernels))

    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def fed():
        return fn.external_source(source=lambda: [np.full(3, 7, np.uint8)] * 2, batch=True).gpu()
    pipe = fed()
    pipe.build()
    for _ in range(3):  # the source is called as the caller's run() asks, as DALI calls it
        assert _samples(pipe.run()[0])[1].tolist() == [7, 7, 7]
        assert len(pipe._pending) == 1

    @pipeline_def(batch_size=2, num_threads=1, device_id=0, debug=True)
    def debugged():
        _, labels = fn.readers.file(file_root=photos)
        return labels.gpu()
    pipe = debugged()
    pipe.build()
    pipe._gpu = HostDevice(kernels)  # (a debug pipeline runs each operator as it is called: no executor)
    assert pipe._executor is None and not pipe._runs_ahead()


@pytest.mark.parametrize("consumer_first", ["0", "4000"])
def test_a_thread_busy_in_python_does_not_stall_the_pipeline(monkeypatch, kernels, photos, consumer_first):
    """A thread that runs Python without pause (a training loop's, or any other) shares the GIL
    with the pipeline's threads: the batches still come, the CPU pipeline's, whether the consumer's
    turn is on (the busy consumer bounds the waits, then turns them off) or off."""
    from penstock import _consumer
    monkeypatch.setenv(_consumer.ENV, consumer_first)
    use_host_device(monkeypatch, HostDevice(kernels))
    gpu, cpu = _train_pipeline(photos, 0), _train_pipeline(photos, None)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(1000))
    bystander = threading.Thread(target=spin, daemon=True)
    bystander.start()
    got, failure = [], []

    def consume():  # takes a batch as the framework iterators do, then runs Python as a forward pass would
        try:
            gpu.schedule_run()
            for _ in range(4):
                images, _ = gpu.share_outputs()
                gpu.release_outputs()
                gpu.schedule_run()  # two on the way: the consumer's turn applies
                got.append([s.copy() for s in _samples(images)])
                end = time.perf_counter() + 0.005
                while time.perf_counter() < end:
                    sum(range(1000))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failure.append(exc)
    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    consumer.join(timeout=120)  # a hang guard, not a speed limit
    stop.set()
    bystander.join()
    assert not consumer.is_alive(), "the pipeline stalled behind threads busy in Python"
    assert not failure, failure
    for batch in got:
        want = _samples(cpu.run()[0])
        for a, b in zip(batch, want):
            np.testing.assert_allclose(a, b, atol=1.01 / min(STD))


def test_the_engines_threads_end_with_the_pipeline(monkeypatch, kernels, photos):
    """The mixed decoder's host side (its share of the decoding, the read-through of the GPU's JPEGs)
    and the reader's read-ahead run on native threads of the engine (engine/background.h): a dropped
    pipeline ends them, as it ends its Python threads."""
    import gc
    import os

    def native() -> set:  # the engine's threads, by their OS names
        found = set()
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/comm") as f:
                    if f.read().strip() in ("penstock-host", "penstock-check", "penstock-reader"):
                        found.add(task)
            except OSError:  # ended meanwhile
                pass
        return found
    use_host_device(monkeypatch, HostDevice(kernels))
    before = native()
    pipe = _train_pipeline(photos, 0)
    pipe.run()
    started = native() - before
    assert len(started) == 3  # one of each
    del pipe
    deadline = time.monotonic() + 5
    while started & native() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert not started & native()


class _HostCodec:
    """nvImageCodec stood in for by the host's decoder: each sample's window decoded (tolerating
    corrupt data, as nvImageCodec does) and written into the output batch, host memory here; each
    batch reported as taking ``seconds_per_byte`` of its bytes. ``decoded`` lists each call's count."""

    usable = True
    seconds_per_byte = 0.0
    made: list = []

    def __init__(self, ctx, options, cpu_threads, hw_load, adaptive):
        self.pool = _engine.ThreadPool(1)
        self.cpu_threads = cpu_threads
        self.fancy = "fancy_upsampling=1" in options
        self.decoded: list = []
        self.decoded_bytes = 0.0
        self.waited_for: list = []  # each call's `ready`
        self.idle = _nvimgcodec.IdleClock()
        _HostCodec.made.append(self)

    def decode(self, encoded, starts, lengths, shapes, windows, reverse, out, out_offsets, ready, orient):
        self.waited_for.append(ready)
        began = time.perf_counter()  # (the call came now: no preparation before its turn)
        buf, got, offsets, _ = _engine.decode_images(self.pool, encoded, lengths.reshape(-1, 1), starts, 0, orient,
                                                    windows, fancy_upsampling=self.fancy, accept_corrupt_jpeg=True)
        for k, volume in enumerate(got.prod(axis=1)):
            out[out_offsets[k]:out_offsets[k] + volume] = buf[offsets[k]:offsets[k] + volume]
        self.decoded.append(len(starts))
        self.decoded_bytes += float(lengths.sum())
        ended = time.perf_counter()
        self.idle.turn(ended, ended - began, began)
        return np.ones(len(starts), bool), float(lengths.sum()) * self.seconds_per_byte

    def close(self):
        pass


def _with_host_codec(monkeypatch, kernels, seconds_per_byte) -> HostDevice:
    from penstock.operators import _image_decode_mixed
    device = HostDevice(kernels)
    use_host_device(monkeypatch, device)
    monkeypatch.setattr(_image_decode_mixed, "_has_nvimgcodec", lambda: True)
    monkeypatch.setattr(_nvimgcodec, "DeviceDecoder", _HostCodec)
    monkeypatch.setattr(_HostCodec, "seconds_per_byte", seconds_per_byte)
    monkeypatch.setattr(_HostCodec, "made", [])
    return device


def _all_to_the_gpu(root, batch_size: int, num_threads: int = 2):
    """A built pipeline whose mixed decoder gives the host no share: every JPEG to the GPU side."""
    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=0, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=root, name="Reader")
        return fn.decoders.image(jpegs, device="mixed", hw_decoder_load=0.9)
    p = pipe()
    p.build()
    return p


def test_the_gpu_side_writes_a_batch_after_the_event_its_block_came_with(monkeypatch, kernels, photos):
    """The mixed decoders' output blocks are reused in stream order, and nvJPEG's hardware engines
    write without waiting for their stream: each GPU decoding gets the event the arena handed out
    with its batch (recorded when the block's last batch was freed), which the native decoder holds
    the engines for."""
    device = _with_host_codec(monkeypatch, kernels, 5e-10)
    pipe = _all_to_the_gpu(photos, 4)
    for _ in range(4):
        pipe.run()
    waited_for = _HostCodec.made[0].waited_for
    (arena,) = device.arenas
    assert len(waited_for) >= 4 and len({id(e) for e in waited_for}) == len(waited_for)
    assert {id(e) for e in waited_for} <= {id(e) for e in arena.written_after}


def test_a_decoding_job_feeds_the_gpu_decoders_before_it_defers_to_the_consumer(monkeypatch, kernels, photos):
    """A job's first work is handing its JPEGs to the GPU decoders: its turn for the consumer comes after
    (the hardware engines would idle through the consumer's forward pass), once per batch."""
    from penstock._executor import Executor
    _with_host_codec(monkeypatch, kernels, 5e-10)
    events: list = []
    defer, decode = Executor.defer_to_consumer, _HostCodec.decode

    def deferring(self, max_us=None):
        events.append((threading.current_thread().name, "defer"))
        return defer(self, max_us)

    def decoding(self, *args):
        events.append((threading.current_thread().name, "decode"))
        return decode(self, *args)
    monkeypatch.setattr(Executor, "defer_to_consumer", deferring)
    monkeypatch.setattr(_HostCodec, "decode", decoding)
    pipe = _all_to_the_gpu(photos, 4)
    pipe.schedule_run()
    for _ in range(6):  # as the framework iterators take batches: two on the way
        pipe.share_outputs()
        pipe.release_outputs()
        pipe.schedule_run()
    jobs = {}
    for thread, event in events:
        if thread.startswith("penstock-mixed-decode"):
            jobs.setdefault(thread, []).append(event)
    assert sum(len(seq) for seq in jobs.values()) >= 8  # a job a batch, or a pair of batches (penstock._pairs)
    for seq in jobs.values():  # (the last job may still be decoding)
        assert seq == (["decode", "defer"] * len(seq))[:len(seq)], seq


@pytest.mark.parametrize("gpu_rate,gpu_keeps_most", [(2e9, True), (1e5, False)])
def test_the_host_takes_whole_images_when_the_gpu_side_falls_far_behind(monkeypatch, kernels, photos, gpu_rate,
                                                                        gpu_keeps_most):
    """The mixed decoder's two sides in a whole pipeline, its GPU side a stand-in: as fast as an
    H200's engines, the GPU keeps most of the batch (the host takes only windows that spare it half
    an image); far behind (a GPU shared with a training model), the first trial of the lifted cap
    measures it quicker (its first batches probes of one image, the host's rate not yet measured:
    under the cap it took none), and from then on the host decodes whole batches. Either way the
    batches are the CPU pipeline's."""
    from penstock.operators import _image_decode_split as split
    _with_host_codec(monkeypatch, kernels, 1 / gpu_rate)
    gpu, cpu = _train_pipeline(photos, 0, batch_size=8), _train_pipeline(photos, None, batch_size=8)
    # the capped batches, the trial, then a few batches lifted (fewer than come before the next trial)
    batches = split._FIRST_TRIAL + split._TRIAL_BATCHES + 6
    for k in range(batches):
        (images, _), (want, _) = gpu.run(), cpu.run()
        for got, expected in zip(_samples(images), _samples(want)):
            np.testing.assert_allclose(got, expected, atol=1.01 / min(STD))
        if k == batches - 5:
            before_the_last = len(_HostCodec.made[0].decoded)
    decoded = _HostCodec.made[0].decoded  # the GPU side's samples, per batch it had any of
    if gpu_keeps_most:
        assert len(decoded) >= batches and min(decoded[-3:]) >= 4
    else:  # the capped batches before the trial and its probes (split before the host's second batch finished,
        # its first the set-up's: up to three, two batches in flight); then none
        assert len(decoded) <= split._FIRST_TRIAL + 3 and len(decoded) == before_the_last


@pytest.mark.parametrize("seconds_per_byte", [5e-10, 1e-5])
def test_split_counts_say_how_the_sides_shared_the_batches(monkeypatch, kernels, photos, seconds_per_byte):
    """``split_counts`` (what train_e2e reports of the split): every batch decoded is counted once,
    each of its samples on the side that decoded it, each side with its measured seconds: the GPU
    side's stand-in reports its bytes' time; the host's share (none beside a quick GPU side, whole
    batches after the trial beside a slow one) its own; and the GPU decoder's time between its calls,
    and of it the time before the next call came."""
    from penstock.operators import _image_decode_mixed as mixed
    from penstock.operators import _image_decode_split as split
    _with_host_codec(monkeypatch, kernels, seconds_per_byte)
    before = mixed.split_counts()
    pipe = _train_pipeline(photos, 0, batch_size=8)
    runs = split._FIRST_TRIAL + split._TRIAL_BATCHES + 2
    began = time.perf_counter()
    for _ in range(runs):
        pipe.run()
    pipe._shutdown()  # the batches in flight finish first
    took = time.perf_counter() - began
    counts = {k: v - before[k] for k, v in mixed.split_counts().items()}
    codec = _HostCodec.made[0]
    assert counts["batches"] >= runs and counts["gpu_samples"] + counts["host_samples"] == 8 * counts["batches"]
    assert counts["gpu_samples"] == sum(codec.decoded)
    # the lifted batches again, on their own: a part of each side's counts
    assert counts["lifted_gpu_samples"] + counts["lifted_host_samples"] == 8 * counts["lifted_batches"]
    assert 0 <= counts["lifted_host_seconds"] <= counts["host_seconds"]
    assert counts["gpu_seconds"] == pytest.approx(seconds_per_byte * codec.decoded_bytes)
    assert 0 < counts["gpu_idle_seconds"] < took  # between the stand-in's calls (none while the host had all)
    # run() waits for each batch: the decoder idles until the next batch comes (no preparation here)
    assert counts["gpu_unfed_seconds"] == pytest.approx(counts["gpu_idle_seconds"])
    assert (counts["host_samples"] > 0) == (counts["host_seconds"] > 0) == (seconds_per_byte > 1e-6)
    if seconds_per_byte > 1e-6:  # the lifted way: the first trial's batches, then the way in force
        assert counts["lifted_batches"] > split._TRIAL_BATCHES
    else:  # the trial's batches only, one more for each of its batches after the first split as a probe (the
        # host's rate not yet measured: up to two, as threads run)
        assert split._TRIAL_BATCHES <= counts["lifted_batches"] <= split._TRIAL_BATCHES + 2


def test_the_host_parts_gather_is_ready_before_the_host_takes_a_share(monkeypatch, kernels, photos):
    """The kernel that copies the host's part into the batch is fetched (on a GPU: compiled, or
    loaded from CuPy's cache) when the GPU decoders open, not when the host's first share comes,
    which may be well into a run."""
    device = _with_host_codec(monkeypatch, kernels, 1 / 2e9)
    fetched = []
    fetch = device.kernels._fn
    device.kernels._fn = lambda module, name: fetched.append((module, name)) or fetch(module, name)
    _all_to_the_gpu(photos, 4).run()
    assert set(_HostCodec.made[0].decoded) == {4}  # the GPU side decoded whole batches
    assert fetched == [("image_decode", "gather_u8")]


def test_nvimgcodec_gets_two_threads_for_the_hardware_engines_alone(monkeypatch, kernels, photos):
    """The default (the hardware engines alone) opens nvImageCodec with the 2 threads that keep them
    fed, on a host of any size; a hw_decoder_load given puts nvJPEG's CUDA decoder beside them, whose
    Huffman decoding gets the pipeline's threads."""
    from penstock.operators import _image_decode_mixed
    _with_host_codec(monkeypatch, kernels, 1 / 2e9)
    monkeypatch.setattr(_image_decode_mixed, "host_cores", lambda: 16)
    _train_pipeline(photos, 0, batch_size=4, num_threads=8).run()
    _all_to_the_gpu(photos, 4, num_threads=8).run()
    assert [codec.cpu_threads for codec in _HostCodec.made] == [2, 8]


def test_the_cuda_decoder_decodes_while_the_consumer_waits_and_stops_once_it_keeps_ahead(monkeypatch, kernels,
                                                                                          photos):
    """PENSTOCK_CUDA_DECODER=starved in a pipeline: a consumer that takes its batches back to back
    waits for each, and the CUDA decoder (the second stand-in, opened with the CUDA decoder alone)
    takes a part of the GPU's JPEGs, each sample landing in its place; a consumer slower than the
    pipeline finds its batches ready, and after a while the CUDA decoder gets none."""
    from penstock.operators import _image_decode_mixed
    monkeypatch.setenv(_image_decode_mixed.CUDA_WAY_ENV, "starved")
    _with_host_codec(monkeypatch, kernels, 1 / 2e9)
    decode = _HostCodec.decode

    def slow(self, *args):  # the pipeline, not the consumer, sets the pace
        time.sleep(0.02)
        return decode(self, *args)
    monkeypatch.setattr(_HostCodec, "decode", slow)

    def build(device_id):
        # (a threshold of 0: every photograph is large enough for the CUDA decoder)
        on = {"device": "cpu"} if device_id is None else {"device": "mixed", "jpeg_fancy_upsampling": True,
                                                          "hybrid_huffman_threshold": 0}

        @pipeline_def(batch_size=6, num_threads=2, device_id=device_id, seed=3)
        def pipe():
            jpegs, _ = fn.readers.file(file_root=photos, name="Reader")
            return fn.decoders.image(jpegs, **on)
        p = pipe()
        p.build()
        return p

    gpu = build(0)
    got = [[s.copy() for s in _samples(gpu.run()[0])] for _ in range(30)]  # back to back
    cpu = build(None)
    for batch in got:
        for a, b in zip(_samples(cpu.run()[0]), batch):
            np.testing.assert_array_equal(a, b)
    assert gpu._executor.starved_share() > 0.25
    engines, cuda = _HostCodec.made
    assert (engines.cpu_threads, cuda.cpu_threads) == (2, 2)  # the CUDA decoder's: the pipeline's threads
    assert sum(cuda.decoded) > 0
    for _ in range(25):  # a consumer slower than the pipeline
        gpu.run()
        time.sleep(0.05)
    taken = sum(cuda.decoded)
    for _ in range(5):
        gpu.run()
        time.sleep(0.05)
    assert sum(cuda.decoded) == taken and gpu._executor.starved_share() < 0.25


def test_a_corrupt_jpeg_the_gpu_decodes_is_its_files_error_in_the_pipeline(monkeypatch, kernels, tmp_path):
    """The read-through beside the decoding: the stand-in decodes a damaged scan without a word, as
    nvImageCodec does; the host's check makes it the pipeline's error, naming the file."""
    from PIL import Image

    from test_image_decode_mixed import _damaged_copy
    _with_host_codec(monkeypatch, kernels, 1 / 2e9)
    root = write_smooth_jpegs(tmp_path, 3, lambda i, c: (64, 96 + 8 * i))
    bad = tmp_path / "1" / "2.jpg"
    with Image.open(bad) as im:
        noisy = np.asarray(im).astype(int) // 2 + np.random.default_rng(0).integers(0, 120, (64, 112, 3))
    Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(bad, quality=90)
    bad.write_bytes(_damaged_copy(np.frombuffer(bad.read_bytes(), np.uint8)).tobytes())
    p = _all_to_the_gpu(root, 6)
    with pytest.raises(RuntimeError, match="Corrupt JPEG data") as info:
        p.run()
    assert "2.jpg" in str(info.value)
    assert _HostCodec.made[0].decoded[0] == 6  # the GPU side decoded every file, the damaged one too
