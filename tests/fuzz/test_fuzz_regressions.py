"""Every input that once made a fuzz target fail (tests/fuzz/regressions/<target>/) and every
seed, replayed: each must end in a result or a clean error naming the operator."""
import os

import pytest

import targets

HERE = os.path.dirname(os.path.abspath(__file__))


def _inputs():
    for target in targets.TARGETS:
        folder = os.path.join(HERE, "regressions", target)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            with open(os.path.join(folder, name), "rb") as f:
                yield pytest.param(target, f.read(), id=f"{target}/{name}")
        for k, data in enumerate(targets.seeds(target)):
            yield pytest.param(target, data, id=f"{target}/seed{k}")


@pytest.mark.parametrize("target, data", list(_inputs()))
def test_replay(target, data):
    targets.TARGETS[target](data)


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
