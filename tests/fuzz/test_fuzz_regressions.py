"""Every input that once made a fuzz target fail (tests/fuzz/regressions/<target>/) and every
seed, replayed: each must end in a result or a clean error naming the operator.

Collecting these tests only lists files: the seeds are made, and what each target needs (Pillow,
PyAV, libsndfile, lz4, lmdb) is imported, when a test runs, so `pytest -m gpu` collects them on
machines without those."""
import os

import pytest

import targets

HERE = os.path.dirname(os.path.abspath(__file__))


def _regressions():
    for target in targets.TARGETS:
        folder = os.path.join(HERE, "regressions", target)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            yield pytest.param(target, os.path.join(folder, name), id=f"{target}/{name}")


@pytest.mark.parametrize("target, path", list(_regressions()))
def test_replay(target, path):
    with open(path, "rb") as f:
        targets.TARGETS[target](f.read())


@pytest.mark.parametrize("target", list(targets.TARGETS))
def test_seeds(target):
    seeds = targets.seeds(target)
    assert seeds, f"{target}: no seeds"
    for k, data in enumerate(seeds):
        try:
            targets.TARGETS[target](data)
        except Exception as e:
            raise AssertionError(f"{target}: seed {k} failed") from e


@pytest.mark.parametrize("content, message", [
    (b"x 3\n\n  \xff 4  \n", "is not UTF-8 text"),
    (b"a 99999999999\n", "line 1"),
    (b"a\x00b 1\n", "line 1"),
    (b"ok 1\na \xd9\xa3\n", "line 2"),
])
def test_file_list_rejects_what_the_fuzzer_found(tmp_path, content, message):
    from penstock import fn, pipeline_def
    lst = tmp_path / "list.txt"
    lst.write_bytes(content)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return fn.readers.file(file_list=str(lst))[1]

    with pytest.raises(ValueError, match=f"readers.file.*{message}"):
        p().build()
