"""The dynamic mode's own machinery: how calls are recorded and evaluated (through the pipeline's
executor, in groups, lazily or in the background), contexts, random state, readers as objects and
their states, memory, threads and data exchange. Values against DALI: differential/test_dynamic_mode.py;
every operator against pipelines: test_dynamic_operators.py."""
import io
import os
import sys
import threading
import weakref

import numpy as np
import pytest

import penstock.experimental.dynamic as ndd
from penstock import fn, pipeline_def
from penstock import types as penstock_types
from penstock.experimental.dynamic import _invocation

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import photo_like  # noqa: E402


def _images(n=2, seed=0):
    rng = np.random.default_rng(seed)
    return [photo_like(rng, 40 + 3 * i, 56 + 5 * i) for i in range(n)]


def _jpegs(n=3):
    from PIL import Image
    out = []
    for img in _images(n):
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


@pytest.fixture
def executors(monkeypatch):
    """Counts the executor iterations the dynamic mode runs, and the operators of each."""
    runs = []

    class Counting(_invocation.Executor):
        def __init__(self, stages, *args, **kwargs):
            runs.append([op.schema.fn_name for s in stages for op in s])
            super().__init__(stages, *args, **kwargs)

    monkeypatch.setattr(_invocation, "Executor", Counting)
    return runs


# ---- evaluation ---------------------------------------------------------------------------------
def test_deferred_calls_run_when_read_as_one_executor_iteration(executors):
    with ndd.EvalMode.deferred:
        b = ndd.batch(_images(), layout="HWC")
        out = ndd.resize(ndd.flip(ndd.cast(b, dtype=ndd.float32), horizontal=1), size=(8, 8)) * 2
        assert executors == []
        assert out.shape == [(8, 8, 3), (8, 8, 3)]
    assert executors == [["cast", "flip", "resize", "_arithmetic"]]


def test_reading_one_result_runs_only_what_it_needs(executors):
    with ndd.EvalMode.deferred:
        b = ndd.batch(_images(), layout="HWC")
        flipped = ndd.flip(b, horizontal=1)
        unrelated = ndd.cast(b, dtype=ndd.float32)
        flipped.evaluate()
        assert executors == [["flip"]]
        unrelated.evaluate()
    assert executors[1] == ["cast"]


def test_results_nobody_holds_are_not_computed(executors):
    with ndd.EvalMode.deferred:
        b = ndd.batch(_images(), layout="HWC")
        ndd.flip(b, horizontal=1)  # dropped at once
        kept = ndd.cast(b, dtype=ndd.float32)
        ndd.EvalContext.current().evaluate_all()
    assert executors == [["cast"]]
    assert kept.dtype == ndd.float32


def test_an_intermediate_read_later_is_not_recomputed(executors):
    with ndd.EvalMode.deferred:
        b = ndd.batch(_images(), layout="HWC")
        noisy = ndd.noise.gaussian(b, stddev=20.0)
        blurred = ndd.gaussian_blur(noisy, sigma=1.0)
        blurred.evaluate()
        first = [np.array(t) for t in noisy.tensors]
    assert len(executors) == 1  # the random operator ran once: the values read are the ones blurred
    again = ndd.gaussian_blur(noisy, sigma=1.0)
    for a, b in zip(again.tensors, blurred.tensors):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(noisy.tensors[0]), first[0])


def test_deferred_decode_feeding_a_downscale_decodes_smaller_like_a_pipeline():
    jpegs = _jpegs()

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        data = fn.external_source(source=lambda: jpegs)
        return fn.resize(fn.decoders.image(data), resize_shorter=12)

    expected = pipe().run()[0]
    with ndd.EvalMode.deferred:
        out = ndd.resize(ndd.decoders.image(ndd.batch(jpegs)), resize_shorter=12)
        decoded = ndd.decoders.image(ndd.batch(jpegs))
        kept = ndd.resize(decoded, resize_shorter=12)  # the decoded images are held: no smaller decoding
        for i in range(3):
            np.testing.assert_array_equal(np.asarray(out.tensors[i]), expected.at(i))  # the fused path
        assert decoded.shape[0] == (40, 56, 3)
        assert np.abs(np.asarray(kept.tensors[0]).astype(int) - expected.at(0).astype(int)).max() <= 16


def test_eager_calls_run_on_the_context_worker(monkeypatch):
    threads = []
    real = _invocation._run_group

    def spy(group):
        threads.append(threading.current_thread().name)
        return real(group)

    monkeypatch.setattr(_invocation, "_run_group", spy)
    b = ndd.batch(_images(), layout="HWC")
    out = ndd.flip(b, horizontal=1)
    inv = out._invocation
    inv._done.wait(10)
    assert threads and threads[0] == "penstock-dynamic"
    np.testing.assert_array_equal(np.asarray(out.tensors[0]), _images()[0][:, ::-1])


def test_sync_modes_evaluate_before_returning():
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.sync_full):
        with mode:
            out = ndd.flip(ndd.batch(_images(), layout="HWC"), horizontal=1)
            assert out._storage is not None


def test_errors_surface_where_the_result_is_read_and_only_there():
    img = ndd.tensor(np.zeros((4, 4, 3), np.uint8), layout="HWC")
    with ndd.EvalMode.deferred:
        bad = ndd.crop(img, crop=(8, 8), out_of_bounds_policy="error")
        good = ndd.flip(img, horizontal=1)
        downstream = bad + 1
        with pytest.raises(RuntimeError, match="crop"):
            downstream.evaluate()
        with pytest.raises(RuntimeError, match="crop"):
            bad.evaluate()
        assert good.shape == (4, 4, 3)


def test_argument_errors_are_raised_at_the_call_in_every_mode():
    img = ndd.tensor(np.zeros((4, 4, 3), np.uint8), layout="HWC")
    for mode in ndd.EvalMode:
        with mode:
            with pytest.raises(TypeError):
                ndd.flip(img, not_an_argument=1)
            with pytest.raises(ValueError):
                ndd.resize(img, size=3, device="not a device")


def test_inputs_that_are_views_of_caller_memory_are_read_at_the_call():
    a = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    with ndd.EvalMode.deferred:
        out = ndd.flip(ndd.as_tensor(a, layout="HWC"), horizontal=1)
        a[:] = 0  # the caller reuses its buffer before reading the result
        assert np.asarray(out).max() == 11


def test_leaving_a_context_evaluates_its_calls():
    ctx = ndd.EvalContext(num_threads=1)
    with ndd.EvalMode.deferred:
        with ctx:
            out = ndd.flip(ndd.batch(_images(), layout="HWC"), horizontal=1)
            assert out._storage is None and out._invocation.state == _invocation.PENDING
        assert out._invocation is None or out._invocation.state == _invocation.DONE


def test_a_context_is_active_in_one_thread_at_a_time():
    ctx = ndd.EvalContext(num_threads=1)
    errors = []
    with ctx:
        def other():
            try:
                with ctx:
                    pass
            except RuntimeError as e:
                errors.append(e)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert errors and "two threads" in str(errors[0])


def test_a_context_runs_its_cpu_operators_on_its_own_pool():
    ctx = ndd.EvalContext(num_threads=3)
    assert ctx.num_threads == 3 and ctx.thread_pool.num_threads == 3 and ctx.device_id is None
    assert ndd.EvalContext(thread_pool=ctx.thread_pool).thread_pool is ctx.thread_pool
    with pytest.raises(ValueError):
        ndd.EvalContext(num_threads=2, thread_pool=ctx.thread_pool)


def test_threads_calling_operators_at_once_each_get_their_own_results():
    images = _images(4)
    expected = [img[::-1] for img in images]
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(5):
                b = ndd.batch(images, layout="HWC")
                results[k] = [np.asarray(t) for t in ndd.flip(b, horizontal=0, vertical=1).tensors]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(4):
        for got, want in zip(results[k], expected):
            np.testing.assert_array_equal(got, want)


def test_evaluated_graphs_release_their_inputs():
    arr = ndd.batch(_images(), layout="HWC")
    storage = weakref.ref(arr._value())
    out = ndd.flip(ndd.cast(arr, dtype=ndd.float32), horizontal=1)
    out.evaluate()
    del arr
    assert storage() is None  # nothing of the evaluated graph holds the input batch


def test_intermediates_no_one_holds_are_freed():
    with ndd.EvalMode.deferred:
        inner = ndd.cast(ndd.batch(_images(), layout="HWC"), dtype=ndd.float32)
        inv = weakref.ref(inner._invocation)
        out = ndd.flip(inner, horizontal=1)
        del inner
        out.evaluate()
    assert inv() is None


# ---- random state ------------------------------------------------------------------------------
def test_seeded_calls_reproduce_and_threads_have_their_own_generator():
    def draws():
        return np.asarray(ndd.as_tensor(ndd.random.uniform(batch_size=4, range=(0, 1), shape=[3]))).tolist()

    ndd.random.set_seed(11)
    first = draws()
    ndd.random.set_seed(11)
    assert draws() == first
    other = []
    t = threading.Thread(target=lambda: (ndd.random.set_seed(11), other.append(draws())))
    t.start()
    t.join()
    assert other[0] == first
    rng = ndd.random.RNG(seed=3)
    a = np.asarray(ndd.random.normal(shape=[5], rng=rng))
    b = np.asarray(ndd.random.normal(shape=[5], rng=rng))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, np.asarray(ndd.random.normal(shape=[5], rng=ndd.random.RNG(seed=3))))


def test_random_operators_draw_what_the_pipeline_draws_for_the_same_seed():
    seed = ndd.random.draw_seed(ndd.random.RNG(seed=5))

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def pipe():
        return fn.random.uniform(range=(0, 1), shape=[4], seed=seed)

    expected = pipe().run()[0].as_array()
    got = ndd.random.uniform(batch_size=3, range=(0, 1), shape=[4], rng=ndd.random.RNG(seed=5))
    np.testing.assert_array_equal(np.asarray(ndd.as_tensor(got)), expected)


def test_rng_state_round_trips_and_rejects_garbage():
    rng = ndd.random.RNG(seed=99)
    rng()
    state = rng.get_state()
    nxt = rng()
    restored = ndd.random.RNG(state=state)
    assert restored() == nxt and repr(restored).startswith("RNG(state=")
    with pytest.raises(ValueError):
        ndd.random.RNG(state="not a state")
    with pytest.raises(ValueError):
        ndd.random.RNG(seed=1, state=state)


# ---- readers ------------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
        for i in range(4):
            (tmp_path / d / f"{i}.jpg").write_bytes(f"{d}{i}".encode())
    return str(tmp_path)


def _names(batch):
    return [bytes(np.asarray(t)).decode() for t in batch.tensors]


@pytest.mark.parametrize("shuffle", [False, True])
def test_file_reader_gives_the_pipeline_reader_s_batches(files, shuffle):
    @pipeline_def(batch_size=5, num_threads=2, device_id=None)
    def pipe():
        data, label = fn.readers.file(file_root=files, random_shuffle=shuffle, seed=4, name="R")
        return data, label

    p = pipe()
    expected = [[bytes(out.at(i)).decode() for i in range(5)] for out in (p.run()[0] for _ in range(6))]
    r = ndd.readers.File(file_root=files, random_shuffle=shuffle, seed=4)
    got = [_names(j) for _ in range(2) for j, _ in r.next_epoch(batch_size=5)]
    assert len(got) == 6 and got == expected  # 12 samples: 3 batches an epoch


def test_reader_state_resumes_exactly_mid_epoch_and_after_epochs(files):
    r = ndd.readers.File(file_root=files, random_shuffle=True, seed=2, enable_checkpointing=True)
    epoch = r.next_epoch(batch_size=5)
    next(epoch)
    state = r.get_state()
    following = [_names(j) for j, _ in epoch] + [_names(j) for j, _ in r.next_epoch(batch_size=5)]
    resumed = ndd.readers.File(file_root=files, random_shuffle=True, seed=2)
    resumed.set_state(str(state))
    assert [_names(j) for j, _ in resumed.next_epoch(batch_size=5)][:2] == following[:2]
    assert isinstance(state, ndd.ReaderState) and state == str(state)


def test_reader_state_is_refused_over_another_dataset(files, tmp_path_factory):
    r = ndd.readers.File(file_root=files, enable_checkpointing=True)
    next(r.next_epoch(batch_size=2))
    state = r.get_state()
    other = tmp_path_factory.mktemp("other")
    (other / "x").mkdir()
    for i in range(12):
        (other / "x" / f"{i}.jpg").write_bytes(b"x")
    fresh = ndd.readers.File(file_root=str(other))
    fresh.set_state(state)
    with pytest.raises(RuntimeError, match="another dataset"):
        next(fresh.next_epoch(batch_size=2))
    with pytest.raises(ValueError):
        ndd.readers.File(file_root=files).set_state("garbage")
    with pytest.raises(TypeError):
        ndd.readers.File(file_root=files).set_state(3)


def test_reader_sample_by_sample_and_direct_calls(files):
    r = ndd.readers.File(file_root=files)
    samples = list(r.next_epoch())
    assert len(samples) == 12 and all(isinstance(s[0], ndd.Tensor) for s in samples)
    assert [bytes(np.asarray(s[0])).decode() for s in samples[:2]] == ["a0", "a1"]
    calls = ndd.readers.File(file_root=files, max_batch_size=4)
    data, labels = calls(batch_size=4)
    assert isinstance(data, ndd.Batch) and data.batch_size == 4 and labels.shape == [(1,)] * 4
    # a call without batch_size reads a sample, as DALI's
    assert isinstance(ndd.readers.File(file_root=files, max_batch_size=4)()[0], ndd.Tensor)


def test_numpy_reader_matches_the_pipeline(tmp_path):
    for i in range(5):
        np.save(tmp_path / f"{i}.npy", np.full((2, i + 1), i, np.int16))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.readers.numpy(file_root=str(tmp_path), random_shuffle=True, seed=1)

    p = pipe()
    expected = [[out.at(i).tolist() for i in range(2)] for out in (p.run()[0] for _ in range(3))]
    r = ndd.readers.Numpy(file_root=str(tmp_path), random_shuffle=True, seed=1)
    got = [[np.asarray(t).tolist() for t in out[0].tensors] for out in r.next_epoch(batch_size=2)]
    assert got == expected


def test_tfrecord_reader_gives_a_dict_by_feature(tmp_path):
    import penstock.tfrecord as tfrec
    from make_sample_data import tf_example, tfrecord_record
    path, index = tmp_path / "d.tfrecord", tmp_path / "d.idx"
    with open(path, "wb") as f:
        for i in range(3):
            f.write(tfrecord_record(tf_example({"label": [i], "v": [0.5] * (i + 1)})))
    tfrec.make_index(str(path), str(index))
    r = ndd.readers.TFRecord(path=str(path), index_path=str(index),
                             features={"label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
                                       "v": tfrec.VarLenFeature(tfrec.float32, 0.0)})
    out = next(r.next_epoch(batch_size=3))
    assert set(out) == {"label", "v"}
    assert np.asarray(ndd.as_tensor(out["label"])).ravel().tolist() == [0, 1, 2]
    assert out["v"].shape == [(1,), (2,), (3,)]


def test_nemo_asr_reader_matches_the_pipeline_and_resumes(tmp_path):
    from _audio_data import files as audio_files
    entries = []
    for i, container in enumerate(["wav16", "flac16", "wav16", "wavfloat", "flac24"]):
        path = tmp_path / f"{i}.{container}"
        audio_files(container, 1, seed=i)[0].tofile(path)
        entries.append(f'{{"audio_filepath": "{path}", "duration": 10.0, "text": "t{i}"}}')
    manifest = tmp_path / "manifest.json"
    manifest.write_text("\n".join(entries) + "\n")
    kwargs = dict(manifest_filepaths=[str(manifest)], read_idxs=True, read_text=False, random_shuffle=True, seed=5)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return tuple(fn.readers.nemo_asr(**kwargs, dtype=penstock_types.INT16))

    p = pipe()
    expected = [[(out[2].at(i).tolist(), out[0].at(i).tolist()) for i in range(2)] for out in (p.run() for _ in range(6))]
    r = ndd.readers.NemoAsr(**kwargs, dtype=ndd.int16, enable_checkpointing=True)
    got, state = [], None
    for epoch in range(2):
        for audio, _, idx in r.next_epoch(batch_size=2):
            got.append([(np.asarray(i).tolist(), np.asarray(a).tolist()) for a, i in zip(audio.tensors, idx.tensors)])
            if len(got) == 2:
                state = r.get_state()
    assert got == expected  # 5 samples: 3 batches an epoch
    resumed = ndd.readers.NemoAsr(**kwargs, dtype=ndd.int16)
    resumed.set_state(state)
    # the stream goes on from the saved batch; the resumed reader's epochs count from there (as DALI's)
    assert [[np.asarray(i).tolist() for i in idx.tensors] for _, _, idx in resumed.next_epoch(batch_size=2)] == \
        [[i for i, _ in b] for b in got[2:5]]


def test_checkpoint_resumes_a_reader_switched_to_checkpointing_after_get_metadata(files, tmp_path):
    reader = ndd.readers.File(file_root=files, random_shuffle=True, seed=6)
    assert reader.get_metadata()["epoch_size"] == 12  # builds the reader's kernel before it is registered
    rng = ndd.random.RNG(seed=3)
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(reader, "reader")
    ckpt.register(rng, "rng")
    epoch = reader.next_epoch(batch_size=4)
    next(epoch)
    rng()
    ckpt.collect()
    path = ckpt.save(str(tmp_path / "run.json"))
    assert ckpt.save(str(tmp_path / "run.json")) == path  # without {seq} the file is replaced
    expected = [_names(j) for j, _ in epoch], [rng() for _ in range(3)]
    resumed = ndd.checkpoint.Checkpoint()
    resumed.load(path)
    reader2, rng2 = ndd.readers.File(file_root=files, random_shuffle=True, seed=6), ndd.random.RNG()
    resumed.register(reader2, "reader")
    resumed.register(rng2, "rng")
    assert ([_names(j) for j, _ in reader2.next_epoch(batch_size=4)][:2], [rng2() for _ in range(3)]) == expected
    with pytest.raises(ValueError, match="one field"):
        ckpt.save(str(tmp_path / "{epoch}.json"))


def test_parts_of_dali_s_dynamic_mode_not_offered_say_so():
    for name in ("ExternalSource", "capture", "pytorch"):
        with pytest.raises(NotImplementedError, match=f"ndd.{name}"):
            getattr(ndd, name)
    with pytest.raises(AttributeError):
        ndd.no_such_thing
    with pytest.raises(NotImplementedError, match="capture"):
        ndd.readers.File(file_root=".").next_epoch(batch_size=2, capture=True)


# ---- data exchange ------------------------------------------------------------------------------
def test_torch_tensors_in_and_out_share_memory():
    torch = pytest.importorskip("torch")
    src = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    t = ndd.as_tensor(src)
    assert np.shares_memory(np.asarray(t), src.numpy())
    out = t.torch()
    assert out.data_ptr() == src.data_ptr() and torch.equal(out, src)
    b = ndd.batch([np.ones((2, 2), np.float32), np.ones((3, 1), np.float32)])
    padded = b.torch(pad=True)
    assert padded.shape == (2, 3, 2) and padded.sum() == 7
    with pytest.raises(ValueError):
        b.torch()
    flipped = ndd.flip(torch.zeros(4, 5, 3, dtype=torch.uint8), horizontal=1)
    assert isinstance(flipped, ndd.Tensor) and flipped.shape == (4, 5, 3)


def test_dtype_conversions_follow_the_cast_operator():
    got = np.asarray(ndd.tensor(np.array([1.5, 2.5, -0.5, 300.0, -7.0]), dtype=ndd.uint8)).tolist()
    assert got == [2, 3, 0, 255, 0]  # round half away from zero, saturated, as fn.cast
    assert str(ndd.tensor([1, 2**40]).dtype) == "i64" and str(ndd.tensor([1, 2]).dtype) == "i32"
    with pytest.raises(TypeError):
        ndd.tensor("text")


def test_gpu_calls_fail_at_the_call_without_cuda():
    from penstock import _cuda
    if _cuda.available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="CUDA|GPU"):
        ndd.flip(ndd.tensor(np.zeros((2, 2, 3), np.uint8), layout="HWC"), device="gpu")
    with pytest.raises(RuntimeError):
        ndd.tensor([1]).gpu()
