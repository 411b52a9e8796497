"""Cases of the dynamic mode's own API (Tensor, Batch, conversions, arithmetic, indexing, evaluation
modes, random state, readers), each a function ``case(ndd, data_dir)`` returning plain Python
values (shapes, type names, element lists, booleans) that must be equal in penstock's and DALI's
dynamic modes. ``data_dir`` holds the files of the reader cases (``make_data``)."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

import numpy as np

CASES: dict[str, Callable[[Any, str], Any]] = {}


def case(f: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    CASES[f.__name__] = f
    return f


def _img(h=6, w=8, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 255, (h, w, c), dtype=np.uint8)


def _desc(x: Any) -> Any:
    """A Tensor or Batch as plain values: kind, shape(s), type name, layout, elements."""
    if hasattr(x, "batch_size"):
        return ("Batch", x.batch_size, [tuple(s) for s in x.shape], str(x.dtype), x.layout,
                [np.asarray(t.cpu()).tolist() for t in x.tensors])
    return ("Tensor", tuple(x.shape), str(x.dtype), x.layout, np.asarray(x.cpu()).tolist())


# ---- construction and conversion ---------------------------------------------------------------
@case
def tensor_from_python(ndd, _):
    return [_desc(ndd.tensor(v)) for v in (5, 2.5, True, [1, 2], [[1.5, 2], [3, 4]], [True, False])]


@case
def tensor_from_numpy_types(ndd, _):
    return [_desc(ndd.tensor(np.arange(6, dtype=t).reshape(2, 3))) for t in
            (np.uint8, np.int16, np.int32, np.int64, np.uint16, np.float32, np.float64, np.bool_)]


@case
def tensor_dtype_conversion(ndd, _):
    return [_desc(ndd.tensor(np.array([1.7, -3.2, 300.0, 0.5, 2.5]), dtype=ndd.uint8)),
            _desc(ndd.tensor(np.array([1.7, -3.2, 2.5]), dtype=ndd.int32)),
            _desc(ndd.tensor([1, 2], dtype=ndd.float64)),
            _desc(ndd.as_tensor(np.array([-1.5, 1.5]), dtype=ndd.int16)),
            _desc(ndd.tensor(ndd.tensor([1.5, 2.5]), dtype=ndd.int32))]


@case
def tensor_layout(ndd, _):
    return [_desc(ndd.tensor(_img(), layout="HWC")), _desc(ndd.tensor(np.zeros((2, 2)), layout="HW"))]


@case
def tensor_layout_mismatch(ndd, _):
    return _desc(ndd.tensor([1, 2], layout="HW"))


@case
def as_tensor_shares_numpy_memory(ndd, _):
    a = np.zeros(3, np.float32)
    t = ndd.as_tensor(a)
    a[0] = 7
    return np.asarray(t).tolist()


@case
def tensor_copies_numpy_memory(ndd, _):
    a = np.zeros(3, np.float32)
    t = ndd.tensor(a)
    a[0] = 7
    return np.asarray(t).tolist()


@case
def tensor_properties(ndd, _):
    t = ndd.tensor(np.zeros((2, 3, 4), np.int16), layout="HWC")
    return (t.shape, t.ndim, t.size, t.nbytes, t.itemsize, str(t.dtype), t.layout, str(t.device),
            t.device.device_type, ndd.tensor(7).item(), ndd.tensor(2.5).item())


@case
def tensor_array_protocols(ndd, _):
    t = ndd.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    return (np.asarray(t).tolist(), np.from_dlpack(t).tolist(), [int(v) for v in t.__dlpack_device__()],
            hasattr(t, "__cuda_array_interface__"), t.cpu() is t)


@case
def batch_from_samples(ndd, _):
    return [_desc(ndd.batch([np.zeros((2, 3), np.float32), np.ones((4, 3), np.float32)], layout="HW")),
            _desc(ndd.batch([[1, 2], [3, 4, 5]])),
            _desc(ndd.batch([ndd.tensor([1.0, 2.0]), ndd.tensor([3.0])])),
            _desc(ndd.batch([[1, 2], [3, 4]], dtype=ndd.float64))]


@case
def batch_from_leading_dimension(ndd, _):
    return [_desc(ndd.as_batch(np.arange(24, dtype=np.uint8).reshape(4, 2, 3))),
            _desc(ndd.batch(np.zeros((2, 5), np.int32), layout="W"))]


@case
def batch_of_nothing_needs_a_type(ndd, _):
    return _desc(ndd.batch([]))


@case
def batch_of_batches_is_refused(ndd, _):
    b = ndd.batch([np.zeros(2)])
    return _desc(ndd.batch([b, b]))


@case
def batch_properties(ndd, _):
    b = ndd.batch([np.zeros((2, 3), np.uint8), np.zeros((4, 3), np.uint8)], layout="HW")
    return (b.batch_size, b.shape, str(b.dtype), b.layout, b.ndim, str(b.device), len(b.tensors))


@case
def batch_samples(ndd, _):
    b = ndd.batch([np.full((i + 1,), i, np.int32) for i in range(4)])
    return (_desc(b.select(1)), _desc(b.select(slice(1, 3))), _desc(b.select([3, 0])), _desc(b.tensors[2]),
            [_desc(t) for t in b], [_desc(t) for t in b.tensors[1:3]], _desc(b.tensors[0:2].as_batch()))


@case
def batch_is_not_subscriptable(ndd, _):
    return _desc(ndd.batch([np.zeros(2)])[0])


@case
def batch_broadcast(ndd, _):
    return [_desc(ndd.Batch.broadcast(ndd.tensor([1, 2]), 3)), _desc(ndd.Batch.broadcast(np.float32(4), 2))]


@case
def as_tensor_of_batch(ndd, _):
    b = ndd.batch([np.zeros((2, 3), np.uint8), np.ones((2, 3), np.uint8)], layout="HW")
    ragged = ndd.batch([[1, 2], [3, 4, 5]])
    return [_desc(ndd.as_tensor(b)), _desc(ndd.tensor(b)), _desc(ndd.as_tensor(ragged, pad=True))]


@case
def as_tensor_of_ragged_batch_fails(ndd, _):
    return _desc(ndd.as_tensor(ndd.batch([[1, 2], [3, 4, 5]])))


@case
def as_batch_of_tensor(ndd, _):
    return _desc(ndd.as_batch(ndd.tensor([[1, 2], [3, 4]])))


@case
def dtypes(ndd, _):
    names = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
             "float64", "bool", "bfloat16"]
    types = [getattr(ndd, n) for n in names]
    return ([str(t) for t in types], [t.bits for t in types], [t.bytes for t in types],
            [str(t.kind) for t in types], [repr(t) for t in types], [t.type_id.name for t in types[:12]],
            str(ndd.dtype("f32")), str(ndd.dtype(np.uint16)), str(ndd.dtype(ndd.int8)), ndd.int8 == ndd.int8,
            ndd.int8 == ndd.uint8, ndd.type_id(ndd.float32).name)


@case
def devices(ndd, _):
    d = ndd.device("cpu")
    return (str(d), repr(d), d.device_type, d.device_id, str(ndd.Device("cpu")), d == ndd.Device("cpu"),
            [ndd.Device.type_from_dlpack(k) for k in (1, 2)], str(ndd.Device.from_dlpack(np.zeros(2))))


@case
def device_from_an_unknown_dlpack_type(ndd, _):
    return ndd.Device.type_from_dlpack(4)


# ---- arithmetic ---------------------------------------------------------------------------------
@case
def arithmetic_on_tensors(ndd, _):
    t = ndd.tensor(np.arange(6, dtype=np.uint8).reshape(2, 3))
    f = ndd.tensor(np.array([[0.5, -1.5, 2.0], [4.0, 0.0, -3.0]], np.float32))
    return [_desc(x) for x in (t + t, t * 2.5, t / 2, t // 2, t % 4, -f, abs(f), t == 3, t < 2, t & 5, t | 8,
                               t ^ 1, t << 1, t >> 1, 1 + t, 10 - t, 2 ** ndd.tensor([1, 2, 3]), f ** 2, ~t)]


@case
def arithmetic_broadcasts_tensor_over_batch(ndd, _):
    b = ndd.batch([np.zeros((2, 3), np.float32), np.ones((4, 3), np.float32)])
    return [_desc(b + 1), _desc(b * ndd.tensor(np.float32(2))), _desc(ndd.tensor(np.float32(3)) - b),
            _desc(b + np.array([1, 2, 3], np.float32)), _desc(b * b)]


@case
def arithmetic_type_promotion(ndd, _):
    u8 = ndd.tensor(np.array([200], np.uint8))
    i8 = ndd.tensor(np.array([-3], np.int8))
    return [str((u8 + i8).dtype), str((u8 + 1).dtype), str((u8 + 1.0).dtype), str((i8 * u8).dtype),
            str((ndd.tensor([True]) + 1).dtype), _desc(u8 + u8)]


@case
def arithmetic_of_booleans_is_refused(ndd, _):
    return _desc(ndd.tensor([True]) + ndd.tensor([False]))


@case
def math_functions(ndd, _):
    f = ndd.tensor(np.array([0.25, 1.0, 4.0], np.float32))
    out = [ndd.math.sqrt(f), ndd.math.rsqrt(f), ndd.math.exp(f), ndd.math.log(f), ndd.math.floor(f * 3),
           ndd.math.ceil(f * 3), ndd.math.sin(f), ndd.math.abs(-f), ndd.math.min(f, 1.0), ndd.math.max(f, 1.0),
           ndd.math.pow(f, 2.0), ndd.math.atan2(f, 1.0), ndd.math.clamp(f, 0.5, 2.0)]
    return [(str(x.dtype), [round(v, 4) for v in np.asarray(x).tolist()]) for x in out]


# ---- indexing -----------------------------------------------------------------------------------
@case
def tensor_indexing(ndd, _):
    t = ndd.tensor(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    return [(x.shape, np.asarray(x).tolist()) for x in
            (t[1], t[1:, ::2], t[..., 0], t[:, 1], t[0, 1, 2], t[-1], t[0:1], t[1, ..., 1:])]


@case
def tensor_indexing_with_none(ndd, _):
    t = ndd.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    return t[:, None].shape


@case
def batch_slice_indexing(ndd, _):
    b = ndd.batch([np.arange(12, dtype=np.int32).reshape(3, 4), np.arange(8, dtype=np.int32).reshape(2, 4)])
    return [_desc(b.slice[0]), _desc(b.slice[1:]), _desc(b.slice[:, ::2]), _desc(b.slice[..., -1])]


@case
def tensor_index_out_of_range(ndd, _):
    return _desc(ndd.tensor([1, 2, 3])[5])


# ---- operators on single samples and batches ----------------------------------------------------
@case
def sample_calls_give_tensors(ndd, _):
    t = ndd.tensor(_img(), layout="HWC")
    return [_desc(ndd.flip(t, horizontal=1)), _desc(ndd.crop(t, crop=(3, 4))),
            _desc(ndd.cast(t, dtype=ndd.float32)), _desc(ndd.transpose(t, perm=[2, 0, 1]))]


@case
def batch_calls_give_batches(ndd, _):
    b = ndd.batch([_img(6, 8), _img(5, 7, seed=1)], layout="HWC")
    return [_desc(ndd.flip(b, vertical=1)), _desc(ndd.resize(b, size=(4, 4))),
            _desc(ndd.crop_mirror_normalize(b, crop=(4, 4), mean=[10.0], std=[2.0]))]


@case
def numpy_and_torch_inputs(ndd, _):
    import torch
    a = _img()
    return [_desc(ndd.flip(a, horizontal=1)), _desc(ndd.flip(torch.from_numpy(a), horizontal=1))]


@case
def per_sample_argument_batches(ndd, _):
    b = ndd.batch([_img(6, 8), _img(6, 8, seed=1)], layout="HWC")
    return _desc(ndd.flip(b, horizontal=ndd.batch(np.array([0, 1], np.int32))))


@case
def tensor_argument_for_a_batch_call(ndd, _):
    b = ndd.batch([_img(6, 8), _img(6, 8, seed=1)], layout="HWC")
    return _desc(ndd.flip(b, horizontal=ndd.tensor(np.int32(1))))


@case
def stack_and_cat(ndd, _):
    t = ndd.tensor(np.arange(6, dtype=np.int32).reshape(2, 3), layout="HW")
    b = ndd.batch([np.zeros((2, 3), np.int32), np.ones((1, 3), np.int32)], layout="HW")
    return [_desc(ndd.stack(t, t)), _desc(ndd.cat(t, t)), _desc(ndd.cat(t, t, axis=1)), _desc(ndd.stack(b, b)),
            _desc(ndd.cat(b, b))]


@case
def several_outputs_give_tuples(ndd, _):
    boxes = ndd.tensor(np.array([[0.1, 0.1, 0.5, 0.5]], np.float32))
    out = ndd.random_bbox_crop(boxes, bbox_layout="xyXY", rng=ndd.random.RNG(seed=1))
    return (type(out).__name__, len(out), [type(o).__name__ for o in out])


@case
def batch_size_of_sources(ndd, _):
    return [_desc_meta(ndd.random.uniform(batch_size=3, range=(0, 1), shape=[2])),
            _desc_meta(ndd.random.uniform(range=(0, 1), shape=[2])),
            _desc_meta(ndd.random.coin_flip(batch_size=4)), _desc_meta(ndd.random.normal(shape=[2, 2]))]


def _desc_meta(x: Any) -> Any:
    kind = "Batch" if hasattr(x, "batch_size") else "Tensor"
    return (kind, x.shape, str(x.dtype), x.layout)


@case
def batch_permutation_needs_a_batch_size(ndd, _):
    return (_desc_meta(ndd.batch_permutation(batch_size=4, rng=ndd.random.RNG(seed=1))),
            _desc(ndd.batch_permutation()))


@case
def inconsistent_batch_sizes(ndd, _):
    a = ndd.batch([np.zeros(2)] * 2)
    return _desc(a + ndd.batch([np.zeros(2)] * 3))


@case
def batch_size_mismatching_the_inputs(ndd, _):
    return _desc(ndd.flip(ndd.batch([_img()] * 2, layout="HWC"), batch_size=3))


@case
def unknown_keyword(ndd, _):
    return _desc(ndd.flip(ndd.tensor(_img(), layout="HWC"), not_an_argument=1))


@case
def missing_input(ndd, _):
    return _desc(ndd.flip())


@case
def seed_is_not_an_argument(ndd, _):
    return _desc(ndd.random.uniform(range=(0, 1), seed=3))


@case
def rng_must_be_an_rng(ndd, _):
    return _desc(ndd.random.uniform(range=(0, 1), rng=3))


@case
def python_types_are_not_data_types(ndd, _):
    return _desc(ndd.cast(ndd.tensor([1]), dtype=float))


@case
def device_not_offered(ndd, _):
    return _desc(ndd.random_bbox_crop(ndd.tensor(np.zeros((1, 4), np.float32)), device="gpu"))


# ---- evaluation ---------------------------------------------------------------------------------
@case
def eval_modes_give_the_same_values(ndd, _):
    out = []
    for mode in (ndd.EvalMode.deferred, ndd.EvalMode.eager, ndd.EvalMode.sync_cpu, ndd.EvalMode.sync_full):
        with mode:
            b = ndd.batch([_img(6, 8), _img(5, 7, seed=1)], layout="HWC")
            out.append(_desc(ndd.resize(ndd.flip(b, horizontal=1), size=(3, 4)) * 2))
    return [o == out[0] for o in out], str(ndd.EvalMode.current()), ndd.EvalMode.default == ndd.EvalMode.eager


@case
def errors_surface_when_read(ndd, _):
    with ndd.EvalMode.deferred:
        bad = ndd.crop(ndd.tensor(np.zeros((4, 4, 3), np.uint8), layout="HWC"), crop=(8, 8),
                       out_of_bounds_policy="error")
    return _desc(bad)


@case
def sync_mode_errors_at_the_call(ndd, _):
    with ndd.EvalMode.sync_cpu:
        ndd.crop(ndd.tensor(np.zeros((4, 4, 3), np.uint8), layout="HWC"), crop=(8, 8), out_of_bounds_policy="error")
    return "no error"


@case
def eval_context(ndd, _):
    ctx = ndd.EvalContext(num_threads=3)
    with ctx:
        current = ndd.EvalContext.current() is ctx
        x = ndd.flip(ndd.tensor(np.arange(6, dtype=np.uint8).reshape(1, 2, 3), layout="HWC"), horizontal=1)
    return (current, ctx.num_threads, ctx.device_id, _desc(x), ndd.EvalContext.current() is ctx,
            ndd.EvalContext.default() is ndd.EvalContext.current())


@case
def thread_count(ndd, _):
    before = ndd.get_num_threads()
    ndd.set_num_threads(3)
    during = (ndd.get_num_threads(), ndd.EvalContext.current().num_threads)
    ndd.set_num_threads(None)
    pool = ndd.ThreadPool(2)
    return during, ndd.get_num_threads() == before, pool.num_threads


@case
def thread_count_must_be_positive(ndd, _):
    return ndd.set_num_threads(0)


@case
def streams_on_the_cpu(ndd, _):
    return (ndd.get_current_stream(), ndd.get_default_stream(), ndd.EvalContext.current().cuda_stream)


# ---- random state -------------------------------------------------------------------------------
@case
def seeding_reproduces_draws(ndd, _):
    def draws():
        return [np.asarray(t).tolist() for t in ndd.random.uniform(batch_size=3, range=(0, 1), shape=[2]).tensors]
    ndd.random.set_seed(5)
    a = draws()
    ndd.random.set_seed(5)
    b = draws()
    c = draws()
    r1 = np.asarray(ndd.random.normal(shape=[4], rng=ndd.random.RNG(seed=9))).tolist()
    r2 = np.asarray(ndd.random.normal(shape=[4], rng=ndd.random.RNG(seed=9))).tolist()
    return a == b, a == c, r1 == r2


@case
def rng_object(ndd, _):
    g = ndd.random.RNG(seed=7)
    words = [g() for _ in range(3)]
    c = g.clone()
    same = [g() for _ in range(5)] == [c() for _ in range(5)]
    s = g.state
    v = g()
    g.state = s
    restored = g() == v
    from_state = ndd.random.RNG(state=str(s))() == v
    h, k = ndd.random.RNG(seed=7), ndd.random.RNG(seed=7)
    h.advance(3)
    for _ in range(3):
        k()
    return (all(0 <= w < 2 ** 32 for w in words), same, restored, from_state, h() == k(),
            isinstance(ndd.random.get_default_rng(), ndd.random.RNG))


@case
def rng_seed_is_write_only(ndd, _):
    return ndd.random.RNG(seed=1).seed


# ---- readers ------------------------------------------------------------------------------------
def _names(batch: Any) -> list:
    return [bytes(np.asarray(t)).decode().strip() for t in batch.tensors]


@case
def file_reader_epochs(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"), random_shuffle=True, seed=3)
    return [[(_names(j), np.asarray(ndd.as_tensor(lab)).ravel().tolist()) for j, lab in r.next_epoch(batch_size=4)]
            for _ in range(2)]


@case
def file_reader_samples(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"))
    return [(type(s).__name__, [type(x).__name__ for x in s], bytes(np.asarray(s[0])).decode().strip(),
             s[1].shape, str(s[1].dtype)) for s in r.next_epoch()]


@case
def file_reader_shards(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"), num_shards=3, shard_id=1, seed=1)
    sticky = ndd.readers.File(file_root=os.path.join(data, "files"), num_shards=3, shard_id=1, stick_to_shard=True)
    padded = ndd.readers.File(file_root=os.path.join(data, "files"), pad_last_batch=True, num_shards=3, shard_id=2)
    return ([[_names(j) for j, _ in r.next_epoch(batch_size=2)] for _ in range(3)],
            [[_names(j) for j, _ in sticky.next_epoch(batch_size=2)] for _ in range(2)],
            [_names(j) for j, _ in padded.next_epoch(batch_size=3)], padded.get_metadata())


@case
def file_reader_metadata(ndd, data):
    return ndd.readers.File(file_root=os.path.join(data, "files"), num_shards=2, shard_id=1).get_metadata()


@case
def file_reader_state_resumes(ndd, data):
    root = os.path.join(data, "files")
    r = ndd.readers.File(file_root=root, random_shuffle=True, seed=3, enable_checkpointing=True)
    it = r.next_epoch(batch_size=4)
    next(it)
    state = r.get_state()
    rest = [_names(j) for j, _ in it] + [_names(j) for j, _ in r.next_epoch(batch_size=4)]
    again = ndd.readers.File(file_root=root, random_shuffle=True, seed=3, enable_checkpointing=True)
    again.set_state(str(state))
    first = next(again.next_epoch(batch_size=4))
    return rest[0], _names(first[0])


@case
def reader_state_needs_checkpointing(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"))
    next(r.next_epoch(batch_size=2))
    return r.get_state()


@case
def reader_state_before_reading(ndd, data):
    return ndd.readers.File(file_root=os.path.join(data, "files"), enable_checkpointing=True).get_state()


@case
def reader_styles_do_not_mix(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"))
    next(r.next_epoch(batch_size=2))
    return next(r.next_epoch())


@case
def reader_batch_size_is_kept(ndd, data):
    r = ndd.readers.File(file_root=os.path.join(data, "files"))
    next(r.next_epoch(batch_size=2))
    return next(r.next_epoch(batch_size=3))


@case
def reader_max_batch_size(ndd, data):
    root = os.path.join(data, "files")
    return ([b[0].batch_size for b in ndd.readers.File(file_root=root, max_batch_size=4).next_epoch()],
            [b[0].batch_size for b in ndd.readers.File(8, file_root=root).next_epoch(batch_size=3)],
            type(ndd.readers.File(file_root=root, max_batch_size=4)()[0]).__name__,
            ndd.readers.File(file_root=root, max_batch_size=4)(batch_size=2)[0].batch_size)


@case
def reader_batch_size_above_the_maximum(ndd, data):
    return next(ndd.readers.File(file_root=os.path.join(data, "files"), max_batch_size=2).next_epoch(batch_size=3))


@case
def reader_batch_size_is_not_a_constructor_argument(ndd, data):
    return ndd.readers.File(file_root=os.path.join(data, "files"), batch_size=4)


@case
def reader_capture_needs_a_batch_size(ndd, data):
    return next(ndd.readers.File(file_root=os.path.join(data, "files")).next_epoch(capture=True))


@case
def reader_unknown_argument(ndd, data):
    return ndd.readers.File(file_rooot=os.path.join(data, "files"))


# ---- checkpoints of readers and generators -------------------------------------------------------
def _draws(rng: Any, n: int = 4) -> list:
    return [rng() for _ in range(n)]


@case
def checkpoint_resumes_readers_and_generators(ndd, data):
    import tempfile
    root = os.path.join(data, "files")
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=3)
    rng = ndd.random.RNG(seed=5)
    ckpt = ndd.checkpoint.Checkpoint()
    names = (ckpt.register(reader, "files"), ckpt.register(rng), ckpt.register(rng))
    epoch = reader.next_epoch(batch_size=3)
    next(epoch)
    _draws(rng)
    ckpt.collect()
    flags = (ckpt.is_complete, ckpt.is_loaded, len(ckpt), "files" in ckpt, ckpt.names)
    with tempfile.TemporaryDirectory() as d:
        pattern = os.path.join(d, "ckpt_{seq:03d}.json")
        saved = [os.path.basename(ckpt.save(pattern)) for _ in range(2)]
        expected = ([_names(j) for j, _ in epoch], _draws(rng))
        resumed = ndd.checkpoint.Checkpoint()
        loaded = os.path.basename(resumed.load(pattern))
        reader2, rng2 = ndd.readers.File(file_root=root, random_shuffle=True, seed=3), ndd.random.RNG(seed=99)
        resumed.register(reader2, "files")
        resumed.register(rng2)
        got = ([_names(j) for j, _ in reader2.next_epoch(batch_size=3)][:len(expected[0])], _draws(rng2))
        return names, flags, saved, loaded, (resumed.is_complete, resumed.is_loaded), got == expected


@case
def checkpoint_current_follows_the_context(ndd, _):
    outer = ndd.checkpoint.current()
    with ndd.EvalContext(num_threads=1) as ctx:
        inner = ndd.checkpoint.current()
        same = inner is ctx.checkpoint
    return outer is ndd.checkpoint.current(), inner is outer, same


@case
def checkpoint_set_state_is_applied_on_register(ndd, _):
    rng = ndd.random.RNG(seed=1)
    state = rng.get_state()
    first = _draws(rng)
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.set_state("g", state, op_type=ndd.random.RNG)
    fresh = ndd.random.RNG(seed=2)
    ckpt.register(fresh, "g")
    return _draws(fresh) == first, ckpt.get_state("g") == state


@case
def checkpoint_restore_applies_pending_states(ndd, _):
    a, b = ndd.random.RNG(seed=1), ndd.random.RNG(seed=2)
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(a, "a")
    ckpt.register(b, "b")
    ckpt.collect()
    text = ckpt.serialize()
    expected = (_draws(a), _draws(b))
    other = ndd.checkpoint.Checkpoint()
    c, d = ndd.random.RNG(seed=7), ndd.random.RNG(seed=8)
    other.register(c, "a")
    other.register(d, "b")
    other.deserialize(text)
    other.restore()
    return (_draws(c), _draws(d)) == expected


@case
def checkpoint_register_after_collect(ndd, _):
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(ndd.random.RNG(seed=1), "a")
    ckpt.collect()
    ckpt.register(ndd.random.RNG(seed=1), "b")


@case
def checkpoint_register_under_another_name(ndd, _):
    ckpt = ndd.checkpoint.Checkpoint()
    rng = ndd.random.RNG(seed=1)
    ckpt.register(rng, "a")
    ckpt.register(rng, "b")


@case
def checkpoint_reserved_name(ndd, _):
    ndd.checkpoint.Checkpoint().register(ndd.random.RNG(seed=1), "__op_3")


@case
def checkpoint_replacing_with_another_type(ndd, data):
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(ndd.random.RNG(seed=1), "a")
    ckpt.register(ndd.readers.File(file_root=os.path.join(data, "files")), "a")


@case
def checkpoint_state_of_another_type(ndd, data):
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.set_state("a", ndd.random.RNG(seed=1).get_state(), op_type="RNG")
    ckpt.register(ndd.readers.File(file_root=os.path.join(data, "files")), "a")


@case
def checkpoint_of_a_reader_that_read_without_checkpointing(ndd, data):
    reader = ndd.readers.File(file_root=os.path.join(data, "files"))
    next(reader.next_epoch(batch_size=2))
    ndd.checkpoint.Checkpoint().register(reader, "r")


@case
def checkpoint_loaded_without_the_name(ndd, _):
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(ndd.random.RNG(seed=1), "a")
    ckpt.collect()
    other = ndd.checkpoint.Checkpoint()
    other.deserialize(ckpt.serialize())
    other.register(ndd.random.RNG(seed=1), "b")


@case
def checkpoint_unknown_name(ndd, _):
    return ndd.checkpoint.Checkpoint().get_state("nothing")


@case
def checkpoint_empty_serialize(ndd, _):
    return ndd.checkpoint.Checkpoint().serialize()


@case
def checkpoint_garbage(ndd, _):
    ndd.checkpoint.Checkpoint().deserialize('{"states": 3}')


@case
def checkpoint_load_without_a_file(ndd, _):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        ndd.checkpoint.Checkpoint().load(os.path.join(d, "ckpt_{seq}.json"))


@case
def checkpoint_restore_with_a_state_missing(ndd, _):
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(ndd.random.RNG(seed=1), "a")
    ckpt.register(ndd.random.RNG(seed=1), "b")
    ckpt.set_state("a", ndd.random.RNG(seed=3).get_state())
    ckpt.restore()


@case
def numpy_reader(ndd, data):
    r = ndd.readers.Numpy(file_root=os.path.join(data, "npy"), file_filter="*.npy", seed=2)
    return [[_desc(b) for b in out] for out in r.next_epoch(batch_size=2)]


@case
def tfrecord_reader(ndd, data):
    tfrec = _tfrec_module(ndd)
    r = ndd.readers.TFRecord(path=os.path.join(data, "tf", "data.tfrecord"),
                             index_path=os.path.join(data, "tf", "data.idx"),
                             features={"label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
                                       "values": tfrec.VarLenFeature(tfrec.float32, 0.0)}, seed=1)
    return [{k: _desc(v) for k, v in out.items()} for out in r.next_epoch(batch_size=2)]


def _tfrec_module(ndd):
    if ndd.__name__.startswith("penstock"):
        import penstock.tfrecord as tfrec
    else:
        import nvidia.dali.tfrecord as tfrec
    return tfrec


@case
def webdataset_reader(ndd, data):
    r = ndd.readers.Webdataset(paths=[os.path.join(data, "wds", "shard.tar")], ext=["txt", "cls"],
                               missing_component_behavior="error", seed=1)
    return [[_desc(b) for b in out] for out in r.next_epoch(batch_size=2)]


@case
def coco_reader(ndd, data):
    r = ndd.readers.COCO(file_root=os.path.join(data, "coco", "images"),
                         annotations_file=os.path.join(data, "coco", "ann.json"), seed=1, ltrb=True)
    return [[_desc(b) for b in out[1:]] + [[len(np.asarray(t)) for t in out[0].tensors]]
            for out in r.next_epoch(batch_size=2)]


@case
def nemo_asr_reader(ndd, data):
    manifest = os.path.join(data, "nemo", "manifest.json")
    r = ndd.readers.NemoAsr(manifest_filepaths=[manifest], dtype=ndd.int16, read_idxs=True, random_shuffle=True,
                            seed=3)
    epoch = [[_desc(b) for b in out] for out in r.next_epoch(batch_size=2)]
    resampled = ndd.readers.NemoAsr(manifest_filepaths=[manifest], downmix=False, sample_rate=8000.0)
    return epoch, [_desc_meta(b) for b in next(resampled.next_epoch(batch_size=3))], resampled.get_metadata()


@case
def speech_features(ndd, data):
    wavs = sorted(os.path.join(data, "nemo", f) for f in os.listdir(os.path.join(data, "nemo")) if f.endswith(".wav"))
    audio, rate = ndd.decoders.audio(ndd.batch([np.fromfile(f, np.uint8) for f in wavs]), downmix=True)
    mel = ndd.mel_filter_bank(ndd.spectrogram(audio, nfft=64, window_length=64, window_step=32), sample_rate=16000.0)
    db = ndd.to_decibels(mel, cutoff_db=-60.0)
    # the decibels agree to float precision (test_audio.py compares them within 1e-3 dB): compared here by
    # the loudest band of each frame and the count of values within 30 dB of the top
    return (_desc(rate), db.shape, [np.asarray(t).argmax(axis=0).tolist() for t in db.tensors],
            [int((np.asarray(t) > -30).sum()) for t in db.tensors])


@case
def imread_and_decode(ndd, data):
    files = sorted(os.path.join(data, "jpegs", f) for f in os.listdir(os.path.join(data, "jpegs")))
    one = ndd.imread(files[0])
    many = ndd.imread(files)
    shapes = ndd.peek_image_shape(ndd.batch([np.fromfile(f, np.uint8) for f in files]))
    return (_desc_meta(one), _desc_meta(many), _desc(shapes),
            [int(np.asarray(t).astype(np.int64).sum()) for t in many.tensors])


@case
def decode_then_resize_in_deferred_mode(ndd, data):
    files = sorted(os.path.join(data, "jpegs", f) for f in os.listdir(os.path.join(data, "jpegs")))
    with ndd.EvalMode.deferred:
        out = ndd.resize(ndd.decoders.image(ndd.batch([np.fromfile(f, np.uint8) for f in files])),
                         resize_shorter=20)
    # decoding for a downscaling resize may decode smaller in the DCT domain: levels within 1 of DALI's
    return out.shape, [round(float(np.asarray(t).mean())) for t in out.tensors]


# ---- the files the reader cases read -------------------------------------------------------------
def make_data(root: str) -> None:
    """Writes the datasets of the reader cases under ``root``."""
    import io
    import json
    import sys
    import tarfile
    import wave
    from PIL import Image
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from make_sample_data import photo_like, tf_example, tfrecord_record
    import penstock.tfrecord as tfrec
    for d in ("a", "b"):
        os.makedirs(os.path.join(root, "files", d), exist_ok=True)
        for i in range(5):
            with open(os.path.join(root, "files", d, f"{i}.jpg"), "w") as f:
                f.write(f"{d}{i}\n")
    os.makedirs(os.path.join(root, "npy"))
    for i in range(5):
        np.save(os.path.join(root, "npy", f"{i}.npy"), np.arange(i + 2, dtype=np.float32).reshape(1, -1) * i)
    os.makedirs(os.path.join(root, "tf"))
    with open(os.path.join(root, "tf", "data.tfrecord"), "wb") as f:
        for i in range(5):
            f.write(tfrecord_record(tf_example({"label": [i], "values": [0.5 * i] * (i % 3 + 1)})))
    tfrec.make_index(os.path.join(root, "tf", "data.tfrecord"), os.path.join(root, "tf", "data.idx"))
    os.makedirs(os.path.join(root, "wds"))
    with tarfile.open(os.path.join(root, "wds", "shard.tar"), "w") as tar:
        for i in range(5):
            for ext, payload in (("txt", f"sample {i}".encode()), ("cls", str(i).encode())):
                info = tarfile.TarInfo(f"s{i}.{ext}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    rng = np.random.default_rng(4)
    os.makedirs(os.path.join(root, "coco", "images"))
    os.makedirs(os.path.join(root, "jpegs"))
    images, anns = [], []
    for i in range(4):
        h, w = 30 + 4 * i, 40 + 6 * i
        Image.fromarray(photo_like(rng, h, w)).save(os.path.join(root, "coco", "images", f"{i}.jpg"), quality=90)
        Image.fromarray(photo_like(rng, h, w)).save(os.path.join(root, "jpegs", f"{i}.jpg"), quality=90)
        images.append({"id": i + 1, "file_name": f"{i}.jpg", "width": w, "height": h})
        anns.append({"id": i, "image_id": i + 1, "category_id": 1 + i % 2, "bbox": [1.0, 2.0, 10.0 + i, 8.0],
                     "iscrowd": 0, "segmentation": [[1, 2, 11, 2, 11, 10]], "area": 80.0})
    with open(os.path.join(root, "coco", "ann.json"), "w") as f:
        json.dump({"images": images, "annotations": anns,
                   "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}, f)
    os.makedirs(os.path.join(root, "nemo"))
    entries = []
    for i, (rate, channels, frames) in enumerate([(16000, 1, 400), (22050, 2, 441), (8000, 1, 800), (16000, 1, 160)]):
        path = os.path.join(root, "nemo", f"{i}.wav")
        t = np.arange(frames)[:, None] / rate
        pcm = (8000 * np.sin(2 * np.pi * (220 + 110 * i) * t + np.arange(channels))).astype(np.int16)
        with wave.open(path, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(pcm.tobytes())
        entries.append({"audio_filepath": path, "duration": frames / rate, "text": f"utterance {i}"})
    entries[1].update(offset=0.005, duration=0.01)
    with open(os.path.join(root, "nemo", "manifest.json"), "w") as f:
        f.write("\n".join(json.dumps(e) for e in entries) + "\n")


# ---- running a case -----------------------------------------------------------------------------
@dataclasses.dataclass
class ApiCase:
    name: str
    data_dir: str


def run_api(ndd: Any, case: ApiCase) -> tuple:
    """("value", plain values) or ("error", the builtin class that catches it, first message line)."""
    from _harness import BUILTIN_ERRORS, _first_line
    try:
        return ("value", CASES[case.name](ndd, case.data_dir))
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        cls = next(c for c in type(e).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return ("error", cls.__name__, _first_line(e))


def run_dali_api(case: ApiCase) -> tuple:
    import nvidia.dali.experimental.dynamic as dali_ndd
    return run_api(dali_ndd, case)
