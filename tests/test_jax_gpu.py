"""GPU outputs as jax.Arrays on the pipeline's GPU (runs where penstock's GPU backend and a CUDA JAX exist)."""
from __future__ import annotations

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")
from penstock import _cuda, fn, pipeline_def  # noqa: E402
from penstock.pipeline import Pipeline  # noqa: E402
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
    assert [b["gpu"].unsafe_buffer_pointer() for b in got] == [out[0].data_ptr() for out in seen]
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


def _int_files(tmp_path, n: int) -> list[str]:
    files = []
    for i in range(n):
        path = tmp_path / f"{i:02d}.bin"
        path.write_bytes(np.int32(i).tobytes())
        files.append(str(path))
    return files


@pytest.mark.parametrize("ndev", [2, 4])
def test_sharded_batches_are_the_pipelines_buffers_from_the_first_batch_on(tmp_path, monkeypatch, ndev):
    """data_iterator over a NamedSharding of ``ndev`` GPUs, read on a thread whose current GPU is
    the last one: every shard of every batch, the first included, is the buffer its pipeline wrote
    (the first batch of a two-GPU iterator used to be copied: cupy.asarray moved the batches of
    the other GPUs onto the current one, which JAX's initialisation had left on another GPU)."""
    if len(GPUS) < ndev:
        pytest.skip(f"needs {ndev} GPUs")
    import cupy
    shared = []  # (pipeline's GPU, its output batch) as the pipelines hand them out
    share_outputs = Pipeline.share_outputs

    def recording(self, *args):
        out = share_outputs(self, *args)
        shared.append((self.device_id, out[0]))
        return out
    monkeypatch.setattr(Pipeline, "share_outputs", recording)
    files = _int_files(tmp_path, 8 * ndev)
    sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(GPUS[:ndev]), ("batch",)),
                                          jax.sharding.PartitionSpec("batch"))

    @data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding)
    def make(shard_id=0, num_shards=1):
        _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, name="Reader")
        return label.gpu()

    with cupy.cuda.Device(ndev - 1):
        batches = [b["label"] for b in make(batch_size=2 * ndev)]
    assert len(batches) == 4 and len(shared) == 4 * ndev
    for step, batch in enumerate(batches):
        assert batch.sharding == sharding
        wrote = {d: out for d, out in shared[step * ndev:(step + 1) * ndev]}
        for k, s in enumerate(batch.addressable_shards):
            assert s.device == GPUS[k] and wrote[k].device_id() == k
            assert s.data.unsafe_buffer_pointer() == wrote[k].data_ptr(), (step, k)
            assert np.asarray(s.data).reshape(-1).tolist() == [8 * k + 2 * step, 8 * k + 2 * step + 1]


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
