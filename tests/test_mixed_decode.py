"""The mixed decoders' split of a batch between decoder processes, and their failures sent to the
host (operators._mixed_decode, with stand-in processes); the decoding itself is tested on the GPU
(tests/test_gpu_operators.py, mixed decoders)."""
import concurrent.futures
import types

import numpy as np

from penstock.operators._mixed_decode import _split_by_bytes


def test_a_batch_splits_into_consecutive_runs_of_about_equal_bytes():
    rng = np.random.default_rng(3)
    lengths = rng.integers(50_000, 160_000, 256)
    for parts in (1, 2, 3):
        runs = _split_by_bytes(lengths, parts)
        assert len(runs) == parts
        np.testing.assert_array_equal(np.concatenate(runs), np.arange(256))
        shares = np.array([lengths[r].sum() for r in runs])
        assert shares.max() - shares.min() <= 2 * lengths.max()


def test_fewer_samples_than_parts_give_no_empty_runs():
    assert [r.tolist() for r in _split_by_bytes(np.array([7]), 2)] == [[0]]
    assert _split_by_bytes(np.zeros(0, np.int64), 2) == []
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 1, 1]), 2)] == [[0, 1], [2, 3]]
    assert [r.tolist() for r in _split_by_bytes(np.array([1, 1, 100]), 2)] == [[0, 1], [2]]


class _FakeOperator:
    label = "decoders.image"
    args = {"cache_size": 0, "adjust_orientation": True, "output_type": 0, "use_fast_idct": False}


class _FakeProcess:
    """Stands in for a decoder process: keeps each request's bytes (as the memfd copy would) and
    reports the local positions listed in ``fails`` as undecodable."""

    def __init__(self, fails=()):
        self.fails = list(fails)
        self.requests = []
        self.closed = False

    def submit(self, packed, starts, lengths, windows, shapes, out_offsets, nbytes, orient):
        self.requests.append([bytes(packed[s:s + n]) for s, n in zip(starts, lengths)])
        future = concurrent.futures.Future()
        future.set_result(self.fails)
        return object(), future

    def close(self):
        self.closed = True


def test_a_batch_goes_to_every_process_and_their_failures_to_the_host():
    import io

    from PIL import Image

    from penstock import _engine
    from penstock.operators import _mixed_decode
    from penstock.tensors import TensorListCPU
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (8 + i, 12, 3), np.uint8) for i in range(7)]
    encoded = []
    for px in images:
        out = io.BytesIO()
        Image.fromarray(px).save(out, "JPEG", quality=95)
        encoded.append(np.frombuffer(out.getvalue(), np.uint8))
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])[:-1]])
    src = TensorListCPU._from_packed(np.concatenate(encoded), np.array([[len(e)] for e in encoded]), offsets,
                                     source_info=[f"img{i}.jpg" for i in range(7)])
    shapes = np.array([px.shape for px in images], np.int64)
    windows = np.zeros((7, 4), np.int64)
    windows[:, 2:] = shapes[:, :2]
    op = _FakeOperator()
    decoder = _mixed_decode.MixedDecoder(op)
    processes = decoder.processes = [_FakeProcess(), _FakeProcess(fails=[1]), _FakeProcess()]
    ws = types.SimpleNamespace(pool=_engine.ThreadPool(2))
    gpu_idx = np.array([0, 1, 3, 4, 5, 6])  # sample 2 is for the host from the start
    try:
        parts, failed, got_gpu, host_idx, host = decoder._decode_sides(ws, src, shapes, None, windows, gpu_idx,
                                                                       np.array([2]))
    finally:
        decoder._release()
    assert all(p.closed for p in processes) and decoder.processes == []
    assert [len(p.requests) for p in processes] == [1, 1, 1]
    received = [b for process in processes for request in process.requests for b in request]
    assert received == [encoded[i].tobytes() for i in gpu_idx]  # in order, each its own bytes
    second = parts[1][2]  # positions (in gpu_idx) the second process had
    assert failed == {int(second[1])}
    assert host_idx.tolist() == [2, int(gpu_idx[second[1]])]
    buf, hshapes, hoffsets = host
    assert hshapes.tolist() == shapes[host_idx].tolist()
    for k, i in enumerate(host_idx):
        decoded = buf[hoffsets[k]:hoffsets[k] + shapes[i].prod()].reshape(shapes[i])
        reference = np.asarray(Image.open(io.BytesIO(encoded[i].tobytes())).convert("RGB"))
        assert np.abs(decoded.astype(int) - reference).mean() < 1  # the host decoded that very image
