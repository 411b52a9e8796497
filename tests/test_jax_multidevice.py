"""penstock.plugin.jax over several devices: NamedSharding global arrays and pmap-style stacking.

Runs on 4 host devices (XLA_FLAGS=--xla_force_host_platform_device_count=4). JAX reads that flag
once, when its backend starts, which in a test session may already have happened with one
device; so in the parent session this module is one test that re-runs the module in a child
pytest with the flag set, where the cases below run.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")

CHILD = "PENSTOCK_JAX_MULTIDEVICE_CHILD"

if os.environ.get(CHILD) != "1":
    def test_multidevice_cases_on_four_host_devices():
        env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
        env[CHILD] = "1"
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                             cwd=os.path.dirname(os.path.abspath(__file__)), env=env, capture_output=True,
                             text=True, timeout=540)
        assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
        assert " passed" in out.stdout and "skipped" not in out.stdout, out.stdout[-2000:]
else:
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from penstock import fn
    from penstock.plugin.jax import DALIGenericIterator, LastBatchPolicy, data_iterator
    from penstock.plugin.jax.clu import peekable_data_iterator

    from test_base_iterator import dataset, label_pipe, model_reader_iterator  # noqa: F401

    FILL, DROP = LastBatchPolicy.FILL, LastBatchPolicy.DROP
    DEVICES = jax.devices()

    def batch_sharding(devices):
        return NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch"))

    def labels(array) -> list[int]:
        return np.asarray(array).reshape(-1).tolist()

    def sharded_labels(files, sharding, **kw):
        @data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding, **kw)
        def make(shard_id=0, num_shards=1, pad=False):
            _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, pad_last_batch=pad,
                                       name="Reader")
            return label
        return make

    def test_four_host_devices():
        assert len(DEVICES) == 4 and all(d.platform == "cpu" for d in DEVICES)

    @pytest.mark.parametrize("ndev", [2, 4])
    @pytest.mark.parametrize("policy", [FILL, DROP])
    @pytest.mark.parametrize("pad", [False, True])
    def test_sharded_epochs_hold_each_shard_on_its_device(dataset, ndev, policy, pad):
        n, b = 13, 2
        sharding = batch_sharding(DEVICES[:ndev])
        it = sharded_labels(dataset(n), sharding, last_batch_policy=policy)(batch_size=b * ndev, pad=pad)
        assert [p.max_batch_size for p in it._pipes] == [b] * ndev
        got = []
        for _ in range(3):
            iter(it)
            length, batches = len(it), list(it)
            for batch in batches:
                array = batch["label"]
                assert array.shape == (ndev * b, 1) and array.sharding == sharding
                assert [s.device for s in array.addressable_shards] == DEVICES[:ndev]
                assert all(s.index[0] == slice(k * b, (k + 1) * b) for k, s in enumerate(array.addressable_shards))
            got.append((length, [[labels(s.data) for s in batch["label"].addressable_shards] for batch in batches]))
        assert got == model_reader_iterator(n, ndev, list(range(ndev)), b, policy, pad, False, 3)

    def test_global_arrays_feed_jit_over_the_mesh(dataset):
        sharding = batch_sharding(DEVICES)
        it = sharded_labels(dataset(8), sharding)(batch_size=8)
        batch = next(it)
        total = jax.jit(lambda x: (x * x).sum())(batch["label"])
        assert int(total) == sum(i * i for i in range(8))
        doubled = jax.jit(lambda x: x * 2, out_shardings=sharding)(batch["label"])
        assert labels(doubled) == [2 * i for i in range(8)] and doubled.sharding == sharding

    def test_a_mesh_axis_that_replicates_the_batch_gives_its_devices_the_same_shard(dataset):
        mesh = Mesh(np.array(DEVICES).reshape(2, 2), ("data", "model"))
        sharding = NamedSharding(mesh, PartitionSpec("data"))
        it = sharded_labels(dataset(8), sharding)(batch_size=4)
        shard_ids = [p.reader_meta("Reader")["shard_id"] for p in it._pipes]
        assert shard_ids == [0, 0, 1, 1]
        batch = next(it)["label"]
        assert batch.shape == (4, 1) and batch.sharding == sharding
        assert labels(batch) == [0, 1, 4, 5]
        assert {s.device: labels(s.data) for s in batch.addressable_shards} == {
            DEVICES[0]: [0, 1], DEVICES[1]: [0, 1], DEVICES[2]: [4, 5], DEVICES[3]: [4, 5]}

    def test_devices_mode_stacks_for_pmap(dataset):
        @data_iterator(output_map=["label"], reader_name="Reader", devices=DEVICES)
        def make(shard_id=0, num_shards=1):
            _, label = fn.readers.file(files=dataset(8), shard_id=shard_id, num_shards=num_shards, name="Reader")
            return label

        it = make(batch_size=8)
        batch = next(it)["label"]
        assert batch.shape == (4, 2, 1)
        assert [next(iter(s.data.devices())) for s in batch.addressable_shards] == DEVICES
        sums = jax.pmap(lambda x: jax.lax.psum(x.sum(), "d") + 100 * x.sum(), axis_name="d")(batch)
        assert np.asarray(sums).tolist() == [28 + 100 * (2 * k + 2 * k + 1) for k in range(4)]

    def test_cpu_pipelines_without_sharding_spread_by_device_id(dataset):
        pipes = [label_pipe(dataset(8), s, 2, False, False, batch_size=2, device_id=s + 2) for s in range(2)]
        batch = next(DALIGenericIterator(pipes, ["label"], reader_name="Reader"))["label"]
        assert batch.shape == (2, 2, 1) and labels(batch) == [0, 1, 4, 5]
        assert [next(iter(s.data.devices())) for s in batch.addressable_shards] == DEVICES[2:]
        flat = next(DALIGenericIterator([label_pipe(dataset(8), s, 2, False, False, batch_size=2, device_id=s)
                                         for s in range(2)], ["label"], reader_name="Reader",
                                        pmap_compatible=False))["label"]
        assert flat.shape == (4, 1) and labels(flat) == [0, 1, 4, 5]

    def test_sharding_needs_one_pipeline_per_device(dataset):
        with pytest.raises(ValueError, match="one pipeline per device"):
            DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                                sharding=batch_sharding(DEVICES))

    def test_multi_device_arguments_are_checked(dataset):
        make = sharded_labels(dataset(8), batch_sharding(DEVICES))
        with pytest.raises(ValueError, match="Duplicate argument shard_id"):
            make(batch_size=8, shard_id=1)
        with pytest.raises(ValueError, match="does not split evenly"):
            make(batch_size=6)
        with pytest.raises(ValueError, match="batch_size"):
            make()

    def test_a_function_without_shard_arguments_is_warned_about(dataset):
        @data_iterator(output_map=["label"], sharding=batch_sharding(DEVICES[:2]), size=4)
        def make():
            _, label = fn.readers.file(files=dataset(4), name="Reader")
            return label

        with pytest.warns(Warning, match="reads the same data"):
            make(batch_size=4)

    def test_is_nonpadding_is_sharded_like_the_outputs(dataset):
        sharding = batch_sharding(DEVICES[:2])

        @peekable_data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding)
        def make(shard_id=0, num_shards=1):
            _, label = fn.readers.file(files=dataset(5), shard_id=shard_id, num_shards=num_shards,
                                       pad_last_batch=True, name="Reader")
            return label

        it = make(batch_size=4)
        got = [(labels(b["label"]), np.asarray(it.is_nonpadding).tolist(), it.is_nonpadding.sharding) for b in it]
        # shards [0, 1] and [2, 3, 4], padded to 4 samples: batches of 2 per shard
        assert got == [([0, 1, 2, 3], [True] * 4, sharding), ([1, 1, 4, 4], [False, False, True, False], sharding)]
        assert it.element_spec["label"].shape == (4, 1) and it.element_spec["label"].dtype == jnp.int32

    def test_specs_naming_more_dimensions_must_split_only_the_batch(dataset):
        mesh = Mesh(np.array(DEVICES), ("batch",))
        sharding = NamedSharding(mesh, PartitionSpec("batch", None))
        batch = next(sharded_labels(dataset(8), sharding)(batch_size=8))["label"]
        assert batch.sharding == sharding and labels(batch) == list(range(8))
        grid = Mesh(np.array(DEVICES).reshape(2, 2), ("a", "b"))
        with pytest.raises(ValueError, match="only the batch"):
            sharded_labels(dataset(8), NamedSharding(grid, PartitionSpec("a", "b")))(batch_size=8)
