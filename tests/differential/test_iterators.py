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
