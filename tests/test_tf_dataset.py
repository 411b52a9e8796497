"""penstock.plugin.tf: DALIDataset, DALIDatasetWithInputs, DALIIterator (api.md §18).

TensorFlow takes seconds to import: every TF test lives in this module, and pipelines/data are
shared through module-scoped fixtures.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from _util import installed_or_skip  # noqa: E402

tf = installed_or_skip("tensorflow")

from penstock import fn, pipeline_def
import penstock.plugin.tf as dali_tf
from penstock_tensorflow import _device, _source
from penstock_tensorflow._outputs import match_shape
from penstock_tensorflow._placement import HOST, TO_HOST

N_FILES, FILE_BYTES, BATCH = 10, 8, 2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Ten files of 8 bytes; file i holds the byte i (so its content tells which file was read)."""
    root = tmp_path_factory.mktemp("tf_files")
    paths = []
    for i in range(N_FILES):
        path = os.path.join(root, f"f{i}.bin")
        with open(path, "wb") as f:
            f.write(bytes([i]) * FILE_BYTES)
        paths.append(path)
    return paths


def reader_pipe(files, shard_id=0, num_shards=1, batch_size=BATCH, seed=5):
    """(file bytes uint8 [8], label int32 [1], noise float32 [2]) per sample."""
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=seed)
    def pipe():
        data, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, name="Reader")
        return data, label, fn.random.uniform(range=(0, 1), shape=[2])
    return pipe()


SPECS = (tf.TensorSpec((BATCH, FILE_BYTES), tf.uint8), tf.TensorSpec((BATCH, 1), tf.int32),
         tf.TensorSpec((BATCH, 2), tf.float32))


def make_dataset(pipe, batch_size=BATCH, **kw):
    kw.setdefault("output_dtypes", tuple(s.dtype for s in SPECS))
    return dali_tf.DALIDataset(pipe, batch_size=batch_size, num_threads=2, device_id=None, **kw)


@pytest.fixture(scope="module")
def dataset(files):
    return make_dataset(reader_pipe(files), output_shapes=tuple(s.shape for s in SPECS))


def pipeline_batches(pipe, n):
    return [tuple(tl.as_array() for tl in pipe.run()) for _ in range(n)]


def as_numpy(element):
    return tuple(t.numpy() for t in element)


def assert_same_batches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


# ---- the dataset ----------------------------------------------------------------------------
def test_is_a_dataset_with_the_declared_element_spec(dataset):
    assert isinstance(dataset, tf.data.Dataset)
    assert dataset.element_spec == SPECS


def test_same_batches_as_the_pipeline(dataset, files):
    got = [as_numpy(e) for e in dataset.take(7)]
    assert_same_batches(got, pipeline_batches(reader_pipe(files), 7))
    # the reader's files in order, wrapping around: 0 1 | 2 3 | ... | 8 9 | 0 1 | ...
    labels = np.concatenate([g[1][:, 0] for g in got])
    np.testing.assert_array_equal(labels, np.arange(14) % N_FILES)
    np.testing.assert_array_equal(got[0][0], np.repeat(np.array([[0], [1]], np.uint8), FILE_BYTES, axis=1))


def test_every_iterator_restarts_the_pipeline(dataset):
    """Each pass instantiates the serialized pipeline afresh: with a seed, passes are identical."""
    first = [as_numpy(e) for e in dataset.take(3)]
    assert_same_batches([as_numpy(e) for e in dataset.take(3)], first)
    # take + repeat: epochs of the same three batches
    assert_same_batches([as_numpy(e) for e in dataset.take(3).repeat(2)], first + first)


def test_composes_with_map_prefetch_shard_and_options(dataset):
    first = [as_numpy(e) for e in dataset.take(4)]
    options = tf.data.Options()
    options.deterministic = True
    mapped = dataset.map(lambda d, l, r: (tf.cast(d, tf.int32) * 2, l + 100)).prefetch(2).with_options(options)
    for (d, l), want in zip(mapped.take(4), first):
        np.testing.assert_array_equal(d.numpy(), want[0].astype(np.int32) * 2)
        np.testing.assert_array_equal(l.numpy(), want[1] + 100)
    sharded = [as_numpy(e) for e in dataset.shard(2, 1).take(2)]  # batches 1 and 3
    assert_same_batches(sharded, [first[1], first[3]])


def test_inside_tf_function(dataset, files):
    want = sum(float(b[2].sum()) for b in pipeline_batches(reader_pipe(files), 5))

    @tf.function
    def total(ds):
        s = tf.constant(0.0)
        for _, _, noise in ds:
            s += tf.reduce_sum(noise)
        return s

    assert float(total(dataset.take(5))) == pytest.approx(want, rel=1e-5)


def test_sharding(files):
    """Each shard's dataset starts at its shard of the reader ([0,5) and [5,10) for 2 shards)."""
    for shard, start in ((0, 0), (1, 5)):
        ds = make_dataset(reader_pipe(files, shard_id=shard, num_shards=2), output_shapes=(None, (BATCH,), None))
        labels = np.concatenate([l.numpy() for _, l, _ in ds.take(2)])
        np.testing.assert_array_equal(labels, np.arange(start, start + 4))


def test_large_batches_reach_tensorflow_without_a_copy(monkeypatch):
    """Batches from the engine's buffer pool (1 MiB and more, 64-byte aligned) are the memory of the
    tensors TensorFlow yields; smaller ones are copied once (TensorFlow wants 64-byte alignment)."""
    seen = []
    original = _source.batch_arrays

    def recording(*args):
        arrays = original(*args)
        seen.append([a.ctypes.data for a in arrays])
        return arrays

    monkeypatch.setattr(_source, "batch_arrays", recording)

    class Capsule:  # np.from_dlpack wants the protocol; TensorFlow gives a bare capsule
        def __init__(self, tensor):
            self.capsule = tf.experimental.dlpack.to_dlpack(tensor)

        def __dlpack__(self, **kw):
            return self.capsule

        def __dlpack_device__(self):
            return (1, 0)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=2)
    def pipe():
        return fn.random.uniform(range=(0, 1), shape=[512, 512])  # 2 MiB batches

    ds = dali_tf.DALIDataset(pipe(), output_dtypes=tf.float32, batch_size=2, num_threads=1, device_id=None)
    tensors = list(ds.take(3))
    assert [np.from_dlpack(Capsule(t)).ctypes.data for t in tensors] == [s[0] for s in seen[:3]]


# ---- declared shapes and types ----------------------------------------------------------------
def test_output_signature_form(files):
    ds = dali_tf.DALIDataset(reader_pipe(files), output_signature=SPECS, batch_size=BATCH, num_threads=2,
                             device_id=None)
    assert ds.element_spec == SPECS
    assert_same_batches([as_numpy(e) for e in ds.take(2)], pipeline_batches(reader_pipe(files), 2))


def test_unknown_shapes_by_default_and_single_dtype(files):
    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
    def pipe():
        return fn.random.uniform(range=(0, 1), shape=[4])

    # a single dtype (not in a tuple): the elements are tensors, as in DALI; a 1-tuple of dtypes: 1-tuples
    ds = dali_tf.DALIDataset(pipe(), output_dtypes=tf.float32, batch_size=3, num_threads=1, device_id=None)
    assert ds.element_spec == tf.TensorSpec(None, tf.float32)
    x = next(iter(ds))
    np.testing.assert_array_equal(x.numpy(), pipe().run()[0].as_array())
    ds = dali_tf.DALIDataset(pipe(), output_dtypes=(tf.float32,), batch_size=3, num_threads=1, device_id=None)
    assert ds.element_spec == (tf.TensorSpec(None, tf.float32),)
    (x,) = next(iter(ds))
    np.testing.assert_array_equal(x.numpy(), pipe().run()[0].as_array())


def test_unit_dimensions_are_squeezed_to_the_declared_shape(files):
    ds = make_dataset(reader_pipe(files), output_shapes=((BATCH, FILE_BYTES), (BATCH,), (None, 2)))
    _, labels, _ = next(iter(ds))
    assert labels.shape == (BATCH,)
    np.testing.assert_array_equal(labels.numpy(), [0, 1])
    # batch_size 1: the batch dimension may be left out
    ds1 = make_dataset(reader_pipe(files, batch_size=1), batch_size=1, output_shapes=((FILE_BYTES,), (), (2,)))
    data, label, _ = next(iter(ds1))
    assert data.shape == (FILE_BYTES,) and label.shape == () and int(label) == 0


def test_match_shape_rules():
    s = tf.TensorShape
    assert match_shape(s([4, None]), (4, 7), 4, 0) == (4, 7)
    assert match_shape(s([4]), (4, 1), 4, 0) == (4,)
    assert match_shape(s([3, 5]), (1, 3, 1, 5), 1, 0) == (3, 5)
    assert match_shape(s([]), (1, 1), 1, 0) == ()
    assert match_shape(s([1]), (1, 1, 1), 1, 0) == (1,)
    with pytest.raises(ValueError, match="output `2`.*not compatible"):
        match_shape(s([4, 8]), (4, 9), 4, 2)
    assert match_shape(s([None, 1]), (1, 1, 3, 1), 1, 0) == (3, 1)
    with pytest.raises(ValueError, match=r"output `0`.*exactly one way \(3 found\)"):
        match_shape(s([None]), (1, 1, 1), 1, 0)
    with pytest.raises(ValueError, match="batch_size=4"):
        match_shape(s([5]), (4, 1), 4, 0)


def test_mismatched_shape_or_type_names_the_output(files):
    bad_shape = make_dataset(reader_pipe(files), output_shapes=(None, (BATCH, 3), None))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"output `1`.*output_shapes\[1\]"):
        next(iter(bad_shape))
    bad_type = make_dataset(reader_pipe(files), output_dtypes=(tf.uint8, tf.int32, tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"output `2`.*float64.*float32"):
        next(iter(bad_type))


def test_non_uniform_batch_is_an_error(tmp_path):
    paths = []
    for i, n in enumerate((3, 5)):
        paths.append(str(tmp_path / f"v{i}"))
        open(paths[-1], "wb").write(b"x" * n)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.readers.file(files=paths)[0]

    ds = dali_tf.DALIDataset(pipe(), output_dtypes=tf.uint8, batch_size=2, num_threads=1, device_id=None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="output at index `0` is not uniform"):
        next(iter(ds))


def test_argument_checks(files):
    pipe = reader_pipe(files)
    with pytest.raises(TypeError, match="output_dtypes"):
        make_dataset(pipe, output_dtypes=[tf.uint8, tf.int32, tf.float32])
    with pytest.raises(TypeError, match="output_dtypes"):
        dali_tf.DALIDataset(pipe, batch_size=BATCH, device_id=None)
    with pytest.raises(ValueError, match="one shape per output"):
        make_dataset(pipe, output_shapes=((BATCH, 8), (BATCH, 1)))
    with pytest.raises(ValueError, match="3 outputs but 2"):
        make_dataset(pipe, output_dtypes=(tf.uint8, tf.int32))
    with pytest.raises(ValueError, match="output_shapes"):
        make_dataset(pipe, output_shapes=(None, None, None), shapes=[None, None, None])
    with pytest.warns(Warning, match="`dtypes` is deprecated"):
        ds = make_dataset(pipe, output_dtypes=None, dtypes=[tf.uint8, tf.int32, tf.float32])
    assert [s.dtype for s in ds.element_spec] == [tf.uint8, tf.int32, tf.float32]
    with pytest.raises(TypeError, match="input_datasets"):
        make_dataset(pipe, input_datasets={})


@pytest.fixture
def no_tf_gpu(monkeypatch):
    """TensorFlow without a GPU (tensorflow-cpu, as here), on any machine."""
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda device_type=None: [])


def test_gpu_scope_without_a_tensorflow_gpu_is_soft_placed_on_the_cpu(files, no_tf_gpu):
    # TensorFlow without a GPU places tf.device('/GPU:0') work on the CPU, as it would DALI's op:
    # a CPU pipeline matches it.
    with tf.device("/GPU:0"):
        ds = make_dataset(reader_pipe(files))
    assert ds._device_placement.device == "/CPU:0"
    assert_same_batches([as_numpy(next(iter(ds)))], pipeline_batches(reader_pipe(files), 1))


def gpu_output_pipe():
    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        return fn.random.uniform(range=(0, 1), shape=[2]).gpu(), fn.random.uniform(range=(0, 1), shape=[3])
    return pipe()


def test_gpu_outputs_without_a_tensorflow_gpu_fail_at_creation(no_tf_gpu):
    with pytest.raises(RuntimeError, match="output 0 of the pipeline is on the GPU, but TensorFlow sees no GPU"):
        dali_tf.DALIDataset(gpu_output_pipe(), output_dtypes=(tf.float32, tf.float32), batch_size=2, device_id=0)


def test_gpu_outputs_of_a_dataset_on_the_cpu_are_a_device_mismatch(no_tf_gpu):
    kw = dict(output_dtypes=(tf.float32, tf.float32), batch_size=2, device_id=0)
    for device in ("/CPU:0", "/GPU:0"):  # the GPU scope falls back to the CPU here
        with tf.device(device):
            with pytest.raises(tf.errors.InternalError, match="TF device and DALI device mismatch. "
                                                              "TF device: CPU, DALI device: GPU for output 0"):
                dali_tf.DALIDataset(gpu_output_pipe(), **kw)
            with pytest.warns(UserWarning, match=r"DALI device: GPU for output 0.*copied to the host"):
                ds = dali_tf.DALIDataset(gpu_output_pipe(), fail_on_device_mismatch=False, **kw)
        assert ds._device_placement.transfers == (TO_HOST, HOST)
    # the legacy op interface goes through the same check
    with tf.device("/CPU:0"), pytest.raises(tf.errors.InternalError, match="for output 0"):
        dali_tf.DALIIteratorWrapper(pipeline=gpu_output_pipe(), shapes=[(2, 2), (2, 3)],
                                    dtypes=[tf.float32, tf.float32], device_id=0)


def test_device_dataset_runs_the_pipeline_behind_a_py_function(files):
    """The GPU dataset's machinery (a generator dataset whose iterators each run a fresh pipeline
    through tf.py_function, _device), exercised on the CPU with host outputs."""
    pipe = reader_pipe(files)
    spec = _source.PipelineSpec.of(pipe, {"batch_size": BATCH, "num_threads": 2, "device_id": None,
                                         "exec_dynamic": False}, with_sources=False)
    dtypes, shapes = [s.dtype for s in SPECS], [s.shape for s in SPECS]
    with tf.device("/CPU:0"):
        ds = _device.device_dataset(lambda: _source.run(spec, [], dtypes, shapes, BATCH, 2, on_gpu=True),
                                    SPECS, "/CPU:0")
    assert ds.element_spec == SPECS
    want = pipeline_batches(reader_pipe(files), 3)
    assert_same_batches([as_numpy(x) for x in ds.take(3)], want)
    assert_same_batches([as_numpy(x) for x in ds.take(2).repeat(2)], want[:2] * 2)  # each iterator restarts

    @tf.function
    def total(dataset):
        return dataset.take(3).reduce(tf.constant(0, tf.int32), lambda acc, x: acc + tf.reduce_sum(x[1]))

    assert int(total(ds)) == sum(int(b[1].sum()) for b in want)
    assert not _device._live  # every iterator's generator (and pipeline) was finalized


class HostBackedGpuBatch:
    """The part of TensorListGPU that _device.gpu_tensor uses, over host memory (TensorFlow's
    from_dlpack shares CPU memory the same way), recording the order of the calls."""

    def __init__(self, array):
        self.array, self.calls = array, []

    def _wait_on_host(self):
        self.calls.append("wait for the batch's event")

    def as_reshaped_tensor(self, shape):
        self.calls.append("dense view")
        batch = self

        class View:
            def data_ptr(self):
                return batch.array.ctypes.data

            def __dlpack__(self, stream=None):
                batch.calls.append(f"dlpack for stream {stream}")
                return batch.array.reshape(shape).__dlpack__()
        return View()

    def data_ptr(self):
        return self.array.ctypes.data


def test_gpu_batches_are_shared_after_waiting_for_their_event():
    array = np.arange(12, dtype=np.float32)
    batch = HostBackedGpuBatch(array)
    tensor = _device.gpu_tensor(batch, (3, 4), 0)
    # the host waits for the batch before anything reads it; exported for the legacy default stream
    assert batch.calls == ["wait for the batch's event", "dense view", "dlpack for stream 1"]
    array[5] = -1  # the tensor is the batch's memory
    np.testing.assert_array_equal(tensor.numpy(), array.reshape(3, 4))


# ---- external sources and inputs ----------------------------------------------------------------
def doubled_pipe(batch_size, **es):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def pipe():
        return fn.external_source(**es) * 2
    return pipe()


def test_external_source_is_rejected_by_dalidataset():
    for es in ({"name": "x"}, {"source": lambda: [np.zeros(2, np.int32)]}):
        with pytest.raises(ValueError, match="DALIDatasetWithInputs"):
            dali_tf.DALIDataset(doubled_pipe(1, **es), output_dtypes=tf.int32, batch_size=1, device_id=None)


def test_inputs_per_sample_and_batch():
    samples = np.arange(7 * 3, dtype=np.int32).reshape(7, 3)
    per_sample = dali_tf.experimental.DALIDatasetWithInputs(
        doubled_pipe(2, name="x"), input_datasets={"x": tf.data.Dataset.from_tensor_slices(samples)},
        output_dtypes=tf.int32, output_shapes=(2, 3), batch_size=2, num_threads=1, device_id=None)
    got = [x.numpy() for x in per_sample]  # ends with the input; the incomplete 4th batch is dropped
    assert_same_batches([(g,) for g in got], [(samples[i:i + 2] * 2,) for i in (0, 2, 4)])
    batches = tf.data.Dataset.from_tensor_slices(samples[:6].reshape(3, 2, 3))
    batched = dali_tf.experimental.DALIDatasetWithInputs(
        doubled_pipe(2, name="x"), input_datasets={"x": dali_tf.experimental.Input(batches, batch=True)},
        output_dtypes=tf.int32, batch_size=2, num_threads=1, device_id=None)
    assert_same_batches([(x.numpy(),) for x in batched], [(samples[i:i + 2] * 2,) for i in (0, 2, 4)])


def test_inputs_of_different_shapes_per_sample():
    ragged = tf.data.Dataset.from_generator(lambda: (np.full(n, n, np.int32) for n in (2, 2, 3, 3)),
                                            output_signature=tf.TensorSpec([None], tf.int32))
    ds = dali_tf.experimental.DALIDatasetWithInputs(
        doubled_pipe(2, name="x"), input_datasets={"x": ragged}, output_dtypes=tf.int32, batch_size=2,
        num_threads=1, device_id=None)
    got = [x.numpy() for x in ds]
    assert_same_batches([(g,) for g in got], [(np.full((2, 2), 4),), (np.full((2, 3), 6),)])


def test_python_source_runs_in_process():
    def source(info):
        return [np.full(3, info * 10 + j, np.int32) for j in range(2)]

    ds = dali_tf.experimental.DALIDatasetWithInputs(doubled_pipe(2, source=source), output_dtypes=tf.int32,
                                                   batch_size=2, num_threads=1, device_id=None)
    assert_same_batches([(x.numpy(),) for x in ds.take(3)], pipeline_batches(doubled_pipe(2, source=source), 3))
    finite = dali_tf.experimental.DALIDatasetWithInputs(
        doubled_pipe(1, source=[[np.array([i], np.int32)] for i in range(3)]), output_dtypes=tf.int32,
        batch_size=1, num_threads=1, device_id=None)
    assert [int(x.numpy()[0, 0]) for x in finite] == [0, 2, 4]  # the iterable's one epoch, then the end


def test_python_sources_per_sample_and_with_several_outputs():
    def sample(info):
        return np.full(2, info.idx_in_epoch, np.int32)

    def pair(i):
        return [np.full(1, i, np.int32)] * 2, [np.full(3, -i, np.int32)] * 2

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        a = fn.external_source(source=sample, batch=False)
        b, c = fn.external_source(source=pair, num_outputs=2)
        return a + b, c

    ds = dali_tf.experimental.DALIDatasetWithInputs(pipe(), output_dtypes=(tf.int32, tf.int32), batch_size=2,
                                                   num_threads=1, device_id=None)
    got = [as_numpy(e) for e in ds.take(2)]
    assert_same_batches(got, pipeline_batches(pipe(), 2))
    np.testing.assert_array_equal(got[1][0], [[3, 3], [4, 4]])  # samples 2, 3 of the epoch + iteration 1


def test_input_errors():
    ds = tf.data.Dataset.range(4)
    with_inputs = dali_tf.experimental.DALIDatasetWithInputs
    kw = dict(output_dtypes=tf.int64, batch_size=1, device_id=None)
    with pytest.raises(ValueError, match=r"name='y'.*\['x'\]"):
        with_inputs(doubled_pipe(1, name="x"), input_datasets={"y": ds}, **kw)
    with pytest.raises(ValueError, match=r"without inputs: \['x'\]"):
        with_inputs(doubled_pipe(1, name="x"), input_datasets={}, **kw)
    with pytest.raises(TypeError, match="dictionary"):
        with_inputs(doubled_pipe(1, name="x"), input_datasets=[ds], **kw)
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        dali_tf.experimental.Input(np.zeros(3))
    with pytest.raises(TypeError, match="single tensors"):
        with_inputs(doubled_pipe(1, name="x"), input_datasets={"x": tf.data.Dataset.zip((ds, ds))}, **kw)


# ---- the rest of the module -------------------------------------------------------------------
def test_iterator_wrapper_returns_consecutive_batches(files):
    pipe = reader_pipe(files)
    daliop = dali_tf.DALIIterator()
    got = [tuple(t.numpy() for t in daliop(pipeline=pipe, shapes=[s.shape for s in SPECS],
                                            dtypes=[s.dtype for s in SPECS], num_threads=2, device_id=None))
           for _ in range(3)]
    assert_same_batches(got, pipeline_batches(reader_pipe(files), 3))


def test_iterator_ops_in_graph_mode(files):
    """In a graph, the op's tensors give the next batch at every session run."""
    serialized = reader_pipe(files).serialize()
    with tf.Graph().as_default():
        outs = dali_tf.DALIRawIterator()(serialized_pipeline=serialized, shapes=[s.shape for s in SPECS],
                                         dtypes=[s.dtype for s in SPECS], num_threads=2, device_id=None)
        with tf.compat.v1.Session() as sess:
            got = [tuple(sess.run(outs)) for _ in range(3)]
    assert_same_batches(got, pipeline_batches(reader_pipe(files), 3))


def test_serialize_pipeline_and_compatibility(files):
    pipe = reader_pipe(files)
    assert dali_tf.serialize_pipeline(pipe) == pipe.serialize()
    with pytest.raises(RuntimeError, match="cannot be used with the TensorFlow Dataset API"):
        dali_tf.serialize_pipeline(doubled_pipe(1, source=lambda: [np.zeros(1)]))
    assert dali_tf.dataset_compatible_tensorflow() and dali_tf.dataset_inputs_compatible_tensorflow()
    import penstock.plugin.tf.experimental as experimental
    assert experimental is dali_tf.experimental


def test_keras_fit_example(monkeypatch, capsys):
    import importlib.util
    import json
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "tensorflow", "keras_fit.py")
    spec = importlib.util.spec_from_file_location("keras_fit_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setattr("sys.argv", ["keras_fit.py", "--batch", "16", "--size", "32"])
    example.main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["steps"] == 128 // 16 and np.isfinite(result["loss"])
