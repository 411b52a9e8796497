"""penstock.plugin.jax on one device: DALIGenericIterator, data_iterator and the peekable iterator (api.md §17).

Multi-device placement (NamedSharding, pmap-style stacking over devices) is in test_jax_multidevice.py,
jax.distributed in test_jax_distributed.py.
"""
from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")
import jax.numpy as jnp  # noqa: E402

from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.plugin.jax import DALIGenericIterator, LastBatchPolicy, data_iterator  # noqa: E402
from penstock.plugin.jax.clu import DALIGenericPeekableIterator, peekable_data_iterator  # noqa: E402

from test_base_iterator import dataset, label_pipe, model_reader_iterator  # noqa: E402,F401
from _util import batches_pipe, record_outputs  # noqa: E402

FILL, DROP, PARTIAL = LastBatchPolicy.FILL, LastBatchPolicy.DROP, LastBatchPolicy.PARTIAL
HOST = jax.local_devices(backend="cpu")[0]






def labels(array) -> list[int]:
    return np.asarray(array).reshape(-1).tolist()


def test_one_pipeline_gives_one_dict_of_host_arrays():
    batches = [np.arange(12, dtype=np.int16).reshape(3, 4) * (i + 1) for i in range(3)]
    got = list(DALIGenericIterator(batches_pipe(batches, 3), ["x"]))
    assert all(isinstance(b, dict) and list(b) == ["x"] for b in got)
    assert all(isinstance(b["x"], jax.Array) and b["x"].devices() == {HOST} for b in got)
    assert all(b["x"].dtype == jnp.int16 for b in got)
    assert [np.asarray(b["x"]).tolist() for b in got] == [a.tolist() for a in batches]


def test_host_outputs_are_handed_over_without_a_copy():
    data = [np.arange(2 * 512 * 512, dtype=np.int32).reshape(2, 512, 512) + i for i in range(3)]  # 2 MB: pooled

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.cast(fn.external_source(source=data, cycle=False), dtype=types.FLOAT)

    p = pipe()
    seen = record_outputs(p)
    got = [b["x"] for b in DALIGenericIterator(p, ["x"])]
    assert all(out[0].data_ptr() % 64 == 0 for out in seen)  # pooled buffers are aligned, so JAX aliases them
    assert [a.unsafe_buffer_pointer() for a in got] == [out[0].data_ptr() for out in seen]
    assert all(np.array_equal(np.asarray(a), d.astype(np.float32)) for a, d in zip(got, data))


def test_arrays_feed_jitted_functions():
    batches = [np.random.default_rng(i).normal(size=(4, 5)).astype(np.float32) for i in range(2)]
    it = DALIGenericIterator(batches_pipe(batches, 4), ["x"])
    step = jax.jit(lambda x: (x * 2).sum(axis=1))
    for b, ref in zip(it, batches):
        np.testing.assert_allclose(np.asarray(step(b["x"])), (ref * 2).sum(axis=1), rtol=1e-6)


def test_partial_policy_is_rejected(dataset):
    with pytest.raises(AssertionError, match="JAX iterator does not support partial last batch policy"):
        DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                            reader_name="Reader", last_batch_policy=PARTIAL)


def test_output_map_must_be_distinct_and_match_the_outputs(dataset):
    with pytest.raises(AssertionError, match="distinct"):
        DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["a", "a"])
    with pytest.raises(RuntimeError, match="output_map"):
        DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["a", "b"])


def test_ragged_batches_are_refused():
    with pytest.raises(RuntimeError, match="different shapes"):
        DALIGenericIterator(batches_pipe([[np.zeros(2, np.float32), np.zeros(3, np.float32)]], 2), ["x"])


def to_rows(epochs, stacked):
    """Iterator epochs as the model's rows: [[labels per pipeline] per batch]."""
    return [(length, [[labels(p) for p in b["label"]] if stacked else [labels(b["label"])] for b in batches])
            for length, batches in epochs]


@pytest.mark.parametrize("policy", [FILL, DROP])
@pytest.mark.parametrize("pad", [False, True])
def test_epochs_and_len_match_the_model(dataset, policy, pad):
    """Several pipelines on one device without a sharding are stacked as (pipelines, batch, ...)."""
    for n, s_count, b in [(7, 1, 2), (10, 3, 2), (13, 2, 4), (5, 4, 1)]:
        if policy == DROP and (n // s_count) // b == 0:
            continue
        shard_ids = list(range(s_count))
        pipes = [label_pipe(dataset(n), s, s_count, pad, False, batch_size=b) for s in shard_ids]
        it = DALIGenericIterator(pipes, ["label"], reader_name="Reader", last_batch_policy=policy)
        got = []
        for _ in range(3):
            iter(it)
            got.append((len(it), list(it)))
        assert to_rows(got, s_count > 1) == model_reader_iterator(n, s_count, shard_ids, b, policy, pad, False, 3)
        if s_count > 1:
            assert got[0][1][0]["label"].shape == (s_count, b, 1)


def test_auto_reset_lets_for_loops_run_epoch_after_epoch(dataset):
    it = DALIGenericIterator(label_pipe(dataset(5), 0, 1, False, False, batch_size=2), ["label"],
                             reader_name="Reader", auto_reset=True)
    epochs = [[labels(b["label"]) for b in it] for _ in range(2)]
    assert epochs == [[[0, 1], [2, 3], [4, 0]], [[1, 2], [3, 4]]]


def test_pmap_compatible_stacks_a_single_pipeline(dataset):
    it = DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                             reader_name="Reader", pmap_compatible=True)
    batch = next(it)
    assert batch["label"].shape == (1, 2, 1) and labels(batch["label"]) == [0, 1]


def test_sharding_and_pmap_compatible_exclude_each_other(dataset):
    sharding = jax.sharding.SingleDeviceSharding(HOST)
    with pytest.raises(ValueError, match="pmap_compatible"):
        DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                            sharding=sharding, pmap_compatible=True)


def test_single_device_sharding_gives_a_global_array_with_that_sharding(dataset):
    sharding = jax.sharding.SingleDeviceSharding(HOST)
    it = DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                             reader_name="Reader", sharding=sharding)
    batch = next(it)
    assert batch["label"].sharding == sharding and labels(batch["label"]) == [0, 1]


# ---- data_iterator --------------------------------------------------------------------------------
def test_data_iterator_takes_the_iterator_arguments():
    """The decorator's arguments are the iterator's (DALI's own tests hold the two to this)."""
    def names(f, drop):
        return [p for p in inspect.signature(f).parameters if p not in drop]

    for decorator, iterator in ((data_iterator, DALIGenericIterator),
                                (peekable_data_iterator, DALIGenericPeekableIterator)):
        assert names(decorator, {"pipeline_fn", "devices"}) == names(iterator.__init__, {"self", "pipelines"})


def test_data_iterator_bare_and_as_decorator(dataset):
    files = dataset(6)

    def graph(scale):
        _, label = fn.readers.file(files=files, name="Reader")
        return label * scale

    bare = data_iterator(graph, output_map=["label"], reader_name="Reader")
    decorated = data_iterator(output_map=["label"], reader_name="Reader")(graph)
    for make in (bare, decorated):
        it = make(3, batch_size=4, seed=5, prefetch_queue_depth=1)
        assert isinstance(it, DALIGenericIterator) and len(it) == 2
        assert [labels(b["label"]) for b in it] == [[0, 3, 6, 9], [12, 15, 0, 3]]
        pipe = it._pipes[0]
        assert (pipe.num_threads, pipe.device_id, pipe.seed, pipe.prefetch_queue_depth) == (4, 0, 5, 1)


def test_data_iterator_passes_num_threads_and_device_id_when_given(dataset):
    @data_iterator(output_map=["label"], reader_name="Reader", last_batch_policy=DROP)
    def make():
        _, label = fn.readers.file(files=dataset(5), name="Reader")
        return label

    it = make(batch_size=2, num_threads=2, device_id=None)
    assert (it._pipes[0].num_threads, it._pipes[0].device_id) == (2, None)
    assert [labels(b["label"]) for b in it] == [[0, 1], [2, 3]]


def test_data_iterator_sharding_and_devices_exclude_each_other():
    with pytest.raises(ValueError, match="Only one of `sharding` and `devices`"):
        data_iterator(lambda: None, output_map=["x"], sharding=jax.sharding.SingleDeviceSharding(HOST),
                      devices=[HOST])


def _drive_jax(it, steps):
    events = []
    for _ in range(steps):
        try:
            b = next(it)
            events.append((labels(b["label"]), np.asarray(b["u"]).ravel().tolist()))
        except StopIteration:
            events.append("end")
            it.reset()
    return events


@pytest.mark.parametrize("policy", [FILL, DROP])
def test_data_iterator_resumes_from_checkpoints(dataset, policy):
    @data_iterator(output_map=["label", "u"], reader_name="Reader", last_batch_policy=policy)
    def make():
        _, label = fn.readers.file(files=dataset(7), random_shuffle=True, initial_fill=3, name="Reader")
        return label, fn.random.uniform(range=(0, 1))

    kw = dict(batch_size=2, device_id=None, seed=3, enable_checkpointing=True)
    reference = _drive_jax(make(**kw), 12)
    assert reference.count("end") >= 2
    for stop in (0, 2, 4, 7):
        it = make(**kw)
        head = _drive_jax(it, stop)
        cps = it.checkpoints()
        assert head + _drive_jax(make(checkpoints=cps, **kw), 12 - stop) == reference, stop


def test_checkpoints_need_enable_checkpointing(dataset):
    @data_iterator(output_map=["label"], reader_name="Reader")
    def make():
        _, label = fn.readers.file(files=dataset(4), name="Reader")
        return label

    with pytest.raises(RuntimeError, match="checkpointing is not enabled"):
        make(batch_size=2, device_id=None).checkpoints()


# ---- peekable -------------------------------------------------------------------------------------
def peekable(dataset, n=5, b=2, pad=True, **kw):
    @peekable_data_iterator(output_map=["label"], reader_name="Reader", **kw)
    def make():
        _, label = fn.readers.file(files=dataset(n), pad_last_batch=pad, name="Reader")
        return label
    return make(batch_size=b)


def test_peek_returns_the_next_element_without_consuming_it(dataset):
    it = peekable(dataset)
    first = it.peek()
    assert it.peek() is first and labels(first["label"]) == [0, 1]
    assert next(it) is first
    assert labels(next(it)["label"]) == [2, 3]
    assert labels(it.peek_async().result()["label"]) == [4, 4]
    assert labels(next(it)["label"]) == [4, 4]
    with pytest.raises(StopIteration):
        next(it)


def test_element_spec_describes_every_output(dataset):
    it = peekable(dataset, b=3)
    spec = it.element_spec
    assert (spec["label"].shape, spec["label"].dtype) == ((3, 1), jnp.int32)
    assert labels(next(it)["label"]) == [0, 1, 2]  # element_spec peeked, nothing was lost


def test_changing_shapes_are_refused():
    @peekable_data_iterator(output_map=["x"])
    def make():
        return fn.external_source(source=[np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)],
                                  cycle=False, batch=True)

    it = make(batch_size=2)
    next(it)
    with pytest.raises(ValueError, match="keep the shapes"):
        next(it)


def test_is_nonpadding_marks_the_samples_of_the_epoch(dataset):
    it = peekable(dataset, n=5, b=2, pad=True)
    masks = [(labels(b["label"]), it.is_nonpadding.tolist()) for b in it]
    assert masks == [([0, 1], [True, True]), ([2, 3], [True, True]), ([4, 4], [True, False])]
    it = peekable(dataset, n=5, b=4, pad=False, auto_reset=True)
    first = [(labels(b["label"]), it.is_nonpadding.tolist()) for b in it]
    second = [(labels(b["label"]), it.is_nonpadding.tolist()) for b in it]
    assert first == [([0, 1, 2, 3], [True] * 4), ([4, 0, 1, 2], [True, False, False, False])]
    # the next epoch starts where the reader is (3), and ends with the shard (4)
    assert second == [([3, 4, 0, 1], [True, True, False, False])]


def test_peeked_element_keeps_iter_from_resetting(dataset):
    it = peekable(dataset, n=4, b=2)
    assert labels(next(it)["label"]) == [0, 1]
    it.peek()
    assert [labels(b["label"]) for b in iter(it)] == [[2, 3]]


def test_checkpoints_refused_while_a_peeked_element_is_pending(dataset):
    it = peekable(dataset)
    it.peek()
    with pytest.raises(RuntimeError, match="peeked"):
        it.checkpoints()


def test_peek_and_next_from_several_threads_see_every_element_once(dataset):
    it = peekable(dataset, n=12, b=2, pad=False)
    from concurrent.futures import ThreadPoolExecutor

    def take(_):
        try:
            return labels(next(it)["label"])
        except StopIteration:
            return None

    with ThreadPoolExecutor(3) as pool:
        got = [r for r in pool.map(take, range(8)) if r is not None]
    assert sorted(itertools.chain.from_iterable(got)) == list(range(12))
