"""Data parallel training layout: one process per rank, each reading its shard (gloo, CPU).

Each rank builds its pipeline with shard_id=rank, num_shards=world_size and iterates with
reader_name; rank 0 gathers what every rank saw and checks it against the sharding contract
(api.md §10): shard s is [floor(s*N/S), floor((s+1)*N/S)), shards rotate by one per epoch.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from _util import free_port  # noqa: E402

WORLD = 2
N = 11
BATCH = 2


def shard(s: int) -> list[int]:
    return list(range(s * N // WORLD, (s + 1) * N // WORLD))


def run_rank(rank: int, port: int, files: list[str]) -> None:
    from penstock import fn, pipeline_def
    from penstock.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None)
    def pipe(pad):
        _, label = fn.readers.file(files=files, shard_id=rank, num_shards=WORLD, pad_last_batch=pad,
                                   name="Reader")
        return label

    try:
        for policy in LastBatchPolicy:
            for pad in (False, True):
                it = DALIGenericIterator(pipe(pad), ["label"], reader_name="Reader", last_batch_policy=policy)
                for epoch in range(2):
                    iter(it)
                    seen = [b[0]["label"].reshape(-1).tolist() for b in it]
                    gathered = [None] * WORLD
                    dist.all_gather_object(gathered, (len(it), seen))
                    if rank == 0:
                        check_epoch(policy, pad, epoch, gathered)
    finally:
        dist.destroy_process_group()


def check_epoch(policy, pad: bool, epoch: int, gathered: list) -> None:
    from penstock.plugin.pytorch import LastBatchPolicy

    where = f"{policy.name} pad={pad} epoch={epoch}"
    lengths = {length for length, _ in gathered}
    assert len(lengths) == 1, f"{where}: ranks disagree on len(): {gathered}"
    assert all(len(batches) == gathered[0][0] for _, batches in gathered), f"{where}: len() is not the batch count"
    flat = [[x for batch in batches for x in batch] for _, batches in gathered]
    if epoch == 1 and not pad:
        return  # unpadded readers stream on across shard ends: the second epoch starts mid-shard
    own = [shard((r + epoch) % WORLD) for r in range(WORLD)]  # shards rotate by one per epoch
    if policy == LastBatchPolicy.PARTIAL:
        assert flat == own, where
        assert sorted(x for f in flat for x in f) == list(range(N)), where
    elif policy == LastBatchPolicy.FILL:
        assert [f[:len(o)] for f, o in zip(flat, own)] == own, where
        assert all(len(f) == gathered[0][0] * BATCH for f in flat), f"{where}: FILL returns full batches"
        if pad:
            assert all(set(f[len(o):]) <= {o[-1]} for f, o in zip(flat, own)), f"{where}: padding repeats the last"
    else:
        kept = (N // WORLD) // BATCH * BATCH
        assert flat == [o[:kept] for o in own], where
        assert len({x for f in flat for x in f}) == WORLD * kept, f"{where}: a sample was seen twice"


def test_ranks_see_each_sample_once_per_epoch(tmp_path):
    files = []
    for i in range(N):
        path = os.path.join(tmp_path, f"{i:02d}.bin")
        with open(path, "wb") as f:
            f.write(np.int32(i).tobytes())
        files.append(path)
    mp.spawn(run_rank, args=(free_port(), files), nprocs=WORLD, join=True)
