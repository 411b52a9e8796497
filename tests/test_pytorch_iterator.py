"""penstock.plugin.pytorch: iterators, the DLPack hand-off, types, feed_ndarray (api.md §16)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.pipeline import Pipeline  # noqa: E402
from penstock.plugin.pytorch import (DALIClassificationIterator, DALIGenericIterator,  # noqa: E402
                                     DALIRaggedIterator, LastBatchPolicy, feed_ndarray, to_torch_type)
from penstock.tensors import TensorListCPU  # noqa: E402

from test_base_iterator import (COMBOS, dataset, label_pipe, model_reader_iterator,  # noqa: E402,F401
                                model_sized_iterator, reader_batches)
from _util import batches_pipe, record_outputs  # noqa: E402






def test_returns_one_dict_per_pipeline_with_named_cpu_tensors(dataset):
    pipes = [label_pipe(dataset(6), s, 2, False, False, batch_size=3) for s in range(2)]
    it = DALIGenericIterator(pipes, ["label"], reader_name="Reader")
    batch = next(it)
    assert isinstance(batch, list) and len(batch) == 2
    assert [sorted(d) for d in batch] == [["label"], ["label"]]
    assert all(d["label"].device.type == "cpu" and d["label"].dtype == torch.int32 for d in batch)
    assert [d["label"].reshape(-1).tolist() for d in batch] == [[0, 1, 2], [3, 4, 5]]
    assert batch[0]["label"].shape == (3, 1)  # readers give labels of shape (1,)


def test_cpu_outputs_are_handed_over_without_a_copy():
    arrays = [np.arange(12, dtype=np.float32).reshape(2, 6) + 100 * i for i in range(3)]
    pipe = batches_pipe(arrays, 2)
    seen = record_outputs(pipe)
    it = DALIGenericIterator(pipe, ["x"])
    got = [b[0]["x"] for b in it]
    assert [t.data_ptr() for t in got] == [out[0].data_ptr() for out in seen]
    assert [t.numpy().tolist() for t in got] == [a.tolist() for a in arrays]


def test_partial_slices_are_views_of_the_same_memory(dataset):
    pipe = label_pipe(dataset(5), 0, 1, False, False, batch_size=4)
    seen = record_outputs(pipe)
    it = DALIGenericIterator(pipe, ["label"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
    batches = [b[0]["label"] for b in it]
    assert [t.reshape(-1).tolist() for t in batches] == [[0, 1, 2, 3], [4]]
    assert batches[1].data_ptr() == seen[1][0].data_ptr()


TORCH_OF_NUMPY = {np.float32: torch.float32, np.float64: torch.float64, np.float16: torch.float16,
                  np.uint8: torch.uint8, np.uint16: torch.uint16, np.uint32: torch.uint32,
                  np.uint64: torch.uint64, np.int8: torch.int8, np.int16: torch.int16,
                  np.int32: torch.int32, np.int64: torch.int64, np.bool_: torch.bool}


def test_to_torch_type_maps_every_numeric_type_exactly():
    want = {types.to_dali_type(np.dtype(k)): v for k, v in TORCH_OF_NUMPY.items()}
    assert to_torch_type == want


@pytest.mark.parametrize("np_type", list(TORCH_OF_NUMPY))
def test_output_dtypes_map_exactly(np_type):
    data = (np.arange(6).reshape(2, 3) % 2).astype(np_type)
    it = DALIGenericIterator(batches_pipe([data], 2), ["x"])
    out = next(it)[0]["x"]
    assert out.dtype == TORCH_OF_NUMPY[np_type]
    assert np.array_equal(out.numpy(), data)


def test_classification_iterator_names_data_and_label(dataset):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return tuple(fn.readers.file(files=dataset(4), name="Reader"))

    it = DALIClassificationIterator(pipe(), reader_name="Reader")
    batch = next(it)[0]
    assert sorted(batch) == ["data", "label"]
    # every file holds its index as int32 bytes: the data is the label, in raw form
    assert batch["data"].view(torch.int32).reshape(-1).tolist() == batch["label"].reshape(-1).tolist() == [0, 1]


def test_legacy_positional_size_and_fill_last_batch(dataset):
    pipe = label_pipe(dataset(5), 0, 1, False, False, batch_size=2)
    with pytest.warns(DeprecationWarning):
        it = DALIGenericIterator(pipe, ["label"], 5, fill_last_batch=False)
    assert len(it) == 3
    assert [b[0]["label"].reshape(-1).tolist() for b in it] == [[0, 1], [2, 3], [4]]
    pipe = label_pipe(dataset(5), 0, 1, False, False, batch_size=1)
    it = DALIGenericIterator(pipe, ["images"], 1)
    assert it.size == 1 and len(it) == 1
    assert next(it)[0]["images"].tolist() == [[0]]


def test_classification_iterator_positional_size(dataset):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return tuple(fn.readers.file(files=dataset(4), name="Reader"))

    p = pipe()
    it = DALIClassificationIterator(p, p.epoch_size("Reader"))
    assert len(it) == 2 and [b[0]["label"].reshape(-1).tolist() for b in it] == [[0, 1], [2, 3]]


def test_output_map_must_be_distinct_and_match_the_outputs(dataset):
    pipe = label_pipe(dataset(4), 0, 1, False, False, batch_size=2)
    with pytest.raises(AssertionError):
        DALIGenericIterator(pipe, ["a", "a"], reader_name="Reader")
    with pytest.raises(RuntimeError, match="output_map"):
        DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["a", "b"],
                            reader_name="Reader")


def test_ragged_batches_need_the_ragged_iterator():
    ragged = [np.arange(n, dtype=np.int16) for n in (1, 3)]
    with pytest.raises(RuntimeError, match="DALIRaggedIterator"):
        DALIGenericIterator(batches_pipe([ragged], 2), ["x"])


def test_ragged_iterator_outputs():
    samples = [np.arange(2 * n, dtype=np.float32).reshape(n, 2) + 10 * n for n in (1, 3, 2)]
    dense = np.ones((3, 4), np.uint8)
    pipe = batches_pipe([(samples, dense, samples)], 3, num_outputs=3)
    seen = record_outputs(pipe)
    tags = [DALIRaggedIterator.SPARSE_LIST_TAG, DALIRaggedIterator.DENSE_TAG, DALIRaggedIterator.SPARSE_COO_TAG]
    it = DALIRaggedIterator(pipe, ["list", "dense", "coo"], output_types=tags, dynamic_shape=True)
    out = next(it)[0]
    assert [t.tolist() for t in out["list"]] == [s.tolist() for s in samples]
    assert [t.data_ptr() for t in out["list"]] == [seen[0][0][i].data_ptr() for i in range(3)]
    assert out["dense"].tolist() == dense.tolist()
    coo = out["coo"]
    assert coo.is_sparse and coo.shape == (3, 3, 2)
    padded = np.zeros((3, 3, 2), np.float32)
    for i, s in enumerate(samples):
        padded[i, :len(s)] = s
    assert np.array_equal(coo.to_dense().numpy(), padded)


def test_ragged_iterator_partial_keeps_the_epoch_samples(dataset):
    pipe = label_pipe(dataset(3), 0, 1, False, False, batch_size=2)
    it = DALIRaggedIterator(pipe, ["label"], reader_name="Reader", output_types=["sparse_list"],
                            last_batch_policy=LastBatchPolicy.PARTIAL)
    assert [[int(t) for t in b[0]["label"]] for b in it] == [[0, 1], [2]]


def test_feed_ndarray_copies_into_a_preallocated_tensor():
    tl = TensorListCPU(np.arange(6, dtype=np.int32).reshape(2, 3))
    target = torch.zeros(2, 3, dtype=torch.int32)
    assert feed_ndarray(tl, target) is target
    assert target.tolist() == [[0, 1, 2], [3, 4, 5]] and target.data_ptr() != tl.data_ptr()
    strided = torch.zeros(3, 2, dtype=torch.int32).t()
    feed_ndarray(tl, strided)
    assert strided.tolist() == [[0, 1, 2], [3, 4, 5]]
    sample = torch.zeros(3, dtype=torch.int32)
    feed_ndarray(tl[1], sample)
    assert sample.tolist() == [3, 4, 5]
    # DALI's words, which code written for DALI matches
    with pytest.raises(AssertionError, match=r"Shapes do not match: DALI tensor has size \[2, 3\], but PyTorch "
                                             r"Tensor has size \[3, 2\]"):
        feed_ndarray(tl, torch.zeros(3, 2, dtype=torch.int32))
    with pytest.raises(AssertionError, match="The element type of DALI Tensor/TensorList doesn't match the element "
                                             "type of the target PyTorch Tensor: torch.int32 vs torch.float32"):
        feed_ndarray(tl, torch.zeros(2, 3, dtype=torch.float32))


@pytest.mark.parametrize("auto_reset", [True, "yes"])
def test_auto_reset_and_next_alias(dataset, auto_reset):
    it = DALIGenericIterator(label_pipe(dataset(4), 0, 1, True, False, batch_size=2), ["label"],
                             reader_name="Reader", auto_reset=auto_reset)
    epochs = [[b[0]["label"].reshape(-1).tolist() for b in it] for _ in range(2)]
    assert epochs == [[[0, 1], [2, 3]]] * 2
    assert it.next()[0]["label"].reshape(-1).tolist() == [0, 1]


def test_len_is_what_a_progress_bar_needs(dataset):
    """tqdm(it) takes its total from len(it), before iterating: with auto_reset the iterator has
    already moved to the next epoch, so len() must equal the batches that epoch yields."""
    for n, s_count, b in COMBOS[::3]:
        for policy in LastBatchPolicy:
            if policy == LastBatchPolicy.DROP and (n // s_count) // b == 0:
                continue
            it = DALIGenericIterator(label_pipe(dataset(n), 0, s_count, False, False, batch_size=b),
                                     ["label"], reader_name="Reader", last_batch_policy=policy,
                                     auto_reset=True)
            for _ in range(3):
                total = len(it)
                assert total == sum(1 for _ in it), (n, s_count, b, policy)


def to_rows(epochs):
    return [(length, [[d["label"].reshape(-1).tolist() for d in row] for row in batches])
            for length, batches in epochs]


def test_torch_iterator_epochs_match_the_model(dataset):
    for (n, s_count, b), policy, pad in itertools.product(COMBOS[::2], LastBatchPolicy, (False, True)):
        if policy == LastBatchPolicy.DROP and (n // s_count) // b == 0:
            continue
        shard_ids = list(range(s_count))
        it = DALIGenericIterator([label_pipe(dataset(n), s, s_count, pad, False, batch_size=b) for s in shard_ids],
                                 ["label"], reader_name="Reader", last_batch_policy=policy)
        got = []
        for _ in range(3):
            iter(it)
            got.append((len(it), list(it)))
        assert to_rows(got) == model_reader_iterator(n, s_count, shard_ids, b, policy, pad, False, 3)


def test_legacy_partial_truncates_the_pipeline_list(dataset):
    pipes = [label_pipe(dataset(10), p, 2, False, False, batch_size=2) for p in range(2)]
    with pytest.warns(Warning):
        it = DALIGenericIterator(pipes, ["label"], size=5, last_batch_policy=LastBatchPolicy.PARTIAL)
    streams = [reader_batches(10, 2, p, 2, False, False) for p in range(2)]
    want = model_sized_iterator(5, streams, 2, LastBatchPolicy.PARTIAL, False, 1)
    got = [(len(it), list(it))]
    assert to_rows(got) == want
    assert [len(row) for row in got[0][1]] == [2, 1]  # the last batch comes from one pipeline only


def test_iter_setup_feed_input_pipeline_with_positional_size():
    """The 1.x pattern: a Pipeline subclass feeding an ExternalSource from iter_setup."""
    from penstock import ops

    class FeedPipe(Pipeline):
        def __init__(self):
            super().__init__(1, 1, 0)
            self.input = ops.ExternalSource()
            self.calls = 0

        def define_graph(self):
            self.values = self.input()
            return self.values

        def iter_setup(self):
            self.calls += 1
            self.feed_input(self.values, [np.full((2, 2), self.calls, np.uint8)], layout="HW")

    pipe = FeedPipe()
    pipe.build()
    it = DALIGenericIterator(pipe, ["images"], 1)
    assert next(it)[0]["images"].tolist() == [[[1, 1], [1, 1]]]


# ---- checkpoints ---------------------------------------------------------------------------------
def _ckpt_pipes(files, shards, checkpoints=None, **reader_kw):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5, enable_checkpointing=True)
    def pipe(shard_id):
        _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=shards, random_shuffle=True,
                                   initial_fill=3, name="Reader", **reader_kw)
        return label, fn.random.uniform(range=(0, 1))
    cps = checkpoints or [None] * shards
    return [pipe(s, checkpoint=c) for s, c in zip(range(shards), cps)]


def _drive_iterator(it, steps):
    events = []
    for _ in range(steps):
        try:
            events.append([(d["label"].numpy().ravel().tolist(), d["u"].numpy().ravel().tolist()) for d in next(it)])
        except StopIteration:
            events.append("end")
            it.reset()
    return events


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("pad", [False, True])
def test_iterator_checkpoints_resume_exactly_over_epochs(dataset, policy, pad):
    files = dataset(7)

    def make(checkpoints=None):
        return DALIGenericIterator(_ckpt_pipes(files, 2, checkpoints, pad_last_batch=pad), ["label", "u"],
                                   reader_name="Reader", last_batch_policy=policy)
    steps = 14
    reference = _drive_iterator(make(), steps)
    assert reference.count("end") >= 3
    for stop in (0, 1, 2, 3, 5, 9):
        it = make()
        head = _drive_iterator(it, stop)
        cps = it.checkpoints()
        assert len(cps) == 2 and all(isinstance(c, bytes) for c in cps)
        assert head + _drive_iterator(make(cps), steps - stop) == reference, stop


def test_iterator_state_dict_rewinds_a_running_iterator(dataset):
    files = dataset(7)
    it = DALIGenericIterator(_ckpt_pipes(files, 1), ["label", "u"], reader_name="Reader", auto_reset=True)
    reference = _drive_iterator(DALIGenericIterator(_ckpt_pipes(files, 1), ["label", "u"], reader_name="Reader",
                                                    auto_reset=True), 12)
    head = _drive_iterator(it, 5)
    state = it.state_dict()
    assert set(state) == {"checkpoints"}
    _drive_iterator(it, 4)           # runs on past the saved state ...
    it.load_state_dict(state)        # ... and comes back to it
    assert head + _drive_iterator(it, 7) == reference


def test_iterator_checkpoints_need_enable_checkpointing(dataset):
    it = DALIGenericIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), ["label"],
                             reader_name="Reader")
    with pytest.raises(RuntimeError, match="checkpointing is not enabled"):
        it.checkpoints()


@pytest.mark.parametrize("old,new,steps", [(4, 2, 1), (2, 4, 2), (4, 2, 0)])
def test_ranks_resized_mid_epoch_see_the_rest_of_it_once(dataset, old, new, steps):
    """Data parallel layout, each rank its own iterator over its own pipeline: all ranks save after
    ``steps`` batches; the new ranks, each given every old rank's checkpoint, split the rest of the
    epoch (each remaining sample once, one len() for all), then read whole epochs of their own."""
    files = dataset(15)

    def rank_iterators(shards, checkpoints=None):
        return [DALIGenericIterator([pipe], ["label", "u"], reader_name="Reader",
                                    last_batch_policy=LastBatchPolicy.PARTIAL)
                for pipe in _ckpt_pipes(files, shards, checkpoints, pad_last_batch=True)]

    def labels(batches):
        return [i for b in batches for i in b[0]["label"].numpy().ravel().tolist()]

    before = rank_iterators(old)
    seen = [i for it in before for i in labels([next(it) for _ in range(steps)])]
    saved = [it.checkpoints()[0] for it in before]
    after = rank_iterators(new, [saved] * new)
    assert len({len(it) for it in after}) == 1
    rest = [labels(list(it)) for it in after]
    assert len({len(r) for r in rest}) <= 2 and sorted(seen + sum(rest, [])) == list(range(15))
    epoch = [labels(list(it)) for it in after]
    assert sorted(sum(epoch, [])) == list(range(15))


@pytest.mark.parametrize("policy", [LastBatchPolicy.FILL, LastBatchPolicy.PARTIAL, LastBatchPolicy.DROP])
def test_iterators_over_elastically_restored_pipelines_keep_the_epoch_exact(dataset, policy):
    files = dataset(13)

    def iterator(shards, checkpoints=None):
        return DALIGenericIterator(_ckpt_pipes(files, shards, checkpoints, pad_last_batch=True), ["label", "u"],
                                   reader_name="Reader", last_batch_policy=policy)

    def labels(batch):
        return [i for d in batch for i in d["label"].numpy().ravel().tolist()]

    old = iterator(2)
    seen = labels(next(old)) + labels(next(old))  # two batches of 2 samples on each of 2 shards
    new = iterator(3, [old.checkpoints()] * 3)
    rest = [i for batch in new for i in labels(batch)]
    if policy == LastBatchPolicy.PARTIAL:
        assert sorted(seen + rest) == list(range(13))  # exactly the rest of the epoch
    elif policy == LastBatchPolicy.FILL:
        assert set(seen + rest) == set(range(13))      # the last batch is filled with padding repeats
    else:
        assert len(rest) % 6 == 0 and not set(seen) & set(rest)  # whole batches of the rest only
    for _ in range(2):  # then whole epochs of three shards
        epoch = [i for batch in new for i in labels(batch)]
        if policy == LastBatchPolicy.PARTIAL:
            assert sorted(epoch) == list(range(13))
        elif policy == LastBatchPolicy.FILL:
            assert set(epoch) == set(range(13))
        else:
            assert len(set(epoch)) == len(epoch) == len(new) * 6
