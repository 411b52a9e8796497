"""jax.distributed on the GPUs of one host, one process per GPU (local_device_ids=[k]): data_iterator
builds each process's pipeline on that process's GPU k (JAX's local_hardware_id, not its index
among the process's devices, which is 0 in every process), and the global batch's shard on GPU k
is the buffer that pipeline wrote."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from _util import free_port, installed_or_skip, run_together  # noqa: E402

jax = installed_or_skip("jax")
from penstock import _cuda  # noqa: E402


def _gpu_count() -> int:
    """CUDA devices, counted without starting JAX's backends (jax.distributed must come first in
    the worker processes, which import this module)."""
    return _cuda.require().cuda.runtime.getDeviceCount() if _cuda.available() else 0


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpu_count() < 2, reason="needs two GPUs")]
PER_SHARD, BATCH = 6, 2
TIMEOUT_S = 300


def worker(rank: int, processes: int, port: int, files: list[str]) -> dict:
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=processes, process_id=rank,
                               local_device_ids=[rank], initialization_timeout=60)
    try:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        from penstock import fn
        from penstock.plugin.jax import data_iterator

        sharding = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))

        @data_iterator(output_map=["label"], reader_name="Reader", sharding=sharding)
        def make(shard_id=0, num_shards=1):
            _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, name="Reader")
            return label.gpu()

        it = make(batch_size=BATCH * processes)
        (pipe,) = it._pipes
        shared = []
        share_outputs = pipe.share_outputs
        pipe.share_outputs = lambda *a: shared.append(share_outputs(*a)) or shared[-1]
        batches = [b["label"] for b in it]
        # the first batch was prepared when the iterator was made: compare from the second on, and
        # the first by its values
        own = [s.data for b in batches for s in b.addressable_shards]
        return {"rank": rank, "device_id": pipe.device_id, "local_hardware_id": jax.local_devices()[0].local_hardware_id,
                "same_buffers": [a.unsafe_buffer_pointer() == out[0].data_ptr() for a, out in zip(own[1:], shared)],
                "labels": [np.asarray(a).reshape(-1).tolist() for a in own]}
    finally:
        jax.distributed.shutdown()


def test_one_process_per_gpu_reads_its_shard_on_its_gpu(tmp_path):
    from test_jax_gpu import GPUS
    if len(GPUS) < 2:
        pytest.skip("needs a CUDA JAX")
    processes = min(4, len(GPUS))
    files = []
    for i in range(PER_SHARD * processes):
        path = tmp_path / f"{i:02d}.bin"
        path.write_bytes(np.int32(i).tobytes())
        files.append(str(path))
    port = free_port()
    outputs = run_together([[sys.executable, __file__, str(rank), str(processes), str(port), json.dumps(files)]
                            for rank in range(processes)], TIMEOUT_S, cwd=os.path.dirname(os.path.abspath(__file__)),
                           # this test's process holds JAX's preallocation on every GPU already
                           env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false"))
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    for k, r in enumerate(results):
        assert r["device_id"] == r["local_hardware_id"] == k
        assert r["same_buffers"] and all(r["same_buffers"])
        assert sum(r["labels"], []) == list(range(k * PER_SHARD, (k + 1) * PER_SHARD))


if __name__ == "__main__":
    print(json.dumps(worker(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))),
          flush=True)
