"""penstock.plugin.pytorch's torch_utils (to_torch_tensor shared or copied) and loader_evaluator
(LoaderEvaluator timing a loader, and replaying batches from memory)."""
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from penstock import fn, pipeline_def  # noqa: E402
from penstock.plugin.pytorch import DALIGenericIterator  # noqa: E402
from penstock.plugin.pytorch.loader_evaluator import LoaderEvaluator  # noqa: E402
from penstock.plugin.pytorch.torch_utils import feed_ndarray, to_torch_tensor, to_torch_type  # noqa: E402
from penstock.tensors import TensorCPU, TensorListCPU  # noqa: E402
from penstock.types import DALIDataType  # noqa: E402


def test_to_torch_tensor_shares_or_copies():
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = TensorCPU(data)
    shared, copied = to_torch_tensor(t, copy=False), to_torch_tensor(t, copy=True)
    assert shared.dtype == copied.dtype == torch.int16 and shared.tolist() == copied.tolist() == data.tolist()
    data[0, 0] = 99
    assert shared[0, 0] == 99 and copied[0, 0] == 0
    batch = to_torch_tensor(TensorListCPU(np.ones((4, 2), np.float32)), copy=True)
    assert batch.shape == (4, 2) and batch.dtype == torch.float32
    assert to_torch_type[DALIDataType.UINT8] is torch.uint8 and callable(feed_ndarray)


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def _counting():
    return fn.random.uniform(range=[0, 1], shape=[3])


def test_log_mode_times_every_batch(tmp_path):
    with pytest.warns(Warning, match="size is deprecated"):
        loader = DALIGenericIterator(_counting(), ["x"], size=10)
    evaluator = LoaderEvaluator(loader, mode="log", metrics_file=str(tmp_path / "m.json"))
    assert evaluator.get_metrics() == {} and len(evaluator) == 5
    batches = list(evaluator)
    assert len(batches) == 5 and batches[0][0]["x"].shape == (2, 3)
    m = evaluator.get_metrics()
    assert m["mode"] == "log" and m["total_batches"] == 5 and len(m["batch_times"]) == 5
    assert 0 <= m["min_batch_time"] <= m["avg_batch_time"] <= m["max_batch_time"] <= m["total_time"]
    assert not m["cache_ready"] and m["cached_batches"] == 0
    evaluator.save_metrics()
    assert json.loads((tmp_path / "m.json").read_text())["total_batches"] == 5


def test_replay_mode_cycles_the_cached_batches(capsys):
    loader = [torch.full((2,), i) for i in range(7)]
    evaluator = LoaderEvaluator(loader, mode="replay", num_cached_batches=3)
    assert evaluator.cache_ready and len(evaluator.cached_batches) == 3
    assert [int(b[0]) for b in evaluator] == [0, 1, 2, 0, 1, 2, 0]  # as many batches as the loader has
    assert evaluator.get_metrics()["total_batches"] == 7
    evaluator.print_summary()
    assert "Mode: replay" in capsys.readouterr().out
    with pytest.raises(ValueError, match="mode must be one of"):
        LoaderEvaluator(loader, mode="fast")
    with pytest.raises(ValueError, match="no file name"):
        evaluator.save_metrics()
