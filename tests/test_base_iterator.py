"""The iterator contract shared by the plugins (api.md §15), checked without any framework.

Expected epochs come from a small model written from the spec: the reader's index stream (§10)
and the iterator's size / len / last-batch rules (§15.1-15.2). The real iterator runs over
readers.file on generated files whose label is the file index, so every yielded sample is known.
"""
from __future__ import annotations

import itertools
import logging
import math
import os

import numpy as np
import pytest

from penstock import fn, pipeline_def
from penstock.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

FILL, DROP, PARTIAL = LastBatchPolicy.FILL, LastBatchPolicy.DROP, LastBatchPolicy.PARTIAL


# ---- the model ---------------------------------------------------------------------------------
def bounds(n: int, s_count: int, s: int) -> tuple[int, int]:
    return s * n // s_count, (s + 1) * n // s_count


def reader_batches(n, s_count, s, b, pad, stick):
    """api.md §10: the endless batches of sample indices of shard s. Padding as DALI 2.4 does it:
    the shard is completed to ceil(ceil(N/S)/B)*B samples (for B=1 too), which §10's
    'completes the batch in which the shard ends' understates."""
    if not pad and not stick:
        pos = bounds(n, s_count, s)[0]
        while True:
            yield [(pos + k) % n for k in range(b)]
            pos = (pos + b) % n
    if not pad:
        lo, hi = bounds(n, s_count, s)
        ring = itertools.cycle(range(lo, hi))
        while True:
            yield [next(ring) for _ in range(b)]
    # padding: every shard gives as many samples as the largest one, in whole batches
    padded = math.ceil(math.ceil(n / s_count) / b) * b
    shard = s
    while True:
        lo, hi = bounds(n, s_count, shard)
        samples = list(range(lo, hi)) + [hi - 1] * (padded - (hi - lo))
        for k in range(0, padded, b):
            yield samples[k:k + b]
        shard = shard if stick else (shard + 1) % s_count


def model_reader_iterator(n, s_count, shard_ids, b, policy, pad, stick, epochs):
    """api.md §15.1 with reader_name: [(len at epoch start, [[indices per pipeline] per batch])]."""
    streams = [reader_batches(n, s_count, s, b, pad, stick) for s in shard_ids]
    sizes = [bounds(n, s_count, s)[1] - bounds(n, s_count, s)[0] for s in range(s_count)]
    rotation = 0
    read_ahead = [0] * s_count

    def cur(s):
        return s if stick else (s + rotation) % s_count

    if policy == DROP:
        size = n // s_count
    elif pad:
        size = math.ceil(n / s_count)
    else:
        size = math.ceil(math.ceil(n / s_count) / b) * b
    result = []
    for _ in range(epochs):
        count = size // b if policy == DROP else math.ceil(size / b)
        batches = []
        for k in range(1, count + 1):
            row = []
            for p, s in enumerate(shard_ids):
                batch = next(streams[p])
                if policy == PARTIAL:
                    batch = batch[:max(0, b - max(0, k * b - sizes[cur(s)]))]
                row.append(batch)
            batches.append(row)
        result.append((count, batches))
        if policy == DROP and count * b < size:
            for stream in streams:
                next(stream)  # the incomplete batch is read and discarded
        if policy == FILL and not pad:
            consumed = count * b
            while True:
                for v in range(s_count):
                    read_ahead[v] += consumed - sizes[cur(v)]
                rotation += 1
                left = max(sizes[cur(v)] - read_ahead[v] for v in range(s_count))
                if left > 0:
                    size = math.ceil(left / b) * b
                    break
                consumed = 0  # every shard read this whole epoch ahead: it is skipped
        else:
            rotation += 1
    return result


def model_sized_iterator(size, streams, b, policy, padded, epochs):
    """api.md §15.1-15.2 without reader_name: `size` counts samples over all pipelines."""
    step = b * len(streams)
    counter = 0
    result = []
    for _ in range(epochs):
        length = size // step if policy == DROP else math.ceil(size / step)
        batches = []
        while not (counter >= size or (policy == DROP and counter + step > size)):
            row = [next(s) for s in streams]
            counter += step
            if policy == PARTIAL and counter > size:
                wanted = step - (counter - size)
                row = [r[:min(b, wanted - i * b)] for i, r in enumerate(row) if wanted > i * b]
            batches.append(row)
        result.append((length, batches))
        if policy == DROP and counter < size:
            for s in streams:
                next(s)
        counter = counter % size if policy == FILL and not padded else 0
    return result


# ---- the system under test ---------------------------------------------------------------------
class LabelIterator(_DaliBaseIterator):
    """Yields, per pipeline, the labels (= file indices) of the samples kept."""

    def _convert(self, pipe, outputs, count):
        return [int(x) for x in outputs[0].as_array().reshape(-1)[:count]]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    paths = []
    for i in range(16):
        path = os.path.join(root, f"{i:02d}.bin")
        with open(path, "wb") as f:
            f.write(np.int32(i).tobytes())
        paths.append(path)
    return lambda n: paths[:n]


@pipeline_def(num_threads=1, device_id=None)
def label_pipe(files, shard_id, num_shards, pad, stick):
    _, label = fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, pad_last_batch=pad,
                               stick_to_shard=stick, name="Reader")
    return label


def run_epochs(it, epochs):
    result = []
    for _ in range(epochs):
        iter(it)  # starts the next epoch (a reset) once the previous one is over
        length = len(it)
        result.append((length, list(it)))
    return result


def reader_iterator(dataset, n, s_count, shard_ids, b, policy, pad, stick):
    pipes = [label_pipe(dataset(n), s, s_count, pad, stick, batch_size=b) for s in shard_ids]
    return LabelIterator(pipes, reader_name="Reader", last_batch_policy=policy)


COMBOS = [(n, s, b) for n in (1, 2, 5, 7, 10, 13) for s in (1, 2, 3, 4) for b in (1, 2, 3, 4) if s <= n]


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("pad,stick", [(False, False), (True, False), (False, True), (True, True)])
def test_reader_name_epochs_match_the_model(dataset, policy, pad, stick):
    checked = 0
    for n, s_count, b in COMBOS:
        layouts = [list(range(s_count))] + ([[s_count - 1]] if s_count > 1 else [])
        for shard_ids in layouts:
            if policy == DROP and (n // s_count) // b == 0:
                with pytest.raises(RuntimeError, match="no data"):
                    reader_iterator(dataset, n, s_count, shard_ids, b, policy, pad, stick)
                continue
            it = reader_iterator(dataset, n, s_count, shard_ids, b, policy, pad, stick)
            want = model_reader_iterator(n, s_count, shard_ids, b, policy, pad, stick, epochs=4)
            assert run_epochs(it, 4) == want, (n, s_count, shard_ids, b)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("padded", [False, True])
def test_sized_epochs_match_the_model(dataset, policy, padded):
    for n, size, pipes, b in itertools.product((5, 10), (1, 3, 7, 10, 11), (1, 2), (1, 2, 4)):
        if policy == DROP and size // (pipes * b) == 0:
            continue
        readers = [label_pipe(dataset(n), p, pipes, False, False, batch_size=b) for p in range(pipes)]
        with pytest.warns(Warning, match="size is deprecated"):
            it = LabelIterator(readers, size=size, last_batch_policy=policy, last_batch_padded=padded)
        streams = [reader_batches(n, pipes, p, b, False, False) for p in range(pipes)]
        want = model_sized_iterator(size, streams, b, policy, padded, epochs=4)
        got = run_epochs(it, 4)
        assert got == want, (n, size, pipes, b)


# ---- the spec's verified sequences (api.md §15.1) ---------------------------------------------
def flat(epochs):
    return [(length, ["".join(map(str, row[0])) for row in batches]) for length, batches in epochs]


@pytest.mark.parametrize("policy,pad,stick,shard,want", [
    (FILL, False, False, 0, [(2, ["01", "23"]), (2, ["45", "67"]), (1, ["89"])]),
    (FILL, False, False, 1, [(2, ["34", "56"]), (2, ["78", "90"]), (1, ["12"])]),
    (FILL, False, False, 2, [(2, ["67", "89"]), (2, ["01", "23"]), (1, ["45"])]),
    (FILL, True, False, 0, [(2, ["01", "22"]), (2, ["34", "55"]), (2, ["67", "89"])]),
    (FILL, True, True, 0, [(2, ["01", "22"])] * 3),
    (FILL, False, True, 0, [(2, ["01", "20"]), (2, ["12", "01"]), (2, ["20", "12"])]),
    (DROP, False, False, 0, [(1, ["01"]), (1, ["45"]), (1, ["89"])]),
    (DROP, True, False, 0, [(1, ["01"]), (1, ["34"]), (1, ["67"])]),
])
def test_verified_three_shard_sequences(dataset, policy, pad, stick, shard, want):
    it = reader_iterator(dataset, 10, 3, [shard], 2, policy, pad, stick)
    assert flat(run_epochs(it, 3)) == want


def test_drop_with_batch_larger_than_shard_fails_at_construction(dataset):
    with pytest.raises(RuntimeError, match="no data"):
        reader_iterator(dataset, 10, 3, [0], 4, DROP, False, False)


@pytest.mark.parametrize("policy,pad,want", [
    (FILL, False, [(4, ["01", "23", "45", "60"]), (3, ["12", "34", "56"])]),
    (FILL, True, [(4, ["01", "23", "45", "66"])] * 2),
    (DROP, False, [(3, ["01", "23", "45"]), (3, ["12", "34", "56"])]),
    (DROP, True, [(3, ["01", "23", "45"])] * 2),
    (PARTIAL, False, [(4, ["01", "23", "45", "6"]), (4, ["12", "34", "56", "0"])]),
    (PARTIAL, True, [(4, ["01", "23", "45", "6"])] * 2),
])
def test_verified_single_shard_sequences(dataset, policy, pad, want):
    it = reader_iterator(dataset, 7, 1, [0], 2, policy, pad, False)
    assert flat(run_epochs(it, 2)) == want


# ---- protocol ------------------------------------------------------------------------------------
def test_len_without_reader_name_and_negative_size(dataset):
    it = LabelIterator(label_pipe(dataset(5), 0, 1, False, False, batch_size=3))
    assert len(it) == 0  # ceil(-1/3)
    it = LabelIterator(label_pipe(dataset(5), 0, 1, False, False, batch_size=1))
    with pytest.raises(ValueError):
        len(it)  # ceil(-1/1) = -1 is not a length


@pytest.mark.parametrize("value,resets", [(True, True), ("yes", True), (False, False), ("no", False),
                                          (None, False)])
def test_auto_reset_values(dataset, value, resets):
    it = LabelIterator(label_pipe(dataset(4), 0, 1, False, False, batch_size=2), reader_name="Reader",
                       auto_reset=value)
    assert [next(it), next(it)] == [[[0, 1]], [[2, 3]]]
    with pytest.raises(StopIteration):
        next(it)
    if resets:
        assert next(it) == [[0, 1]]
    else:
        with pytest.raises(StopIteration):
            next(it)


def test_invalid_auto_reset_and_policy(dataset):
    pipe = label_pipe(dataset(4), 0, 1, False, False, batch_size=2)
    with pytest.raises(ValueError):
        LabelIterator(pipe, reader_name="Reader", auto_reset="maybe")
    with pytest.raises(ValueError):
        LabelIterator(pipe, reader_name="Reader", last_batch_policy=1)


def test_argument_validation(dataset):
    pipe = label_pipe(dataset(4), 0, 1, False, False, batch_size=2)
    other = label_pipe(dataset(4), 0, 1, False, False, batch_size=3)
    with pytest.raises(AssertionError):
        LabelIterator(pipe, size=0)
    with pytest.raises(AssertionError):
        LabelIterator([pipe, other], reader_name="Reader")
    with pytest.raises(AssertionError):
        LabelIterator(pipe, size=4, reader_name="Reader")
    with pytest.raises(AssertionError):
        LabelIterator(pipe, reader_name="Reader", last_batch_padded=True)
    with pytest.raises(AssertionError):
        LabelIterator([pipe, label_pipe(dataset(4), 0, 1, False, False, batch_size=2)])  # size -1, 2 pipes


def test_fill_last_batch_maps_to_a_policy(dataset):
    pipe = label_pipe(dataset(3), 0, 1, False, False, batch_size=2)
    with pytest.warns(DeprecationWarning):
        it = LabelIterator(pipe, reader_name="Reader", fill_last_batch=False)
    assert list(it) == [[[0, 1]], [[2]]]


def test_negative_size_forces_fill_and_ends_with_the_source():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.external_source(source=[np.full((2, 1), i, np.int32) for i in range(3)], cycle=False)

    it = LabelIterator(pipe(), last_batch_policy=DROP, last_batch_padded=True, auto_reset=True)
    assert it._policy == FILL
    assert [row for row in it] == [[[0, 0]], [[1, 1]], [[2, 2]]]


def test_for_loop_resets_between_epochs_but_a_fresh_iterator_does_not(dataset):
    it = reader_iterator(dataset, 4, 1, [0], 2, FILL, True, False)
    assert list(iter(it)) == [[[0, 1]], [[2, 3]]]
    assert list(iter(it)) == [[[0, 1]], [[2, 3]]]


def test_reset_mid_epoch_is_ignored(dataset, caplog):
    it = reader_iterator(dataset, 6, 1, [0], 2, FILL, False, False)
    assert next(it) == [[0, 1]]
    with caplog.at_level(logging.WARNING):
        it.reset()
    assert "before the end of its epoch" in caplog.text
    assert [next(it), next(it)] == [[[2, 3]], [[4, 5]]]


def test_reset_after_the_source_ended_starts_it_again():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        def source(info):
            if info.iteration >= 2:
                raise StopIteration
            return [np.array([info.epoch_idx * 10 + info.iteration * 2 + k], np.int32) for k in range(2)]
        return fn.external_source(source=source, batch_info=True)

    it = LabelIterator(pipe())
    assert list(it) == [[[0, 1]], [[2, 3]]]
    it.reset()
    assert list(it) == [[[10, 11]], [[12, 13]]]


def test_prepare_first_batch_false_reads_nothing_at_construction():
    calls = []

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        def source(info):
            calls.append(info.iteration)
            return [np.array([info.iteration], np.int32)]
        return fn.external_source(source=source, batch_info=True)

    it = LabelIterator(pipe(), size=3, prepare_first_batch=False)
    assert calls == []
    assert list(it) == [[[0]], [[1]], [[2]]]


def test_a_pipeline_driven_by_an_iterator_cannot_also_be_run(dataset):
    pipe = label_pipe(dataset(4), 0, 1, False, False, batch_size=2)
    it = LabelIterator(pipe, reader_name="Reader")
    assert next(it) == [[0, 1]]
    with pytest.raises(RuntimeError, match="Mixing pipeline API type"):
        pipe.run()
