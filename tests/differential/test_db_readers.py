"""readers.mxnet on RecordIO files written here, sample by sample over several iterations, on penstock and
DALI 2.4: default order, shuffled (DALI's buffer shuffle), sharded, padded."""
import dataclasses
import hashlib
import os
import sys
import tempfile
from typing import Any

import pytest

from _harness import check_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_readers_mxnet import IMAGES, record, write_recordio  # noqa: E402

# the same folder in the DALI worker process (one per checkout)
FOLDER = os.path.join(tempfile.gettempdir(), "penstock-differential-mxnet-" +
                      hashlib.sha1(__file__.encode()).hexdigest()[:8])


@dataclasses.dataclass
class ReaderCase:
    id: str
    kwargs: dict
    inputs: tuple = ()
    batch_size: int = 2
    iterations: int = 5
    random: bool = False
    tolerance: float = 1.0

    def graph(self, lib: Any) -> Any:
        return tuple(lib.fn.readers.mxnet(path=[f"{FOLDER}/d.rec"], index_path=[f"{FOLDER}/d.idx"], **self.kwargs))


CASES = [ReaderCase("mxnet:default", {}), ReaderCase("mxnet:shuffle", {"random_shuffle": True, "initial_fill": 3}),
         ReaderCase("mxnet:shard", {"num_shards": 2, "shard_id": 1}),
         ReaderCase("mxnet:pad", {"num_shards": 4, "shard_id": 3, "pad_last_batch": True}),
         ReaderCase("mxnet:stick", {"num_shards": 3, "shard_id": 2, "stick_to_shard": True})]


@pytest.fixture(scope="module", autouse=True)
def recordio_files():
    os.makedirs(FOLDER, exist_ok=True)
    write_recordio(os.path.join(FOLDER, "d"), [record(float(k), img) for k, img in enumerate(IMAGES[:5])]
                   + [record(0, IMAGES[5], [1.5, 2.5])])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_mxnet_reader(case):
    check_case(case)
