"""The same epochs from penstock's and NVIDIA DALI's PyTorch iterators (skipped without DALI).

Both iterate readers.file over the same files (label = file index) with identical arguments;
the yielded labels and len() must agree epoch by epoch.
"""
from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
dali_pytorch = pytest.importorskip("nvidia.dali.plugin.pytorch")
import nvidia.dali as dali  # noqa: E402

import penstock  # noqa: E402
from penstock.plugin import pytorch as penstock_pytorch  # noqa: E402

from test_base_iterator import COMBOS, dataset  # noqa: E402,F401

pytestmark = pytest.mark.dali


def label_pipe(lib, files, shard_id, num_shards, pad, stick, batch_size):
    @lib.pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def pipe():
        _, label = lib.fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, pad_last_batch=pad,
                                       stick_to_shard=stick, name="Reader")
        return label
    return pipe()


def epochs(plugin, lib, files, shard_ids, num_shards, b, policy, pad, stick, size=None, count=4):
    pipes = [label_pipe(lib, files, s, num_shards, pad, stick, b) for s in shard_ids]
    kwargs = {"reader_name": "Reader"} if size is None else {"size": size}
    try:
        it = plugin.DALIGenericIterator(pipes, ["label"], last_batch_policy=plugin.LastBatchPolicy(policy), **kwargs)
    except RuntimeError:
        return "RuntimeError"
    result = []
    for _ in range(count):
        iter(it)
        length = len(it)
        result.append((length, [[d["label"].reshape(-1).tolist() for d in row] for row in it]))
    return result


def both(*args, **kwargs):
    return (epochs(penstock_pytorch, penstock, *args, **kwargs),
            epochs(dali_pytorch, dali, *args, **kwargs))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("policy", [0, 1, 2])
@pytest.mark.parametrize("pad,stick", [(False, False), (True, False), (False, True), (True, True)])
def test_reader_name_epochs_equal_dali(dataset, policy, pad, stick):
    for n, s_count, b in COMBOS[::2]:
        for shard_ids in [list(range(s_count))] + ([[s_count - 1]] if s_count > 1 else []):
            ours, theirs = both(dataset(n), shard_ids, s_count, b, policy, pad, stick)
            assert ours == theirs, (n, s_count, shard_ids, b)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("policy", [0, 1, 2])
def test_sized_epochs_equal_dali(dataset, policy):
    for n, size, pipes, b in itertools.product((5, 10), (1, 3, 7, 10, 11), (1, 2), (1, 2, 4)):
        if policy == 1 and size // (pipes * b) == 0:
            continue
        ours, theirs = both(dataset(n), list(range(pipes)), pipes, b, policy, False, False, size=size)
        assert ours == theirs, (n, size, pipes, b)


def source_epochs(plugin, lib, auto_reset, cycle, size, count=3):
    import numpy as np
    batches = [np.full((2, 1), i, np.int32) for i in range(3)]

    @lib.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return lib.fn.external_source(source=batches, cycle=cycle)

    it = plugin.DALIGenericIterator(pipe(), ["x"], size=size, auto_reset=auto_reset)
    result = []
    for _ in range(count):
        try:
            result.append([b[0]["x"].reshape(-1).tolist() for b in it])
        except StopIteration:
            result.append("StopIteration")
        if not auto_reset:
            it.reset()
    return result


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("auto_reset", [False, True, "yes"])
@pytest.mark.parametrize("cycle", [None, "raise"])
@pytest.mark.parametrize("size", [-1, 5])
def test_external_source_epochs_equal_dali(auto_reset, cycle, size):
    assert (source_epochs(penstock_pytorch, penstock, auto_reset, cycle, size)
            == source_epochs(dali_pytorch, dali, auto_reset, cycle, size))
