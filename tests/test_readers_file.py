"""readers.file: sources of samples, and the reader sharding contract of api.md §10."""
import itertools
import os

import numpy as np
import pytest

from penstock import fn, pipeline_def, types


def _files(tmp_path, n, prefix="f"):
    paths = []
    for i in range(n):
        p = tmp_path / f"{prefix}{i:03d}.bin"
        p.write_bytes(bytes([i % 256]) * (i % 3 + 1))
        paths.append(str(p))
    return paths


def _labels_stream(files, batch, iters, **reader_kw):
    """Runs one reader and returns the list of per-batch label lists."""
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=1234)
    def p():
        _, label = fn.readers.file(files=files, name="R", **reader_kw)
        return label

    pipe = p()
    out = []
    for _ in range(iters):
        (lab,) = pipe.run()
        out.append([int(lab.at(i)[0]) for i in range(len(lab))])
    return out, pipe


# ---- independent model of the reader's index stream (api.md §10) -------------------------------

def model_stream(n, num_shards, shard_id, batch, pad, stick, num_batches):
    def bounds(s):
        return s * n // num_shards, (s + 1) * n // num_shards

    def flat():
        if not pad:
            if stick:
                b, e = bounds(shard_id)
                yield from itertools.cycle(range(b, e))
            else:
                start = bounds(shard_id)[0]
                while True:
                    yield from range(start, n)
                    start = 0
        # With padding every shard gives as many samples as the largest shard in whole batches,
        # ceil(ceil(N/S)/B)*B, repeating its last sample (checked against DALI 2.4: with B=1 too).
        padded = -(-(-(-n // num_shards)) // batch) * batch
        s = shard_id
        while True:
            b, e = bounds(s)
            seg = list(range(b, e))
            seg += [e - 1] * (padded - len(seg))
            yield from seg
            if not stick:
                s = (s + 1) % num_shards

    it = flat()
    return [[next(it) for _ in range(batch)] for _ in range(num_batches)]


def test_model_matches_spec_examples():
    # the verified sequences of §10 / §15.1, as a sanity check of the model itself
    assert model_stream(10, 3, 0, 2, False, False, 6) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [0, 1]]
    assert model_stream(10, 3, 0, 4, True, False, 4) == [[0, 1, 2, 2], [3, 4, 5, 5], [6, 7, 8, 9],
                                                          [0, 1, 2, 2]]
    assert model_stream(10, 3, 0, 2, False, True, 4) == [[0, 1], [2, 0], [1, 2], [0, 1]]
    # padding fills every shard to the largest shard's length, even with batch 1 (DALI 2.4)
    assert model_stream(5, 2, 0, 1, True, False, 6) == [[0], [1], [1], [2], [3], [4]]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 11])
@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_sharding_contract_property(tmp_path, n, batch):
    files = _files(tmp_path, n)
    configs = [(S, s, pad, stick)
               for S in range(1, min(n, 4) + 1) for s in range(S)
               for pad in (False, True) for stick in (False, True)]
    iters = (3 * n) // batch + 3

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=7)
    def p():
        outs = []
        for k, (S, s, pad, stick) in enumerate(configs):
            _, label = fn.readers.file(files=files, num_shards=S, shard_id=s, pad_last_batch=pad,
                                       stick_to_shard=stick, name=f"r{k}")
            outs.append(label)
        return tuple(outs)

    pipe = p()
    got = [[] for _ in configs]
    for _ in range(iters):
        res = pipe.run()
        for k, lab in enumerate(res):
            got[k].append([int(lab.at(i)[0]) for i in range(len(lab))])
    for k, (S, s, pad, stick) in enumerate(configs):
        want = model_stream(n, S, s, batch, pad, stick, iters)
        assert got[k] == want, f"N={n} S={S} s={s} B={batch} pad={pad} stick={stick}"
        meta = pipe.reader_meta(f"r{k}")
        assert meta["epoch_size"] == n
        assert meta["epoch_size_padded"] == (S * -(-n // S) if pad else n)
        assert meta["number_of_shards"] == S and meta["shard_id"] == s
        assert meta["pad_last_batch"] == int(pad) and meta["stick_to_shard"] == int(stick)


@pytest.mark.parametrize("shard, expected", [
    (0, [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [0, 1]]),
    (1, [[3, 4], [5, 6], [7, 8], [9, 0], [1, 2]]),
    (2, [[6, 7], [8, 9], [0, 1], [2, 3], [4, 5]]),
])
def test_verified_default_stream(tmp_path, shard, expected):
    got, _ = _labels_stream(_files(tmp_path, 10), 2, len(expected), num_shards=3, shard_id=shard)
    assert got == expected


def test_verified_pad_stream(tmp_path):
    files = _files(tmp_path, 10)
    got, _ = _labels_stream(files, 2, 7, num_shards=3, shard_id=0, pad_last_batch=True)
    assert got == [[0, 1], [2, 2], [3, 4], [5, 5], [6, 7], [8, 9], [0, 1]]
    got, _ = _labels_stream(files, 2, 4, num_shards=3, shard_id=0, pad_last_batch=True,
                            stick_to_shard=True)
    assert got == [[0, 1], [2, 2], [0, 1], [2, 2]]
    got, _ = _labels_stream(files, 2, 6, num_shards=3, shard_id=0, stick_to_shard=True)
    assert got == [[0, 1], [2, 0], [1, 2], [0, 1], [2, 0], [1, 2]]
    got, _ = _labels_stream(files, 4, 4, num_shards=3, shard_id=0, pad_last_batch=True)
    assert got == [[0, 1, 2, 2], [3, 4, 5, 5], [6, 7, 8, 9], [0, 1, 2, 2]]


def test_verified_single_shard_n7(tmp_path):
    files = _files(tmp_path, 7)
    got, _ = _labels_stream(files, 2, 7)
    assert got == [[0, 1], [2, 3], [4, 5], [6, 0], [1, 2], [3, 4], [5, 6]]
    got, _ = _labels_stream(files, 2, 8, pad_last_batch=True)
    assert got == [[0, 1], [2, 3], [4, 5], [6, 6]] * 2


def test_reader_meta_and_epoch_size(tmp_path):
    files = _files(tmp_path, 10)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        _, a = fn.readers.file(files=files, num_shards=3, shard_id=1, pad_last_batch=True, name="A")
        _, b = fn.readers.file(files=files, num_shards=4, shard_id=3, name="B")
        return a, b

    pipe = p()
    ma = pipe.reader_meta("A")
    assert ma == {"epoch_size": 10, "epoch_size_padded": 12, "number_of_shards": 3, "shard_id": 1,
                  "pad_last_batch": 1, "stick_to_shard": 0}
    assert type(ma["pad_last_batch"]) is int and type(ma["stick_to_shard"]) is int
    assert pipe.reader_meta("B")["epoch_size_padded"] == 10
    with pytest.raises(RuntimeError):
        pipe.reader_meta("nope")
    assert pipe.epoch_size("A") == 12
    assert pipe.epoch_size() == {"A": 12, "B": 10}
    assert set(pipe.reader_meta()) == {"A", "B"}


# ---- data / labels ---------------------------------------------------------------------------

def test_data_and_label_format(tmp_path):
    files = _files(tmp_path, 3)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        return tuple(fn.readers.file(files=files))

    data, label = p().run()
    assert data.dtype == types.UINT8 and label.dtype == types.INT32
    assert label.shape() == [(1,), (1,), (1,)]
    for i in range(3):
        assert data.at(i).tobytes() == open(files[i], "rb").read()
        assert data.at(i).ndim == 1


def test_file_root_classes(tmp_path):
    root = tmp_path / "root"
    content = {"zebra": ["a.jpg", "b.jpg"], "apple": ["c.jpg"], "mango": ["d.png", "e.jpg"]}
    for cls, names in content.items():
        (root / cls).mkdir(parents=True)
        for nm in names:
            (root / cls / nm).write_bytes(nm.encode())
    n = 5

    @pipeline_def(batch_size=n, num_threads=1, device_id=None)
    def p():
        return tuple(fn.readers.file(file_root=str(root)))

    data, label = p().run()
    got = sorted((bytes(data.at(i)).decode(), int(label.at(i)[0])) for i in range(n))
    # classes are sorted directory names: apple=0, mango=1, zebra=2
    assert got == [("a.jpg", 2), ("b.jpg", 2), ("c.jpg", 0), ("d.png", 1), ("e.jpg", 1)]


def test_file_list(tmp_path):
    files = _files(tmp_path, 3)
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{os.path.basename(f)} {10 + i}\n" for i, f in enumerate(files)))

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        return tuple(fn.readers.file(file_list=str(lst)))

    data, label = p().run()
    assert [int(label.at(i)[0]) for i in range(3)] == [10, 11, 12]
    assert data.at(2).tobytes() == open(files[2], "rb").read()


def test_files_and_labels(tmp_path):
    files = _files(tmp_path, 4)
    got, _ = _labels_stream(files, 4, 1, labels=[7, 3, 9, 1])
    assert got == [[7, 3, 9, 1]]
    got, _ = _labels_stream(files, 4, 1)
    assert got == [[0, 1, 2, 3]]


def test_files_labels_length_mismatch(tmp_path):
    files = _files(tmp_path, 3)
    with pytest.raises(Exception):
        _labels_stream(files, 1, 1, labels=[1, 2])


def test_missing_source_errors(tmp_path):
    with pytest.raises(Exception):
        _labels_stream(None, 1, 1)


def test_source_info(tmp_path):
    files = _files(tmp_path, 2)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(files=files)
        return data

    (data,) = p().run()
    assert data[0].source_info() == files[0]


# ---- shuffling -------------------------------------------------------------------------------

def test_random_shuffle_deterministic_with_seed(tmp_path):
    files = _files(tmp_path, 10)
    a, _ = _labels_stream(files, 3, 6, random_shuffle=True, initial_fill=5, seed=42)
    b, _ = _labels_stream(files, 3, 6, random_shuffle=True, initial_fill=5, seed=42)
    c, _ = _labels_stream(files, 3, 6, random_shuffle=True, initial_fill=5, seed=43)
    assert a == b
    assert a != c
    plain, _ = _labels_stream(files, 3, 6)
    assert a != plain


def test_random_shuffle_is_local_permutation(tmp_path):
    n, fill, batch, iters = 8, 4, 4, 30
    files = _files(tmp_path, n)
    got, _ = _labels_stream(files, batch, iters, random_shuffle=True, initial_fill=fill, seed=5)
    flat = [x for b in got for x in b]
    k = len(flat)
    # every output is a sample of the underlying stream, each consumed once: after k outputs the
    # stream has advanced k + fill samples, of which fill are still in the buffer
    counts = np.bincount(flat, minlength=n)
    lo = (k + fill) // n - fill
    hi = -(-(k + fill) // n)
    assert counts.min() >= lo and counts.max() <= hi
    assert set(flat) == set(range(n))


def test_shuffle_after_epoch(tmp_path):
    n = 8
    files = _files(tmp_path, n)
    got, pipe = _labels_stream(files, 4, 6, shuffle_after_epoch=True, seed=3)
    epochs = [got[2 * e] + got[2 * e + 1] for e in range(3)]
    for ep in epochs:
        assert sorted(ep) == list(range(n))
    assert epochs[0] != epochs[1] or epochs[1] != epochs[2]
    assert pipe.reader_meta("R")["stick_to_shard"] == 1


def test_shuffle_after_epoch_identical_across_shards(tmp_path):
    n = 8
    files = _files(tmp_path, n)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def p():
        _, a = fn.readers.file(files=files, shuffle_after_epoch=True, num_shards=2, shard_id=0,
                               seed=11, name="a")
        _, b = fn.readers.file(files=files, shuffle_after_epoch=True, num_shards=2, shard_id=1,
                               seed=11, name="b")
        return a, b

    pipe = p()
    for _ in range(3):
        a, b = pipe.run()
        ep = [int(a.at(i)[0]) for i in range(4)] + [int(b.at(i)[0]) for i in range(4)]
        assert sorted(ep) == list(range(n))


@pytest.mark.parametrize("bad", [dict(random_shuffle=True), dict(stick_to_shard=True)])
def test_shuffle_after_epoch_conflicts(tmp_path, bad):
    files = _files(tmp_path, 4)
    with pytest.raises(Exception):
        _labels_stream(files, 2, 1, shuffle_after_epoch=True, **bad)


def test_bad_shard_id(tmp_path):
    files = _files(tmp_path, 4)
    with pytest.raises(Exception):
        _labels_stream(files, 2, 1, num_shards=2, shard_id=2)


def test_reader_independent_of_threads_and_prefetch(tmp_path):
    files = _files(tmp_path, 9)
    ref = None
    for threads, depth in [(1, 1), (2, 2), (3, 3)]:
        @pipeline_def(batch_size=4, num_threads=threads, device_id=None, prefetch_queue_depth=depth)
        def p():
            d, lab = fn.readers.file(files=files, random_shuffle=True, initial_fill=3, seed=9)
            return d, lab

        pipe = p()
        got = []
        for _ in range(5):
            d, lab = pipe.run()
            got.append(([d.at(i).tobytes() for i in range(4)], lab.as_array().tolist()))
        if ref is None:
            ref = got
        assert got == ref


def _tree(tmp_path):
    root = tmp_path / "tree"
    for cls, names in {"a": ["x.jpg", "y.txt", "Z.JPG"], "b": ["w.png"]}.items():
        (root / cls).mkdir(parents=True)
        for nm in names:
            (root / cls / nm).write_bytes(nm.encode())
    return root


def _read_all(bs, **kw):
    @pipeline_def(batch_size=bs, num_threads=1, device_id=None)
    def p():
        return tuple(fn.readers.file(name="R", **kw))

    pipe = p()
    data, label = pipe.run()
    return ([(bytes(data.at(i)).decode(), int(label.at(i)[0])) for i in range(bs)],
            pipe.reader_meta("R")["epoch_size"])


def test_file_root_default_filters_case_insensitive(tmp_path):
    root = _tree(tmp_path)
    got, n = _read_all(3, file_root=str(root))
    assert n == 3  # y.txt is not matched by the default (image/audio) filters
    assert sorted(got) == [("Z.JPG", 0), ("w.png", 1), ("x.jpg", 0)]
    got, n = _read_all(2, file_root=str(root), case_sensitive_filter=True)
    assert n == 2 and sorted(got) == [("w.png", 1), ("x.jpg", 0)]


def test_file_root_custom_filters(tmp_path):
    root = _tree(tmp_path)
    got, n = _read_all(1, file_root=str(root), file_filters=["*.txt"])
    assert n == 1 and got == [("y.txt", 0)]
    got, n = _read_all(2, file_root=str(root), dir_filters=["b"])
    assert n == 1 and got == [("w.png", 0), ("w.png", 0)]


def test_files_relative_to_file_root(tmp_path):
    root = _tree(tmp_path)
    got, n = _read_all(2, file_root=str(root), files=["a/x.jpg", "b/w.png"])
    assert got == [("x.jpg", 0), ("w.png", 1)]


def test_missing_file_errors_at_run(tmp_path):
    with pytest.raises(Exception, match="nope"):
        _read_all(1, files=[str(tmp_path / "nope")])


def test_lazy_init(tmp_path):
    files = _files(tmp_path, 3)
    got, pipe = _labels_stream(files, 2, 2, lazy_init=True)
    assert got == [[0, 1], [2, 0]]
    assert pipe.reader_meta("R")["epoch_size"] == 3


@pytest.mark.parametrize("n,batch,fill,shards", [(20, 8, 1024, 1), (20, 8, 7, 1), (13, 4, 1024, 3), (9, 5, 2, 2)])
def test_random_shuffle_every_epoch_is_a_permutation(tmp_path, n, batch, fill, shards):
    """The buffer hands out one shard pass at a time, even when it holds several epochs: each
    pass has distinct samples, the same set whenever the same shard comes round, and all shards
    together are the dataset."""
    files = _files(tmp_path, n)
    sizes = [(s + 1) * n // shards - s * n // shards for s in range(shards)]
    got, _ = _labels_stream(files, batch, 16, random_shuffle=True, initial_fill=fill, seed=7, shard_id=0,
                            num_shards=shards)
    flat = [x for b in got for x in b]
    seen = {}
    pos, shard = 0, 0
    while pos + sizes[shard] <= len(flat):
        chunk = flat[pos:pos + sizes[shard]]
        assert len(set(chunk)) == len(chunk), (pos, chunk)
        assert seen.setdefault(shard, sorted(chunk)) == sorted(chunk)
        pos += sizes[shard]
        shard = (shard + 1) % shards
    assert sorted(x for v in seen.values() for x in v) == list(range(n))


def test_random_shuffle_list_order_is_shared_by_shards(tmp_path):
    """With initial_fill=1 only the list is shuffled: shards split one permuted list."""
    files = _files(tmp_path, 10)
    orders = [_labels_stream(files, 5, 1, random_shuffle=True, initial_fill=1, num_shards=2, shard_id=s)[0][0]
              for s in (0, 1)]
    assert sorted(orders[0] + orders[1]) == list(range(10))
    assert orders[0] + orders[1] != list(range(10))


@pytest.mark.parametrize("bad", [dict(num_shards=2, shard_id=2), dict(shuffle_after_epoch=True, random_shuffle=True),
                                 dict(num_shards=0)])
def test_argument_errors_are_runtime_and_value_errors(tmp_path, bad):
    files = _files(tmp_path, 4)
    with pytest.raises(RuntimeError) as e:
        _labels_stream(files, 2, 1, **bad)
    assert isinstance(e.value, ValueError)
    assert "readers.file" in str(e.value)


def test_source_info_is_relative_to_file_root(tmp_path):
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / "x.jpg").write_bytes(b"1")
    (tmp_path / "list.txt").write_text("b/x.jpg 1\na/x.jpg 0\n")
    for kw, want in [(dict(file_root=str(tmp_path)), ["a/x.jpg", "b/x.jpg"]),
                     (dict(file_root=str(tmp_path), files=["b/x.jpg", "a/x.jpg"]), ["b/x.jpg", "a/x.jpg"]),
                     (dict(file_list=str(tmp_path / "list.txt")), ["b/x.jpg", "a/x.jpg"])]:
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def p():
            data, label = fn.readers.file(**kw)
            return data, label

        data, label = p().run()
        assert [data[i].source_info() for i in range(2)] == want
        assert [label[i].source_info() for i in range(2)] == want


@pytest.mark.parametrize("depth", [1, 3])
def test_reader_reads_ahead_on_its_own_thread(tmp_path, depth):
    """The files of the next prefetch_queue_depth batches are read while the current one is used."""
    files = _files(tmp_path, 12)

    # the pipeline itself does not run ahead: what was read early was read by the reader
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, exec_async=False, exec_pipelined=False)
    def p():
        data, label = fn.readers.file(files=files, prefetch_queue_depth=depth, name="R")
        return data, label

    pipe = p()
    pipe.run()
    reader = next(op for op in pipe._ops if op.name == "R")
    assert len(reader._ahead) == depth
    for future in reader._ahead:
        future.result()
    for path in files[2:4 + 2 * depth]:  # batches 1..depth are already read; batch depth+1 is not
        os.remove(path)
    for k in range(1, 1 + depth):
        data, label = pipe.run()
        assert [int(label.at(i)[0]) for i in range(2)] == [2 * k, 2 * k + 1]
        assert data.at(0).tobytes() == bytes([2 * k]) * (2 * k % 3 + 1)
    with pytest.raises(RuntimeError):
        pipe.run()  # the next batch was read after the removal


def test_the_read_ahead_thread_ends_with_its_pipeline_even_while_the_reader_lives_on(tmp_path):
    import gc
    import threading
    import time

    def native_readers() -> set:  # the engine's read-ahead threads, by their OS names
        found = set()
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/comm") as f:
                    if f.read().strip() == "penstock-reader":
                        found.add(task)
            except OSError:  # ended meanwhile
                pass
        return found - {str(t.native_id) for t in threading.enumerate()}
    files = _files(tmp_path, 8)
    before, native_before = set(threading.enumerate()), native_readers()
    out, pipe = _labels_stream(files, 2, 2)
    reader = pipe._readers["R"]  # something keeps the reader: its threads must still end
    started = [t for t in threading.enumerate() if t not in before and t.name.startswith("penstock-reader")]
    native = native_readers() - native_before
    assert started and native  # it read ahead (local files: on the engine's thread)
    del pipe
    gc.collect()
    for t in started:
        t.join(timeout=5)
    deadline = time.monotonic() + 5
    while native & native_readers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in started if t.is_alive()]
    assert not native & native_readers()
    assert reader.size == 8


def test_shuffle_after_epoch_seed_chooses_the_permutations(tmp_path):
    files = _files(tmp_path, 16)

    def epochs(**kw):
        got, _ = _labels_stream(files, 8, 6, shuffle_after_epoch=True, **kw)
        return [got[2 * e] + got[2 * e + 1] for e in range(3)]

    default, seeded = epochs(), epochs(shuffle_after_epoch_seed=99)
    assert default == epochs(shuffle_after_epoch_seed=524287)  # DALI's fixed seed is the default
    assert seeded == epochs(shuffle_after_epoch_seed=99, seed=5)  # the same whatever the pipeline's seed
    assert all(sorted(ep) == list(range(16)) for ep in seeded) and seeded != default
