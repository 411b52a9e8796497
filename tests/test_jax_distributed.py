"""Multi-process JAX (jax.distributed): two CPU processes with two host devices each.

Each process builds pipelines for its own devices only; the iterator returns global arrays over
all four devices of both processes, whose shard k holds reader shard k, and a jitted step over
the global batch (a cross-process reduction) sees every sample of the epoch exactly once.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from _util import free_port, installed_or_skip, run_together  # noqa: E402

installed_or_skip("jax")

PROCESSES, LOCAL_DEVICES, N, BATCH = 2, 2, 13, 2
TIMEOUT_S = 180


def worker(rank: int, port: int, files: list[str]) -> dict:
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=PROCESSES, process_id=rank,
                               initialization_timeout=60)
    try:
        from penstock import fn
        from penstock.plugin.jax import LastBatchPolicy, data_iterator

        devices = jax.devices()
        sharding = NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch"))

        @data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding,
                       last_batch_policy=LastBatchPolicy.FILL)
        def make(shard_id=0, num_shards=1):
            _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, pad_last_batch=True,
                                       name="Reader")
            return label

        global_batch = BATCH * len(devices)
        it = make(batch_size=global_batch)
        total = jax.jit(lambda x: x.sum())
        epoch = []
        for batch in it:
            array = batch["label"]
            assert array.shape == (global_batch, 1) and array.sharding == sharding
            epoch.append({"sum": int(total(array)),
                          "shards": {str(devices.index(s.device)): np.asarray(s.data).reshape(-1).tolist()
                                     for s in array.addressable_shards}})
        return {"rank": rank, "process_index": jax.process_index(), "devices": len(devices),
                "local_devices": len(jax.local_devices()), "len": len(it),
                "shard_ids": [p.reader_meta("Reader")["shard_id"] for p in it._pipes], "epoch": epoch}
    finally:
        jax.distributed.shutdown()


def test_two_processes_build_global_arrays(tmp_path):
    files = []
    for i in range(N):
        path = tmp_path / f"{i:02d}.bin"
        path.write_bytes(np.int32(i).tobytes())
        files.append(str(path))
    port = free_port()
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={LOCAL_DEVICES}", JAX_PLATFORMS="cpu")
    outputs = run_together([[sys.executable, __file__, str(rank), str(port), json.dumps(files)]
                            for rank in range(PROCESSES)], TIMEOUT_S, env=env,
                           cwd=os.path.dirname(os.path.abspath(__file__)))
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]

    shards = PROCESSES * LOCAL_DEVICES
    own = [list(range(s * N // shards, (s + 1) * N // shards)) for s in range(shards)]
    padded = -(-N // shards)  # the reader pads every shard to ceil(N / S) samples, in whole batches
    batches = -(-padded // BATCH)
    for r in results:
        assert (r["process_index"], r["devices"], r["local_devices"]) == (r["rank"], shards, LOCAL_DEVICES)
        assert r["len"] == batches and len(r["epoch"]) == batches
        local = range(r["rank"] * LOCAL_DEVICES, (r["rank"] + 1) * LOCAL_DEVICES)
        assert r["shard_ids"] == list(local)
        for k in local:
            got = [x for b in r["epoch"] for x in b["shards"][str(k)]]
            want = own[k] + [own[k][-1]] * (batches * BATCH - len(own[k]))
            assert got == want, (r["rank"], k)
    # the jitted sum ran over the global batch: both processes agree and it spans every shard
    sums = [[b["sum"] for b in r["epoch"]] for r in results]
    assert sums[0] == sums[1]
    padded_shards = [own[k] + [own[k][-1]] * batches * BATCH for k in range(shards)]
    per_batch = [[x for k in range(shards) for x in padded_shards[k][i * BATCH:(i + 1) * BATCH]]
                 for i in range(batches)]
    assert sums[0] == [sum(b) for b in per_batch]


if __name__ == "__main__":
    result = worker(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))
    print(json.dumps(result), flush=True)
