"""The PyTorch iterators over every combination of their epoch options, on penstock and DALI:
size / reader_name, auto_reset (all its spellings), last_batch_policy and the deprecated
fill_last_batch, last_batch_padded, over readers (plain and shuffled) and external sources
(cyclic batches, a generator that ends, a per-sample callback), sample by sample over several
epochs, driven by for-loops with reset() and by bare next() calls."""
import itertools
import logging
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import penstock  # noqa: E402
from _harness import HAVE_DALI, settle  # noqa: E402
from known_differences import INTENDED, OPEN  # noqa: E402

ROOT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "penstock_differential_files")


def _files(n):
    os.makedirs(ROOT, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(ROOT, f"f{i:03d}.bin")
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(bytes([i]))
        paths.append(p)
    return paths


def _pipe(lib, source, n, b):
    data = [np.array([i], np.int32) for i in range(n)]

    @lib.pipeline_def(batch_size=b, num_threads=1, device_id=None, seed=3)
    def pipe():
        if source in ("reader", "shuffled", "shuffled_pipeline_seed"):
            seed = {} if source == "shuffled_pipeline_seed" else {"seed": 11}  # else from the pipeline's
            _, label = lib.fn.readers.file(files=_files(n), random_shuffle=source != "reader", name="Reader",
                                           **seed)
            return label
        if source == "batches":
            batches = [np.stack([data[(k * b + j) % n] for j in range(b)]) for k in range(3)]
            return lib.fn.external_source(source=batches, cycle=True)
        if source == "generator":
            def gen():
                for k in range(-(-n // b)):
                    yield [data[j] for j in range(k * b, min(n, k * b + b))]
            return lib.fn.external_source(source=gen, cycle="raise")
        return lib.fn.external_source(source=lambda info: data[info.idx_in_epoch % n], batch=False)
    return pipe()


def _plugin(lib):
    if lib is penstock:
        from penstock.plugin import pytorch
        return pytorch
    from nvidia.dali.plugin import pytorch
    return pytorch


def _epochs(lib, source, n, b, kwargs, drive):
    """What the iterator yields: per epoch (len, batches), up to and including the first error."""
    plugin = _plugin(lib)
    kw = dict(kwargs)
    if "policy" in kw:
        kw["last_batch_policy"] = plugin.LastBatchPolicy[kw.pop("policy")]
    try:
        it = plugin.DALIGenericIterator(_pipe(lib, source, n, b), ["x"], **kw)
    except Exception as e:  # noqa: BLE001
        return [f"constructor: {type(e).__name__}"]
    result = []
    try:
        if drive == "next":
            for _ in range(12):
                try:
                    result.append(next(it)[0]["x"].reshape(-1).tolist())
                except StopIteration:
                    result.append("StopIteration")
            return result
        for _ in range(3):
            epoch = []
            try:
                for batch in it:
                    epoch.append(batch[0]["x"].reshape(-1).tolist())
                    if len(epoch) > 12:
                        break
            except StopIteration:
                epoch.append("StopIteration")
            result.append((len(it), epoch))
            if drive == "reset":
                it.reset()
    except Exception as e:  # noqa: BLE001 - after an error DALI's iterator is not usable: stop here
        result.append(type(e).__name__)
    return result


def _cases():
    cases = []
    for (n, b), size, auto_reset, policy, padded, drive, source in itertools.product(
            [(5, 2), (8, 3)], [-1, 4, 5, 7, 12], [False, True, "yes", "no", None],
            ["FILL", "DROP", "PARTIAL", "fill_last_batch=True", "fill_last_batch=False"], [False, True],
            ["reset", "next", "loop"], ["reader", "shuffled", "batches", "generator", "callback"]):
        if size == -1 and (policy != "FILL" or padded):
            continue  # without a size the policy does not apply
        if drive == "loop" and auto_reset in (False, "no", None):
            continue  # a for-loop after an epoch without auto_reset and reset(): both just stop
        kwargs = {"size": size, "auto_reset": auto_reset, "last_batch_padded": padded}
        if policy.startswith("fill_last_batch"):
            kwargs["fill_last_batch"] = policy.endswith("True")
        else:
            kwargs["policy"] = policy
        cases.append((f"iter-{source}-n{n}b{b}-size{size}-ar{auto_reset}-{policy}-pad{padded}-{drive}",
                      source, n, b, kwargs, drive))
    for n, b, policy in itertools.product([5, 20], [2, 8], ["FILL", "DROP", "PARTIAL"]):
        for source in ("reader", "shuffled", "shuffled_pipeline_seed"):
            cases.append((f"iter-{source}-n{n}b{b}-reader_name-{policy}", source, n, b,
                          {"reader_name": "Reader", "policy": policy, "auto_reset": True}, "loop"))
    return cases


CASES = _cases()


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_iterator_case(case):
    name, source, n, b, kwargs, drive = case
    if not HAVE_DALI:
        pytest.skip("needs DALI")
    import nvidia.dali as dali
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _epochs(penstock, source, n, b, kwargs, drive)
        theirs = _epochs(dali, source, n, b, kwargs, drive)
    logging.disable(logging.NOTSET)
    reason = next((r for key, r in {**INTENDED, **OPEN}.items() if name.startswith(key)), None)
    settle(name, reason, None if ours == theirs else f"penstock {ours}\nDALI     {theirs}")


class _EpochIterable:
    """An external source that ends each epoch with StopIteration after ``per_epoch`` batches and
    starts the next one when asked again; ``total`` (>= 0) ends it for good after that many
    batches in all. A fresh ``iter()`` restarts the epoch."""

    def __init__(self, per_epoch, batch_size, total, labelled):
        self.per_epoch, self.batch_size, self.left, self.labelled = per_epoch, batch_size, total, labelled
        self.i = 0

    def __iter__(self):
        self.i = 0
        return self

    def __next__(self):
        if self.i < self.per_epoch and self.left != 0:
            self.i += 1
            self.left -= 1
            data = [np.full(3, self.i, np.uint8) for _ in range(self.batch_size)]
            return (data, [np.int32([self.i])] * self.batch_size) if self.labelled else data
        self.i = 0
        raise StopIteration


def _stop_iteration_run(lib, batch_size, epochs, per_epoch, total, auto_reset, size_given, iterator):
    """Batches per epoch of an iterator over an _EpochIterable, reset() by hand without auto_reset."""
    plugin = _plugin(lib)
    labelled = iterator == "classification"
    source = _EpochIterable(per_epoch, batch_size, total, labelled)
    pipe = lib.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        outputs = lib.fn.external_source(source=source, num_outputs=2 if labelled else None)
        pipe.set_outputs(*(outputs if labelled else [outputs]))
    size = per_epoch * batch_size if size_given else -1
    if iterator == "classification":
        it = plugin.DALIClassificationIterator(pipe, size=size, auto_reset=auto_reset)
    else:
        it = plugin.DALIGenericIterator(pipe, ["data"], size=size, auto_reset=auto_reset)
    counts = []
    for _ in range(epochs):
        counts.append(sum(1 for _ in it))
        if not auto_reset:
            it.reset()
    return counts


STOP_CASES = [(f"stop_iteration-{it}-b{b}-e{e}-per{n}-total{t}-ar{ar}-{'size' if sz else 'nosize'}", b, e, n, t, ar, sz, it)
              for it, b, e, n, t, ar, sz in itertools.product(
                  ["generic", "classification"], [1, 10, 100], [1, 3, 6], [2], [-1, 3, 20], [True, False], [True, False])
              if it == "generic" or (b, t) == (10, -1)]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", STOP_CASES, ids=[c[0] for c in STOP_CASES])
def test_stop_iteration_case(case):
    """DALI yields exactly min(total, per_epoch x epochs) batches, epoch after epoch."""
    name, *args = case
    if not HAVE_DALI:
        pytest.skip("needs DALI")
    import nvidia.dali as dali
    logging.disable(logging.WARNING)
    outcomes = []
    for lib in (penstock, dali):
        try:
            outcomes.append(_stop_iteration_run(lib, *args))
        except Exception as e:  # noqa: BLE001 - the outcome is what is compared
            outcomes.append(f"{type(e).__name__}: {e}")
    logging.disable(logging.NOTSET)
    ours, theirs = outcomes
    settle(name, None, None if ours == theirs else f"penstock {ours}\nDALI     {theirs}")


def _constructor_error(lib, pipelines, **kwargs):
    """(class, message) of the error the iterator's constructor raises (None when it does not)."""
    plugin = _plugin(lib)

    def pipe(files=None, shard=(0, 1)):
        p = lib.Pipeline(batch_size=10, num_threads=1, device_id=None)
        with p:
            if files:
                _, label = lib.fn.readers.file(files=_files(files), name="Reader", shard_id=shard[0],
                                               num_shards=shard[1])
                p.set_outputs(label)
            else:
                p.set_outputs(lib.fn.external_source(source=lambda: [np.zeros(1, np.int32)] * 10))
        return p
    try:
        plugin.DALIGenericIterator([pipe(**p) for p in pipelines], ["x"], **kwargs)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


ERROR_CASES = {
    "iterator_error-negative_size_two_pipelines": ([{}, {}], {"size": -1}),
    "iterator_error-size_0_one_pipeline": ([{}], {"size": 0}),
    "iterator_error-size_0_two_pipelines": ([{}, {}], {"size": 0}),
    "iterator_error-reader_name_and_size": ([{"files": 5}], {"reader_name": "Reader", "size": 5}),
    "iterator_error-reader_name_and_padded": ([{"files": 5}], {"reader_name": "Reader", "last_batch_padded": True}),
    "iterator_error-drop_batch_larger_than_shard": ([{"files": 3}], {"reader_name": "Reader", "last_batch_policy": "DROP"}),
    "iterator_error-drop_batch_larger_than_sharded": ([{"files": 12, "shard": (1, 4)}],
                                                      {"reader_name": "Reader", "last_batch_policy": "DROP"}),
    "iterator_error-auto_reset_bogus": ([{}], {"auto_reset": "bogus"}),
    "iterator_error-policy_not_an_enum": ([{}], {"last_batch_policy": 2}),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_constructor_error_case(name):
    """The iterator's constructor refuses what DALI refuses, with DALI's words (its tests match them)."""
    if not HAVE_DALI:
        pytest.skip("needs DALI")
    import nvidia.dali as dali
    pipelines, kwargs = ERROR_CASES[name]
    results = []
    for lib in (penstock, dali):
        kw = dict(kwargs)
        if kw.get("last_batch_policy") in ("DROP", "FILL", "PARTIAL"):
            kw["last_batch_policy"] = _plugin(lib).LastBatchPolicy[kw["last_batch_policy"]]
        results.append(_constructor_error(lib, pipelines, **kw))
    ours, theirs = results
    if theirs is None or ours is None:
        diff = None if ours == theirs else f"penstock {ours}\nDALI     {theirs}"
    else:
        diff = None if ours[0] == theirs[0] and theirs[1] in ours[1] else f"penstock {ours}\nDALI     {theirs}"
    settle(name, None, diff)
