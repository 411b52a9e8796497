"""GPU outputs as CUDA tensors through the same DLPack hand-off (runs once the GPU backend exists)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from penstock import _cuda, fn, pipeline_def  # noqa: E402
from penstock.plugin.pytorch import DALIGenericIterator, feed_ndarray  # noqa: E402
from _util import record_outputs  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not (_cuda.available() and torch.cuda.is_available()),
                                 reason="needs penstock's GPU backend and CUDA-enabled torch")]


def gpu_pipe(batches):
    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        return fn.external_source(source=batches, cycle=False).gpu()
    return pipe()


def test_gpu_outputs_become_cuda_tensors_without_a_copy():
    batches = [np.arange(6, dtype=np.float32).reshape(2, 3) * (i + 1) for i in range(3)]
    pipe = gpu_pipe(batches)
    seen = record_outputs(pipe)
    got = [b[0]["x"] for b in DALIGenericIterator(pipe, ["x"])]
    assert all(t.device == torch.device("cuda", 0) for t in got)
    assert [t.data_ptr() for t in got] == [out[0].data_ptr() for out in seen]
    torch.cuda.current_stream().synchronize()
    assert [t.cpu().numpy().tolist() for t in got] == [b.tolist() for b in batches]


def test_feed_ndarray_into_a_cuda_tensor():
    pipe = gpu_pipe([np.arange(6, dtype=np.int32).reshape(2, 3)])
    pipe.build()
    (out,) = pipe.run()
    target = torch.zeros(2, 3, dtype=torch.int32, device="cuda:0")
    feed_ndarray(out, target)
    torch.cuda.current_stream().synchronize()
    assert target.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]
