"""DALIDataset on a TensorFlow GPU: GPU outputs as GPU tensors, zero-copy (runs where penstock's GPU
backend and a TensorFlow with CUDA exist; the placement logic is tested without them in
tests/test_tf_placement.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

tf = installed_or_skip("tensorflow")
from penstock import _cuda, fn, pipeline_def  # noqa: E402


def _tf_gpus() -> list:
    # TensorFlow takes nearly all GPU memory when it starts, leaving the pipeline none: grow instead.
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # TensorFlow's GPUs were initialized already (by an earlier test module)
            pass
    return tf.config.list_logical_devices("GPU")


TF_GPUS = _tf_gpus()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not (_cuda.available() and TF_GPUS),
                                 reason="needs penstock's GPU backend and a TensorFlow with a GPU")]

import penstock.plugin.tf as dali_tf  # noqa: E402
from penstock_tensorflow import _device  # noqa: E402
from _util import slow_batches, slow_chain  # noqa: E402

BATCHES = [np.arange(24, dtype=np.float32).reshape(4, 6) * (i + 1) for i in range(3)]


def source_pipe(graph, batches=BATCHES, device_id=0):
    """``graph(x)`` over an external_source giving ``batches`` (run in-process by DALIDatasetWithInputs)."""
    @pipeline_def(batch_size=len(batches[0]), num_threads=1, device_id=device_id)
    def pipe():
        return graph(fn.external_source(source=batches, cycle=False, batch=True))
    return pipe()


def dataset(pipe, n_outputs, device_id=0, **kw):
    return dali_tf.experimental.DALIDatasetWithInputs(pipe, output_dtypes=(tf.float32,) * n_outputs,
                                                      batch_size=len(BATCHES[0]), num_threads=1,
                                                      device_id=device_id, **kw)


def device_ptr(tensor):
    """The device address of a TensorFlow GPU tensor (read back through DLPack with CuPy)."""
    import cupy

    class Capsule:
        def __init__(self, t):
            self.capsule, self.device = tf.experimental.dlpack.to_dlpack(t), tf.DeviceSpec.from_string(t.device)

        def __dlpack__(self, **kw):
            return self.capsule

        def __dlpack_device__(self):
            return (2, self.device.device_index)

    return int(cupy.from_dlpack(Capsule(tensor)).data.ptr)


def test_gpu_outputs_are_tensors_on_the_pipelines_gpu_without_a_copy(monkeypatch):
    shared = []
    original = _device.gpu_tensor

    def recording(batch, shape, index):
        shared.append(batch.data_ptr())
        return original(batch, shape, index)

    monkeypatch.setattr(_device, "gpu_tensor", recording)
    ds = dataset(source_pipe(lambda x: x.gpu()), 1)
    assert ds._device_placement.device == "/GPU:0"
    got = [x for (x,) in ds]
    assert all(tf.DeviceSpec.from_string(t.device).device_type == "GPU" for t in got)
    assert all(tf.DeviceSpec.from_string(t.device).device_index == 0 for t in got)
    assert [t.numpy().tolist() for t in got] == [b.tolist() for b in BATCHES]
    assert [device_ptr(t) for t in got] == shared


def test_values_are_final_when_tensorflow_reads_them():
    """A long GPU computation in the pipeline, read by a TensorFlow GPU op at once."""
    batches = slow_batches()
    want = [slow_chain(b).sum(axis=1) for b in batches]
    ds = dali_tf.experimental.DALIDatasetWithInputs(source_pipe(lambda x: slow_chain(x.gpu()), batches), output_dtypes=tf.float32,
                                                    batch_size=8, num_threads=1, device_id=0)
    with tf.device("/GPU:0"):
        got = [tf.reduce_sum(x, axis=1).numpy() for x in ds]  # a single dtype: tensors, not 1-tuples
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4)


def test_reader_pipeline_on_the_gpu_gives_the_cpu_pipelines_batches(tmp_path):
    files = []
    for i in range(6):
        files.append(os.path.join(tmp_path, f"f{i}.bin"))
        with open(files[-1], "wb") as f:
            f.write(bytes([i]) * 8)

    def reader(device_id, to_gpu):
        @pipeline_def(batch_size=2, num_threads=1, device_id=device_id)
        def pipe():
            data, label = fn.readers.file(files=files, name="Reader")
            return (data.gpu(), label.gpu()) if to_gpu else (data, label)
        return pipe()

    ds = dali_tf.DALIDataset(reader(0, True), output_dtypes=(tf.uint8, tf.int32), output_shapes=((2, 8), (2,)),
                             batch_size=2, num_threads=1, device_id=0)
    cpu = reader(None, False)
    want = [tuple(tl.as_array() for tl in cpu.run()) for _ in range(4)]

    @tf.function
    def first_bytes(d):  # the dataset inside a tf.function
        return d.take(4).map(lambda data, label: (data[:, 0], label)).reduce(
            tf.constant(0, tf.int64), lambda acc, x: acc + tf.reduce_sum(tf.cast(x[1], tf.int64)))

    got = [tuple(t.numpy() for t in x) for x in ds.take(4)]
    for (data, label), (wdata, wlabel) in zip(got, want):
        np.testing.assert_array_equal(data, wdata)
        np.testing.assert_array_equal(label, wlabel.reshape(-1))
    assert int(first_bytes(ds)) == sum(int(w[1].sum()) for w in want)


def test_dataset_on_the_cpu_gets_gpu_outputs_copied_when_allowed():
    with tf.device("/CPU:0"):
        with pytest.raises(tf.errors.InternalError, match="TF device: CPU, DALI device: GPU for output 0"):
            dataset(source_pipe(lambda x: x.gpu()), 1)
        with pytest.warns(UserWarning, match="copied to the host"):
            ds = dataset(source_pipe(lambda x: x.gpu()), 1, fail_on_device_mismatch=False)
    got = [x for (x,) in ds]
    assert all(tf.DeviceSpec.from_string(t.device).device_type == "CPU" for t in got)
    assert [t.numpy().tolist() for t in got] == [b.tolist() for b in BATCHES]


def test_cpu_outputs_of_a_dataset_on_the_gpu_are_a_mismatch():
    with pytest.raises(tf.errors.InternalError, match="TF device: GPU, DALI device: CPU for output 1"):
        dataset(source_pipe(lambda x: (x.gpu(), x)), 2)
    with pytest.warns(UserWarning, match="copied to the GPU"):
        ds = dataset(source_pipe(lambda x: (x.gpu(), x * 2)), 2, fail_on_device_mismatch=False)
    got = list(ds)
    assert all(tf.DeviceSpec.from_string(t.device).device_type == "GPU" for pair in got for t in pair)
    assert [(a.numpy().tolist(), b.numpy().tolist()) for a, b in got] == [(x.tolist(), (x * 2).tolist())
                                                                          for x in BATCHES]


def test_a_cpu_output_pipeline_with_a_device_id_stays_on_the_cpu():
    ds = dataset(source_pipe(lambda x: x.gpu().cpu()), 1)
    assert ds._device_placement.device == "/CPU:0"
    got = [x for (x,) in ds]
    assert all(tf.DeviceSpec.from_string(t.device).device_type == "CPU" for t in got)
    assert [t.numpy().tolist() for t in got] == [b.tolist() for b in BATCHES]


@pytest.mark.skipif(len(TF_GPUS) < 2, reason="needs two GPUs")
def test_dataset_on_another_gpu_gets_one_device_copy():
    with tf.device("/GPU:1"):
        ds = dataset(source_pipe(lambda x: x.gpu()), 1)
    got = [x for (x,) in ds]
    assert all(tf.DeviceSpec.from_string(t.device).device_index == 1 for t in got)
    assert [t.numpy().tolist() for t in got] == [b.tolist() for b in BATCHES]


def test_keras_fits_on_gpu_elements():
    """model.fit straight from a dataset on the GPU (float32 images and int32 labels on the GPU)."""
    rng = np.random.default_rng(1)
    images = [rng.normal(size=(4, 6)).astype(np.float32) for _ in range(3)]
    labels = [rng.integers(0, 3, size=(4,)).astype(np.int32) for _ in range(3)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=images, cycle=True, batch=True)
        y = fn.external_source(source=labels, cycle=True, batch=True)
        return x.gpu(), y.gpu()

    ds = dali_tf.experimental.DALIDatasetWithInputs(pipe(), output_dtypes=(tf.float32, tf.int32),
                                                    output_shapes=((4, 6), (4,)), batch_size=4, num_threads=1,
                                                    device_id=0)
    model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds, epochs=2, steps_per_epoch=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    # labels crossed intact: the loss equals the one computed from the same batches on the host
    want = np.mean([model.evaluate(x, y, verbose=0) for x, y in zip(images, labels)])
    got = model.evaluate(ds, steps=3, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)
