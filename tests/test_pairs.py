"""Two iterations through the GPU stages as one (penstock._pairs), on the host emulation of the
device (tests/_cuda_on_host.py): the batches a framework iterator takes are the CPU pipeline's, each
iteration's random draws its own; a failure stays the failing sample's iteration's; pairs are made
only where every GPU operator computes each sample of its own and the iterations are small."""
import numpy as np
import pytest
from PIL import Image

from penstock import _pairs, fn, pipeline_def
from penstock._executor import Executor
from penstock._operator import Operator, Workspace
from penstock.tensors import TensorListCPU

from _cuda_on_host import HostDevice, use_host_device
from _util import write_smooth_jpegs
from test_gpu_host_side import (STD, _all_to_the_gpu, _samples, _train_pipeline, _with_host_codec, kernels,  # noqa: F401
                                photos)


@pytest.fixture
def pairs_made(monkeypatch):
    """The pairs the executors make, as (first, second) iteration indices."""
    made = []
    paired = Executor._paired

    def counting(self, first, second):
        pair = paired(self, first, second)
        if pair is not None:
            made.append((first.index, second.index))
        return pair
    monkeypatch.setattr(Executor, "_paired", counting)
    return made


def _as_iterators_take(pipe, batches: int) -> list:
    """Batches taken as the framework iterators take them (schedule_run, share_outputs,
    release_outputs): images and labels as numpy samples."""
    got = []
    pipe.schedule_run()
    for _ in range(batches):
        images, labels = pipe.share_outputs()
        got.append(([s.copy() for s in _samples(images)], [s.tolist() for s in _samples(labels)]))
        pipe.release_outputs()
        pipe.schedule_run()
    return got


def test_pairs_of_iterations_give_the_cpu_pipelines_batches(monkeypatch, kernels, photos, pairs_made):
    """Across epochs, each batch has its own reader samples and random windows and mirrors."""
    use_host_device(monkeypatch, HostDevice(kernels))
    gpu = _train_pipeline(photos, 0)
    got = _as_iterators_take(gpu, 8)
    assert len(pairs_made) >= 2 and all(second == first + 1 for first, second in pairs_made)
    assert gpu._executor._gates[gpu._executor._first_gpu]._value <= 4  # (twice the depth's slots)
    cpu = _train_pipeline(photos, None)
    for images, labels in got:
        cpu_images, cpu_labels = cpu.run()
        assert labels == [s.tolist() for s in _samples(cpu_labels)]
        for image, want in zip(images, _samples(cpu_images)):
            np.testing.assert_allclose(image, want, atol=1.01 / min(STD))


def test_pairs_are_off_when_asked_and_a_bad_setting_names_the_variable(monkeypatch, kernels, photos, pairs_made):
    use_host_device(monkeypatch, HostDevice(kernels))
    monkeypatch.setenv("PENSTOCK_GPU_PAIRS", "off")
    pipe = _train_pipeline(photos, 0)
    _as_iterators_take(pipe, 5)
    assert not pairs_made and not pipe._executor._pairs and len(pipe._pending) == 2
    monkeypatch.setenv("PENSTOCK_GPU_PAIRS", "2")
    with pytest.raises(ValueError, match="PENSTOCK_GPU_PAIRS='2'"):
        _train_pipeline(photos, 0)


def test_large_iterations_go_alone_and_keep_the_prefetch_depth(monkeypatch, kernels, photos, pairs_made):
    """Beyond PAIR_HOST_BYTES a pair would hold twice the device memory for a batch whose Python is a
    small share of its time: the iterations run one at a time, two on the way."""
    use_host_device(monkeypatch, HostDevice(kernels))
    monkeypatch.setattr(_pairs, "PAIR_HOST_BYTES", 4096)
    pipe = _train_pipeline(photos, 0)
    _as_iterators_take(pipe, 5)
    assert pipe._executor._pairs and not pairs_made and len(pipe._pending) == 2


def test_a_gpu_operator_without_samples_of_its_own_keeps_the_iterations_apart(monkeypatch, kernels, photos):
    """So does a mixed decoder whose batch is the pipeline's output: that batch is completed by the
    consumer, where a failure could not be told apart by iteration."""
    use_host_device(monkeypatch, HostDevice(kernels))
    assert not _all_to_the_gpu(photos, 4)._executor._pairs

    @pipeline_def(batch_size=4, num_threads=1, device_id=0, seed=3)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=photos)
        images = fn.resize(fn.decoders.image(jpegs, device="mixed"), resize_x=8, resize_y=8)
        return fn.flip(images, horizontal=1), labels.gpu()
    p = pipe()
    p.build()
    assert p._executor._first_gpu >= 0 and not p._executor._pairs


def test_a_pair_that_fails_runs_again_one_iteration_at_a_time(monkeypatch, kernels, tmp_path, pairs_made):
    """A damaged file in a pair's second iteration is that iteration's error, naming the file; the
    first iteration's batch comes as it would alone, and so does the next pair's."""
    from test_image_decode_mixed import _damaged_copy
    _with_host_codec(monkeypatch, kernels, 1 / 2e9)
    root = write_smooth_jpegs(tmp_path, 3, lambda i, c: (64, 96 + 8 * i))  # 0/0..0/2, 1/0..1/2
    bad = tmp_path / "1" / "2.jpg"
    with Image.open(bad) as im:
        noisy = np.asarray(im).astype(int) // 2 + np.random.default_rng(0).integers(0, 120, (64, 112, 3))
    Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(bad, quality=90)
    bad.write_bytes(_damaged_copy(np.frombuffer(bad.read_bytes(), np.uint8)).tobytes())
    recovered = []
    recover = Executor._recover
    monkeypatch.setattr(Executor, "_recover", lambda self, pair: (recovered.append(pair.parts), recover(self, pair)))

    @pipeline_def(batch_size=2, num_threads=2, device_id=0, seed=3)
    def resized():  # iterations 0: 0/0 0/1, 1: 0/2 1/0, 2: 1/1 1/2 (damaged), 3: 0/0 0/1, ...
        jpegs, _ = fn.readers.file(file_root=root)
        return fn.resize(fn.decoders.image(jpegs, device="mixed", hw_decoder_load=0.9), resize_x=48, resize_y=32)
    pipe = resized()
    pipe.schedule_run()
    names = []
    for k in range(5):
        if k == 2:
            with pytest.raises(RuntimeError, match="Corrupt JPEG data") as info:
                pipe.share_outputs()
            assert "2.jpg" in str(info.value) and "1" in str(info.value)
        else:
            (images,) = pipe.share_outputs()
            assert [tuple(s.shape) for s in _samples(images)] == [(32, 48, 3)] * 2
            names.append([images.source_info(i).split("/")[-2:] for i in range(2)])
        pipe.release_outputs()
        pipe.schedule_run()
    assert (2, 3) in pairs_made and recovered[0] == ((2, 0, 2), (3, 0, 2))  # (and 5: 1/2.jpg again)
    assert names[2] == [["0", "0.jpg"], ["0", "1.jpg"]]


def test_values_merge_and_split_into_views_of_one_buffer():
    from penstock import _engine
    a = TensorListCPU([np.arange(6, dtype=np.int16).reshape(2, 3), np.arange(3, dtype=np.int16).reshape(1, 3)])
    b = TensorListCPU([np.full((4, 3), 9, np.int16)])
    a._source_info, b._source_info = ["a0", "a1"], ["b0"]
    assert _pairs.mergeable({"x": a}, {"x": b})
    assert not _pairs.mergeable({"x": a}, {"x": TensorListCPU([np.zeros(3, np.int16)])})  # another rank
    (merged,) = _pairs.merged({"x": a}, {"x": b}, _engine.ThreadPool(2)).values()
    assert merged.shape() == [(2, 3), (1, 3), (4, 3)] and merged._source_info == ["a0", "a1", "b0"]
    first, second = _pairs.split(merged, [2, 1])
    assert [s.tolist() for s in _samples(first)] == [[[0, 1, 2], [3, 4, 5]], [[0, 1, 2]]]
    assert [s.tolist() for s in _samples(second)] == [np.full((4, 3), 9).tolist()]
    assert second._is_packed_cached() and np.shares_memory(second._buf, merged._buf)
    assert second._source_info == ["b0"]


def test_a_pairs_random_draws_are_each_iterations_own():
    class Random(Operator):
        seed = 42
        label = "Random"

    op = Random.__new__(Random)
    ws = Workspace([], {}, 5, 7, 0, None, op=op, parts=((7, 0, 3), (8, 0, 2)))
    with pytest.raises(RuntimeError, match="random stream for each"):
        ws.rng  # noqa: B018
    (first, a, b), (second, c, d) = ws.rngs()
    assert (a, b, c, d) == (0, 3, 3, 5)
    assert first.random(3).tolist() == op.rng_for(7).random(3).tolist()
    assert second.random(2).tolist() == op.rng_for(8).random(2).tolist()
    alone = Workspace([], {}, 5, 7, 0, None, op=op)
    ((rng, start, end),) = alone.rngs()
    assert (start, end) == (0, 5) and rng.random(2).tolist() == op.rng_for(7).random(2).tolist()


def test_a_checkpoint_taken_between_pairs_resumes_with_the_same_batches(monkeypatch, kernels, photos, pairs_made):
    """Twice the prefetch depth on the way: the checkpoint is still the state after the batches the
    consumer took, and a pipeline resumed from it gives the batches that came next."""
    use_host_device(monkeypatch, HostDevice(kernels))

    def train(checkpoint=None):
        @pipeline_def(batch_size=5, num_threads=2, device_id=0, seed=17, enable_checkpointing=True,
                      checkpoint=checkpoint)
        def pipe():
            jpegs, labels = fn.readers.file(file_root=photos, random_shuffle=True, initial_fill=8, name="Reader")
            images = fn.decoders.image_random_crop(jpegs, device="mixed", random_area=[0.3, 1.0])
            return fn.resize(images, resize_x=16, resize_y=12), labels.gpu()
        p = pipe()
        p.build()
        return p

    first = train()
    _as_iterators_take(first, 5)
    checkpoint = first.checkpoint()
    went_on = _as_iterators_take(first, 4)
    assert pairs_made
    for (images, labels), (want_images, want_labels) in zip(_as_iterators_take(train(checkpoint), 4), went_on):
        assert labels == want_labels
        for image, want in zip(images, want_images):
            np.testing.assert_array_equal(image, want)
