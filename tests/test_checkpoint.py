"""Checkpointing (api.md §14): a pipeline restored from ``checkpoint()`` gives exactly the batches
the uninterrupted pipeline gives next, over several epochs, for every stateful operator; and the
same seed gives the same batches whatever the threads, queue depths and executor modes."""
import json
import os

import numpy as np
import pytest
from PIL import Image

from penstock import _cuda, fn, pipeline_def, types
from penstock.pipeline import Pipeline

END = "end of epoch"


def _drive(pipe, steps):
    """``steps`` calls of run(); a StopIteration is recorded and followed by reset()."""
    events = []
    for _ in range(steps):
        try:
            outs = [t.as_cpu() for t in pipe.run()]  # GPU batches copied to the host
            events.append([np.array(t.as_array() if t.is_dense_tensor() else
                                    np.concatenate([np.ravel(t.at(i)) for i in range(len(t))]))
                           for t in outs])
        except StopIteration:
            events.append(END)
            pipe.reset()
    return events


def _same(a, b):
    assert len(a) == len(b)
    for k, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, str) or isinstance(y, str):
            assert x == y, f"step {k}: {x!r} vs {y!r}"
            continue
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), f"step {k} differs"


def check_resume(make, steps=24, stops=(0, 1, 5, 11, 17), **kw):
    """Interrupted at each of ``stops`` and resumed from the checkpoint vs one uninterrupted run."""
    reference = _drive(make(**kw), steps)
    for stop in stops:
        first = make(**kw)
        head = _drive(first, stop)
        cpt = first.checkpoint()
        assert isinstance(cpt, bytes)
        assert first.checkpoint() == cpt  # taking a checkpoint changes nothing
        tail = _drive(make(checkpoint=cpt, **kw), steps - stop)
        _same(head + tail, reference)
    return reference


# ---- data ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    return _jpeg_folder(tmp_path_factory.mktemp("ckpt_jpegs"), smooth=False)


@pytest.fixture(scope="module")
def smooth_jpeg_root(tmp_path_factory):
    """Gradients: the GPU's and the host's JPEG decoders agree closely on them, unlike on noise."""
    return _jpeg_folder(tmp_path_factory.mktemp("ckpt_smooth_jpegs"), smooth=True)


def _jpeg_folder(root, smooth: bool) -> str:
    rng = np.random.default_rng(0)
    for c in range(2):
        (root / str(c)).mkdir()
        for i in range(7):
            shape = (20 + 2 * i, 24 + 3 * c, 3)
            if smooth:
                y, x, ch = np.mgrid[0:shape[0], 0:shape[1], 0:3]
                px = (128 + 100 * np.sin(x / shape[1] * 3 + y / shape[0] * 2 + ch + i)).astype(np.uint8)
            else:
                px = rng.integers(0, 256, shape, dtype=np.uint8)
            Image.fromarray(px).save(root / str(c) / f"{i}.jpg", quality=90)
    return str(root)


@pytest.fixture(scope="module")
def label_files(tmp_path_factory):
    """13 tiny files whose bytes are their own index: a reader's output names the sample."""
    root = tmp_path_factory.mktemp("ckpt_files")
    files = []
    for i in range(13):
        p = root / f"f{i:02d}.jpg"
        p.write_bytes(bytes([i]))
        files.append(str(p))
    return files


def _maker(graph, batch_size=4, **pipe_kw):
    def make(checkpoint=None, **kw):
        @pipeline_def(**{"batch_size": batch_size, "num_threads": 2, "device_id": None, "seed": 7,
                         "enable_checkpointing": True, "checkpoint": checkpoint, **pipe_kw, **kw})
        def pipe():
            return graph()
        return pipe()
    return make


# ---- readers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reader_kw", [
    dict(random_shuffle=True, initial_fill=5),
    dict(random_shuffle=False),
    dict(random_shuffle=True, initial_fill=3, num_shards=3, shard_id=1),
    dict(random_shuffle=True, initial_fill=4, num_shards=3, shard_id=2, stick_to_shard=True),
    dict(num_shards=3, shard_id=0, pad_last_batch=True),
    dict(random_shuffle=True, num_shards=2, shard_id=1, pad_last_batch=True, stick_to_shard=True),
    dict(shuffle_after_epoch=True),
    dict(shuffle_after_epoch=True, num_shards=2, shard_id=1, pad_last_batch=True),
    dict(random_shuffle=True, lazy_init=True, prefetch_queue_depth=3),
])
def test_file_reader_resumes_exactly(label_files, reader_kw):
    def graph():
        data, label = fn.readers.file(files=label_files, name="R", **reader_kw)
        return data, label
    reference = check_resume(_maker(graph), steps=20)
    seen = np.concatenate([step[0].ravel() for step in reference])
    assert len(set(seen.tolist())) > 3  # the reader really moved through the data


def test_numpy_reader_resumes_exactly(tmp_path):
    for i in range(9):
        np.save(tmp_path / f"a{i}.npy", np.full((2,), i, np.int16))

    def graph():
        return fn.readers.numpy(file_root=str(tmp_path), random_shuffle=True, initial_fill=4, name="R")
    check_resume(_maker(graph, batch_size=2), steps=16, stops=(3, 10))


def test_the_reader_state_is_small_and_plain(label_files):
    make = _maker(lambda: fn.readers.file(files=label_files, random_shuffle=True, initial_fill=6, name="R")[1])
    pipe = make()
    _drive(pipe, 3)
    state = json.loads(pipe.checkpoint())
    assert state["iter"] == 3 and state["epoch_idx"] == 0
    kinds = [kind for kind, _ in state["operators"]]
    assert kinds == ["readers.File"]
    reader = state["operators"][0][1]
    assert len(reader["samples"]["buffer"]) == 6 and reader["num_shards"] == 1


# ---- random operators and decoders -------------------------------------------------------------
def test_random_operators_resume_exactly():
    def graph():
        a = fn.random.uniform(range=(-1, 1), shape=(3,))
        b = fn.random.coin_flip(probability=0.3)
        c = fn.random.normal(shape=(2,))
        d = fn.random.uniform(values=[1.0, 2.0, 5.0], seed=1234)
        return a, b, c, d
    check_resume(_maker(graph), steps=12, stops=(1, 6))


def test_random_seed_none_is_carried_by_the_checkpoint():
    def graph():
        return fn.random.uniform(range=(0, 1), shape=(4,))
    make = _maker(graph, seed=None)
    first = make()
    _drive(first, 2)
    cpt = first.checkpoint()
    expected = _drive(first, 3)
    _same(_drive(make(checkpoint=cpt), 3), expected)


def test_random_decoders_resume_exactly(jpeg_root):
    def graph():
        jpegs, labels = fn.readers.file(file_root=jpeg_root, random_shuffle=True, initial_fill=4, name="R")
        crops = fn.decoders.image_random_crop(jpegs, output_type=types.RGB, random_area=(0.2, 1.0))
        rrc = fn.random_resized_crop(fn.decoders.image(jpegs), size=(8, 8))
        out = fn.resize(crops, resize_x=12, resize_y=10)
        out = fn.crop_mirror_normalize(out, mirror=fn.random.coin_flip(), mean=[10.0], std=[50.0])
        return out, rrc, labels
    check_resume(_maker(graph, batch_size=3), steps=12, stops=(2, 7))


# ---- external sources ----------------------------------------------------------------------------
def _batch_source(info):
    if info.iteration >= 3:
        raise StopIteration
    return [np.array([info.epoch_idx, info.iteration, j], np.int32) for j in range(2)]


def _sample_source(info):
    if info.iteration >= 4:
        raise StopIteration
    return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx], np.int64)


@pytest.mark.parametrize("kind", ["batch_info", "iteration", "sample_info"])
def test_callable_external_sources_resume_at_the_next_iteration_of_the_epoch(kind):
    def graph():
        if kind == "batch_info":
            return fn.external_source(_batch_source, batch_info=True) + fn.random.uniform(range=(0, 1))
        if kind == "iteration":
            return fn.external_source(lambda i: [np.array([i], np.int32)] * 2 if i < 5 else _stop())
        return fn.external_source(_sample_source, batch=False)
    reference = check_resume(_maker(graph, batch_size=2), steps=15, stops=(0, 2, 3, 4, 9))
    assert reference.count(END) >= 2  # several epochs


def _stop():
    raise StopIteration


def test_checkpoint_at_the_end_of_an_epoch_resumes_with_the_end():
    make = _maker(lambda: fn.external_source(_batch_source, batch_info=True), batch_size=2)
    first = make()
    _drive(first, 3)   # the whole epoch consumed; the pipeline has seen its end already
    restored = make(checkpoint=first.checkpoint())
    with pytest.raises(StopIteration):
        restored.run()
    restored.reset()
    _same(_drive(restored, 1), [[np.array([[1, 0, 0], [1, 0, 1]], np.int32)]])


def test_generator_with_cycle_restarts_from_its_beginning_with_a_warning():
    def gen():
        for i in range(3):
            yield [np.array([i], np.int32)]

    make = _maker(lambda: fn.external_source(gen, cycle=True), batch_size=1)
    first = make()
    _drive(first, 2)
    cpt = first.checkpoint()
    with pytest.warns(RuntimeWarning, match="starts again from its beginning"):
        restored = make(checkpoint=cpt)
        restored.build()
    _same(_drive(restored, 4), _drive(make(), 4))


def _parallel_source(info):
    if info.iteration >= 3:
        raise StopIteration
    return np.array([info.idx_in_epoch, info.epoch_idx], np.int32)


def test_parallel_external_source_resumes_exactly():
    make = _maker(lambda: fn.external_source(_parallel_source, batch=False, parallel=True), batch_size=2,
                  py_num_workers=2)
    check_resume(make, steps=10, stops=(2, 5))


def _parallel_generator():
    for i in range(3):
        yield [np.array([i], np.int32)]


def test_parallel_generator_restarts_from_its_beginning_with_a_warning():
    make = _maker(lambda: fn.external_source(_parallel_generator, parallel=True, batch=True, cycle=True),
                  batch_size=1, py_num_workers=1)
    first = make()
    _drive(first, 2)
    with pytest.warns(RuntimeWarning, match="starts again from its beginning"):
        restored = make(checkpoint=first.checkpoint())
        restored.build()
    _same(_drive(restored, 4), _drive(make(), 4))


# ---- the prefetch queue and executor modes -------------------------------------------------------
@pytest.mark.parametrize("pipe_kw", [
    dict(prefetch_queue_depth=1), dict(prefetch_queue_depth=4),
    dict(exec_pipelined=False), dict(exec_async=False, exec_pipelined=False),
])
def test_prefetched_batches_are_neither_skipped_nor_repeated(label_files, pipe_kw):
    def graph():
        _, label = fn.readers.file(files=label_files, random_shuffle=True, initial_fill=5, name="R",
                                   prefetch_queue_depth=2)
        return label, fn.random.uniform(range=(0, 1))
    check_resume(_maker(graph, **pipe_kw), steps=14, stops=(1, 8))


def test_scheduled_api_checkpoint_counts_what_outputs_returned(label_files):
    def graph():
        return fn.readers.file(files=label_files, random_shuffle=True, initial_fill=5, name="R")[1]
    make = _maker(graph, prefetch_queue_depth=3)
    reference = _drive(make(), 8)
    pipe = make()
    pipe.schedule_run()        # three iterations in flight
    pipe.outputs()
    pipe.schedule_run()
    pipe.outputs()
    cpt = pipe.checkpoint()    # two consumed, more prepared
    assert json.loads(cpt)["iter"] == 2
    _same(_drive(make(checkpoint=cpt), 6), reference[2:])


# ---- API -----------------------------------------------------------------------------------------
def test_checkpoint_needs_enable_checkpointing():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.random.uniform(range=(0, 1))
    p = pipe()
    p.build()
    assert not p.enable_checkpointing and not p.is_restored_from_checkpoint
    with pytest.raises(RuntimeError, match="checkpointing is not enabled"):
        p.checkpoint()


def test_checkpoint_file_and_restored_flag(tmp_path):
    make = _maker(lambda: fn.random.uniform(range=(0, 1)))
    p = make()
    _drive(p, 2)
    path = tmp_path / "pipe.cpt"
    data = p.checkpoint(str(path))
    assert path.read_bytes() == data
    restored = make(checkpoint=path.read_bytes())
    assert restored.is_restored_from_checkpoint
    as_text = make(checkpoint=data.decode())  # str works as well as bytes
    _same(_drive(as_text, 2), _drive(restored, 2))


def test_restoring_into_another_pipeline_or_from_garbage_raises():
    a = _maker(lambda: fn.random.uniform(range=(0, 1)))()
    cpt = a.checkpoint()
    other = _maker(lambda: fn.random.normal())
    with pytest.raises(RuntimeError, match="operators"):
        other(checkpoint=cpt).build()
    with pytest.raises(RuntimeError, match="not a penstock checkpoint"):
        Pipeline(batch_size=1, num_threads=1, device_id=None, checkpoint=b"not a checkpoint")


def test_restore_in_place_rewinds_a_running_pipeline(label_files):
    make = _maker(lambda: fn.readers.file(files=label_files, random_shuffle=True, initial_fill=5, name="R")[1])
    reference = _drive(make(), 10)
    pipe = make()
    _drive(pipe, 3)
    cpt = pipe.checkpoint()
    _drive(pipe, 4)
    pipe._restore_in_place(cpt)
    _same(_drive(pipe, 7), reference[3:])


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
def test_gpu_pipeline_resumes_exactly_and_matches_the_cpu(smooth_jpeg_root):
    def graph(device):
        def g():
            jpegs, labels = fn.readers.file(file_root=smooth_jpeg_root, random_shuffle=True, initial_fill=4,
                                            name="R")
            # on the GPU with chroma upsampled as on the CPU, to compare the two
            images = fn.decoders.image_random_crop(
                jpegs, **({"device": "mixed", "jpeg_fancy_upsampling": True} if device == "gpu" else {}))
            images = fn.resize(images, resize_x=12, resize_y=10)
            images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(), crop=(8, 8))
            return images, fn.random_resized_crop(images, size=(6, 6)), labels
        return g
    make = _maker(graph("gpu"), batch_size=3, device_id=0)
    reference = check_resume(make, steps=10, stops=(1, 6))
    cpu = _drive(_maker(graph("cpu"), batch_size=3)(), 10)
    for g, c in zip(reference, cpu):  # the same draws on both devices: the same windows and shapes
        for x, y in zip(g, c):
            diff = np.abs(x.astype(np.float64) - y)
            # the GPU's and the host's JPEG IDCT and upsampling differ slightly (test_gpu_operators)
            assert x.shape == y.shape and diff.mean() < 1.0 and diff.max() <= 12


# ---- determinism ---------------------------------------------------------------------------------
def _augmenting_graph(root):
    def graph():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, initial_fill=5, name="R")
        images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=16, resize_y=16)
        images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(), mean=[5.0], std=[20.0])
        rrc = fn.random_resized_crop(fn.decoders.image(jpegs), size=(6, 6))
        noise = fn.random.normal(shape=(3,))
        return images, rrc, noise, labels
    return graph


@pytest.mark.parametrize("num_threads,pipe_kw", [
    (1, dict(prefetch_queue_depth=1)), (2, dict(prefetch_queue_depth=3)), (4, dict(prefetch_queue_depth=2)),
    (4, dict(exec_pipelined=False)), (2, dict(exec_async=False, exec_pipelined=False)),
    (1, dict(exec_dynamic=False, prefetch_queue_depth=2)),
])
def test_same_seed_same_batches_whatever_the_threads_queues_and_executor(jpeg_root, num_threads, pipe_kw):
    graph = _augmenting_graph(jpeg_root)

    def make(num_threads, **kw):
        @pipeline_def(batch_size=3, num_threads=num_threads, device_id=None, seed=99, **kw)
        def pipe():
            return graph()
        return pipe()
    reference = _drive(make(2), 8)
    _same(_drive(make(num_threads, **pipe_kw), 8), reference)


# ---- elastic restore: another number of shards ---------------------------------------------------
def _shard_pipe(files, shard, shards, checkpoint=None, batch_size=3, **reader_kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=4, enable_checkpointing=True,
                  checkpoint=checkpoint)
    def pipe():
        return fn.readers.file(files=files, shard_id=shard, num_shards=shards, name="R", **reader_kw)[0]
    return pipe()


class _Samples:
    """A pipeline's output as a stream of samples (dataset indices), batch after batch."""

    def __init__(self, pipe):
        self.pipe, self.left = pipe, []

    def take(self, count):
        while len(self.left) < count:
            self.left += self.pipe.run()[0].as_array().ravel().tolist()
        got, self.left = self.left[:count], self.left[count:]
        return got


def _take(pipe, count):
    return _Samples(pipe).take(count)


@pytest.mark.parametrize("reader_kw", [
    dict(pad_last_batch=True), dict(random_shuffle=True, initial_fill=4, pad_last_batch=True),
    dict(random_shuffle=True, initial_fill=5, stick_to_shard=True, pad_last_batch=True),
    dict(shuffle_after_epoch=True, pad_last_batch=True), dict(random_shuffle=True, initial_fill=3),
])
@pytest.mark.parametrize("old,new,steps", [(2, 3, 1), (3, 2, 1), (4, 1, 1), (2, 5, 1), (3, 3, 1), (2, 1, 2)])
def test_elastic_restore_sees_every_sample_once_per_epoch(label_files, reader_kw, old, new, steps):
    n, b = len(label_files), 3
    files = label_files if reader_kw.get("pad_last_batch") else label_files[:12]  # equal shards without padding
    n = len(files)
    pad = reader_kw.get("pad_last_batch", False)
    pipes = [_shard_pipe(files, s, old, **reader_kw) for s in range(old)]
    before = [_take(p, steps * b) for p in pipes]  # whole batches
    cps = [p.checkpoint() for p in pipes]
    shard_sizes = [((s + 1) * n) // old - (s * n) // old for s in range(old)]
    seen = [i for s, got in enumerate(before) for i in got[:shard_sizes[s]]]  # padding repeats left out
    remaining = n - len(seen)
    streams = [_Samples(_shard_pipe(files, s, new, cps, **reader_kw)) for s in range(new)]
    parts = [((s + 1) * remaining) // new - (s * remaining) // new for s in range(new)]
    rest = [st.take(k) for st, k in zip(streams, parts)]
    assert sorted(seen + [i for got in rest for i in got]) == list(range(n))
    if not pad:
        return  # unpadded shards of unequal sizes drift apart: only this epoch is exact
    for st, k in zip(streams, parts):  # that epoch's padding up to its last whole batch
        pad_to = -(-remaining // new)
        assert set(st.take(-(-pad_to // b) * b - k)) <= {rest[streams.index(st)][-1]}
    # then the new shards read whole epochs of their own sharding: each sample once over them
    sizes = [((s + 1) * n) // new - (s * n) // new for s in range(new)]
    stick = reader_kw.get("stick_to_shard", False) or reader_kw.get("shuffle_after_epoch", False)
    for e in range(2):  # shard j reads the samples of shard j + e unless it sticks to its shard
        own = [sizes[j if stick else (j + e) % new] for j in range(new)]
        epoch = [st.take(k) for st, k in zip(streams, own)]
        assert sorted(i for got in epoch for i in got) == list(range(n))
        for st, k, got in zip(streams, own, epoch):
            assert set(st.take(-(-max(sizes) // b) * b - k)) <= {got[-1]}


def test_elastic_restore_needs_every_shard_at_the_same_iteration(label_files):
    pipes = [_shard_pipe(label_files, s, 2, pad_last_batch=True) for s in range(2)]
    _take(pipes[0], 3)
    cp0 = pipes[0].checkpoint()
    with pytest.raises(RuntimeError, match="every shard"):
        _shard_pipe(label_files, 0, 3, [cp0], pad_last_batch=True).build()
    with pytest.raises(RuntimeError, match="same iteration"):
        _shard_pipe(label_files, 0, 3, [cp0, pipes[1].checkpoint()], pad_last_batch=True).build()
    _take(pipes[1], 3)
    _take(pipes[0], 3)
    _take(pipes[1], 3)  # 12 of 13 samples handed out: one left for three new shards
    with pytest.raises(RuntimeError, match="fewer than the 3 new shards"):
        _shard_pipe(label_files, 0, 3, [p.checkpoint() for p in pipes], pad_last_batch=True).build()


def test_debug_mode_refuses_checkpointing():
    from penstock.pipeline.experimental import pipeline_def as debug_def

    @debug_def(batch_size=2, num_threads=1, device_id=None, debug=True, enable_checkpointing=True)
    def pipe():
        return fn.random.uniform(range=(0, 1))
    with pytest.raises(NotImplementedError, match="debug mode"):
        pipe()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_reader_skipping_unreadable_files_resumes_exactly(tmp_path, label_files):
    files = list(label_files)
    for k in (3, 8):  # unreadable entries: directories where files are listed
        files[k] = str(tmp_path / f"dir{k}")
        (tmp_path / f"dir{k}").mkdir()

    def graph():
        data, label = fn.readers.file(files=files, random_shuffle=True, initial_fill=4, on_error="skip", name="R")
        return data, label
    reference = check_resume(_maker(graph), steps=12, stops=(1, 4, 7))
    assert not {3, 8} & {i for step in reference for i in step[1].ravel().tolist()}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_decoder_skipping_corrupt_images_resumes_exactly(tmp_path):
    rng = np.random.default_rng(1)
    files = []
    for i in range(9):
        path = tmp_path / f"{i}.jpg"
        if i in (2, 6):
            path.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg" * 4)
        else:
            Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(path)
        files.append(str(path))

    def graph():
        jpegs, label = fn.readers.file(files=files, random_shuffle=True, initial_fill=3, name="R")
        return fn.decoders.image_random_crop(jpegs, on_error="skip"), label
    check_resume(_maker(graph, batch_size=2), steps=12, stops=(2, 5, 9))


# ---- integrity: nothing restores into silently different data -------------------------------------
def _resigned(cpt: bytes, edit) -> bytes:
    """The checkpoint edited by ``edit(state)`` and signed again: what a bug or a hand edit that also
    recomputed the checksum would give."""
    from penstock import _checkpoint
    state = json.loads(cpt)
    del state["sha256"]
    edit(state)
    return _checkpoint.serialize(dict(state, sha256=_checkpoint._digest(state)))


def _shuffled_reader_pipeline(files, **kw):
    def graph():
        data, label = fn.readers.file(files=files, random_shuffle=True, initial_fill=5, name="R")
        return data, fn.random.uniform(range=(0, 1), shape=(2,)), label
    return _maker(graph, **kw)


def test_every_changed_digit_and_flipped_bit_is_refused(label_files):
    make = _shuffled_reader_pipeline(label_files)
    pipe = make()
    _drive(pipe, 4)
    cpt = pipe.checkpoint()
    rng = np.random.default_rng(0)
    edits = [(i, ord(str((int(chr(b)) + 1) % 10))) for i, b in enumerate(cpt) if chr(b).isdigit()]
    edits += [(int(i), cpt[i] ^ (1 << int(rng.integers(8)))) for i in rng.choice(len(cpt), 300, replace=False)]
    assert len(edits) > 400
    refused = "^checkpoint: (its SHA-256 does not match|the data is not|format version)"
    for i, value in edits:
        bad = cpt[:i] + bytes([value]) + cpt[i + 1:]
        with pytest.raises(RuntimeError, match=refused):
            make(checkpoint=bad)


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(iter=-1), "'iter' must be an integer in"),
    (lambda s: s.update(epoch_idx=1.5), "'epoch_idx' must be an integer"),
    (lambda s: s.update(iter_in_epoch=True), "'iter_in_epoch' must be an integer"),
    (lambda s: s.update(iterator_data=None), "'iterator_data' must be a string"),
    (lambda s: s["operators"].pop(), "one \\[name, state\\] pair per operator"),
    (lambda s: s["pipeline"].update(batch_size=0), "the batch size must be an integer in \\[1,"),
    (lambda s: s["operators"][0][1]["samples"]["read"].update(pos=13), "the read position must be .* \\[0, 13\\)"),
    (lambda s: s["operators"][0][1]["samples"]["read"].update(shard=1), "shard read must be .* \\[0, 1\\)"),
    (lambda s: s["operators"][0][1]["samples"]["read"].update(epoch=0), "the read epoch"),
    (lambda s: s["operators"][0][1]["samples"]["buffer"].__setitem__(0, 99), "a buffered sample must be"),
    (lambda s: s["operators"][0][1]["samples"]["buffer"].pop(), "holds 4 samples, this reader's holds 5"),
    (lambda s: s["operators"][0][1]["samples"].update(rng=0), "the shuffle generator's state"),
    (lambda s: s["operators"][0][1]["samples"].update(last=-2), "the last sample"),
    (lambda s: s["operators"][0][1]["samples"]["passes"][0].__setitem__(1, 10 ** 12), "do not span"),
    (lambda s: s["operators"][0][1]["samples"]["buffer"].__setitem__(
        1, s["operators"][0][1]["samples"]["buffer"][0]), "holds a sample twice"),
    (lambda s: s["operators"][0][1].update(samples=[]), "the saved state of readers.file \\('R'\\) is invalid"),
    (lambda s: s["operators"][0][1].update(num_shards=0), "made for shard 0 of 0, this reader is shard 0 of 1"),
])
def test_out_of_range_values_are_refused_naming_them(label_files, edit, message):
    make = _shuffled_reader_pipeline(label_files)
    pipe = make()
    _drive(pipe, 2)
    bad = _resigned(pipe.checkpoint(), edit)
    with pytest.raises(RuntimeError, match=message):
        make(checkpoint=bad).build()


def test_a_checkpoint_restores_only_into_its_batch_size(label_files):
    pipe = _shuffled_reader_pipeline(label_files, batch_size=4)()
    _drive(pipe, 2)
    cpt = pipe.checkpoint()
    with pytest.raises(RuntimeError, match="made of a pipeline with batch_size=4, this pipeline has batch_size=3"):
        _shuffled_reader_pipeline(label_files, batch_size=3)(checkpoint=cpt).build()


def test_a_checkpoint_restores_only_over_its_dataset(tmp_path, label_files):
    pipe = _shuffled_reader_pipeline(label_files)()
    _drive(pipe, 2)
    cpt = pipe.checkpoint()
    with pytest.raises(RuntimeError, match="made over 13 samples, the reader now finds 12"):
        _shuffled_reader_pipeline(label_files[:12])(checkpoint=cpt).build()
    renamed = label_files[:12] + [str(tmp_path / "other.jpg")]
    (tmp_path / "other.jpg").write_bytes(b"\x0c")
    with pytest.raises(RuntimeError, match="another dataset of 13 samples"):
        _shuffled_reader_pipeline(renamed)(checkpoint=cpt).build()
    with pytest.raises(RuntimeError, match="another dataset of 13 samples"):
        _shuffled_reader_pipeline(label_files[::-1])(checkpoint=cpt).build()


def test_a_dataset_moved_elsewhere_still_restores(tmp_path, label_files):
    """The dataset's identity is its samples' names, not where they lie."""
    moved = []
    for path in label_files:
        target = tmp_path / os.path.basename(path)
        target.write_bytes(open(path, "rb").read())
        moved.append(str(target))
    make = _shuffled_reader_pipeline(label_files)
    reference = _drive(make(), 9)
    pipe = make()
    _drive(pipe, 4)
    _same(_drive(_shuffled_reader_pipeline(moved)(checkpoint=pipe.checkpoint()), 5), reference[4:])


def test_a_checkpoint_restores_only_into_the_same_wiring():
    def graph(swap):
        def g():
            a, b = fn.random.uniform(range=(0, 1), shape=(1,)), fn.random.uniform(range=(5, 6), shape=(1,))
            return fn.cat(*((b, a) if swap else (a, b)))
        return g
    pipe = _maker(graph(False))()
    cpt = pipe.checkpoint()
    with pytest.raises(RuntimeError, match="cat \\('.*'\\) takes other inputs"):
        _maker(graph(True))(checkpoint=cpt).build()


def test_a_checkpoint_of_an_older_format_is_refused():
    pipe = _maker(lambda: fn.random.uniform(range=(0, 1)))()
    old = json.loads(pipe.checkpoint())
    old["version"] = 1
    with pytest.raises(RuntimeError, match="format version 1 is not supported"):
        _maker(lambda: fn.random.uniform(range=(0, 1)))(checkpoint=json.dumps(old).encode())
