"""examples/pytorch/train_ddp.py under torchrun on the CPU (gloo), on one simulated host and on two.

Two "hosts" are two torchrun launches on localhost (--nnodes=2, --node_rank 0 and 1, one
rendezvous). What each global rank trains on must follow the global rank and world size only:
rank r of 4 reads shard r whether it is local rank 0 of the second host or local rank 2 of one
host, every rank has the same len(), and a run saved on 4 ranks mid-epoch resumes on 2 (and 2 on
4) with the interrupted epoch's remaining samples each seen once.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "examples", "pytorch", "train_ddp.py")
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from make_sample_data import make_dataset  # noqa: E402
from _util import free_port, run_together  # noqa: E402

CLASSES, PER_CLASS, BATCH = 2, 13, 2
N = CLASSES * PER_CLASS
COMMON = ["--device", "cpu", "--arch", "tiny", "--batch", str(BATCH), "--threads", "1", "--warmup", "1"]
# torchrun's agents meet at an exit barrier once their workers are done; it misses a host now and then
# (pytorch/pytorch#69520) and then waits out its 300 s before the agent exits, successfully: a launch
# may take that long on top of its work
TIMEOUT_S = 480


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("ddp")), classes=CLASSES, per_class=PER_CLASS, size=(40, 52))


def launch(hosts: int, per_host: int, *args: str) -> list[dict]:
    """The example on ``hosts`` simulated hosts of ``per_host`` ranks each: torchrun once per host,
    all on localhost; the JSON lines of rank 0."""
    port = free_port()
    outputs = run_together([[sys.executable, "-m", "torch.distributed.run", f"--nnodes={hosts}", f"--node_rank={k}",
                             f"--nproc_per_node={per_host}", "--master_addr=127.0.0.1", f"--master_port={port}",
                             SCRIPT, *COMMON, *args] for k in range(hosts)], TIMEOUT_S)
    return [json.loads(line) for out in outputs for line in out.splitlines() if line.startswith("{")]


def checks(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line.get("check") == "epoch"]


def aggregate(lines: list[dict]) -> dict:
    return next(line for line in lines if line.get("aggregate"))


def shard_digests(root: str, shards: int) -> list[int]:
    """What the example reports of shard s's samples in the first epoch, for every s: the reader's
    shards computed here, in one process."""
    from penstock import fn, pipeline_def
    classes = sorted(os.listdir(root))
    files = [os.path.join(root, c, f) for c in classes for f in sorted(os.listdir(os.path.join(root, c)))]
    digests = []
    for s in range(shards):
        size = ((s + 1) * N) // shards - (s * N) // shards

        @pipeline_def(batch_size=size, num_threads=1, device_id=None, seed=0)
        def pipe():
            return fn.readers.file(files=files, shard_id=s, num_shards=shards, random_shuffle=True,
                                   pad_last_batch=True, name="Reader")[1]
        indices = sorted(pipe().run()[0].as_array().ravel().tolist())
        digests.append(zlib.crc32(np.array(indices, np.int64).tobytes()))
    return digests


def test_ranks_on_two_hosts_shard_by_global_rank_and_resume_on_another_number_of_ranks(data, tmp_path):
    # 2 hosts x 1 rank: shard r on rank r; saved 3 steps into the second epoch
    saved = str(tmp_path / "at2")
    lines = launch(2, 1, "--data", data, "--epochs", "2", "--checkpoint-dir", saved, "--save-at", "10")
    first, interrupted = checks(lines)
    assert first["ok"] and first["complete"] and first["len"] == [7] and first["batches"] == [7, 7]
    assert first["samples"] == first["distinct"] == N and first["shared_between_ranks"] == 0
    assert [d for d, _ in first["rank_samples"]] == shard_digests(data, 2)
    assert not interrupted["complete"] and interrupted["batches"] == [3, 3] and interrupted["distinct"] == 12
    total = aggregate(lines)
    assert (total["world_size"], total["hosts"], total["steps"], total["loader"]) == (2, 1, 10, "penstock")
    assert total["img_per_s"] > 0 and np.isfinite(total["loss"])
    # on 2 hosts x 2 ranks: the rest of that epoch, each remaining sample once, then a whole epoch
    rest, after = checks(launch(2, 2, "--data", data, "--epochs", "3", "--resume", saved))
    assert rest["ok"] and rest["complete"] and rest["epoch"] == 1 and rest["seen_before_resume"] == 12
    assert rest["samples"] == rest["distinct"] == N - 12 and rest["len"] == [2] and rest["batches"] == [2] * 4
    assert after["complete"] and after["samples"] == after["distinct"] == N and after["len"] == [4]

    # 2 hosts x 2 ranks: global rank r (local rank r % 2 of host r // 2) reads shard r; saved 2
    # steps into the second epoch, resumed on one host of 2 ranks
    saved = str(tmp_path / "at4")
    first, interrupted = checks(launch(2, 2, "--data", data, "--epochs", "2", "--checkpoint-dir", saved,
                                       "--save-at", "6"))
    assert first["complete"] and first["len"] == [4] and first["batches"] == [4] * 4
    assert [d for d, _ in first["rank_samples"]] == shard_digests(data, 4)
    assert first["samples"] == first["distinct"] == N
    assert not interrupted["complete"] and interrupted["batches"] == [2] * 4 and interrupted["distinct"] == 16
    rest, = checks(launch(1, 2, "--data", data, "--epochs", "2", "--resume", saved))
    assert rest["ok"] and rest["complete"] and rest["seen_before_resume"] == 16
    assert rest["samples"] == rest["distinct"] == N - 16 and rest["len"] == [3] and rest["batches"] == [3, 3]


def test_the_dataloader_feed_pads_shards_as_distributed_sampler_does(data):
    pytest.importorskip("torchvision")
    epochs = checks(launch(1, 2, "--data", data, "--loader", "dataloader", "--threads", "0"))
    assert epochs[0]["ok"] and epochs[0]["len"] == [7] and epochs[0]["distinct"] == N


def test_the_process_groups_threads_end_before_the_interpreter_does(data):
    # gloo's worker threads drop their last collective's tensors whenever they get to it; one doing so
    # while the interpreter exits takes the GIL there and aborts the process (CI saw it about 1 run in
    # 50). The example destroys its group, which joins them, while Python still runs: none is left
    # once main() returns. One rank, in one process.
    code = ("import os, runpy, sys; runpy.run_path(sys.argv[1])['main'](sys.argv[2:]); "
            "print(sorted(open(f'/proc/self/task/{t}/comm').read().strip() for t in os.listdir('/proc/self/task')))")
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    done = subprocess.run([sys.executable, "-c", code, SCRIPT, *COMMON, "--data", data, "--steps", "3"],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    *_, total, threads = done.stdout.splitlines()
    assert json.loads(total)["steps"] == 3
    assert "gloo" not in threads, threads  # (pt_gloo_runloop, gloo_tcp_loop while the group lives)
