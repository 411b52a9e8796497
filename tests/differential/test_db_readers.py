"""readers.mxnet on RecordIO files and readers.caffe / readers.caffe2 on LMDB databases written here, sample
by sample over several iterations, on penstock and DALI 2.4: default order, shuffled (DALI's buffer
shuffle), sharded, padded; Caffe2's label types, additional tensors and boxes; bad records; and
readers.sequence on streams of frame files; experimental.readers.fits' errors."""
import dataclasses
import hashlib
import os
import sys
import tempfile
from typing import Any

import pytest

from _harness import T, check_case, resolve

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_readers_mxnet import IMAGES, record, write_recordio  # noqa: E402
from test_readers_sequence import write_streams  # noqa: E402
from test_readers_fits import write_fits  # noqa: E402
from test_readers_caffe import (BYTE, CAFFE2_IMAGE_RECORDS, CAFFE_RECORDS, FLOAT, INT32, INT64, STRING,  # noqa: E402
                                caffe2_records, protos, tensor, write_lmdb)

# the same folder in the DALI worker process (one per checkout)
FOLDER = os.path.join(tempfile.gettempdir(), "penstock-differential-mxnet-" +
                      hashlib.sha1(__file__.encode()).hexdigest()[:8])


@dataclasses.dataclass
class ReaderCase:
    id: str
    kwargs: dict
    reader: str = "mxnet"
    inputs: tuple = ()
    batch_size: int = 2
    iterations: int = 5
    random: bool = False
    tolerance: float = 1.0

    def graph(self, lib: Any) -> Any:
        if self.reader == "mxnet":
            kwargs = {"path": [f"{FOLDER}/d.rec"], "index_path": [f"{FOLDER}/d.idx"], **self.kwargs}
        elif self.reader == "sequence":
            kwargs = {"file_root": os.path.join(FOLDER, "streams"), **resolve(lib, self.kwargs)}
        elif self.reader == "fits":
            out = lib.fn.experimental.readers.fits(file_root=os.path.join(FOLDER, "fits"), **resolve(lib, self.kwargs))
            return tuple(out) if isinstance(out, (list, tuple)) else out
        else:
            kwargs = {**self.kwargs, "path": [os.path.join(FOLDER, db) for db in self.kwargs["path"]]}
        out = getattr(lib.fn.readers, self.reader)(**kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out


CASES = [ReaderCase("mxnet:default", {}), ReaderCase("mxnet:shuffle", {"random_shuffle": True, "initial_fill": 3}),
         ReaderCase("mxnet:shard", {"num_shards": 2, "shard_id": 1}),
         ReaderCase("mxnet:pad", {"num_shards": 4, "shard_id": 3, "pad_last_batch": True}),
         ReaderCase("mxnet:stick", {"num_shards": 3, "shard_id": 2, "stick_to_shard": True})]

# (database, its records) for the LMDB readers
DATABASES = {
    "caffe": CAFFE_RECORDS, "caffe_b": CAFFE_RECORDS[5:7],
    "caffe_bad": [CAFFE_RECORDS[0], b"\xff\xff\xff"],
    "caffe2": CAFFE2_IMAGE_RECORDS,
    "caffe2_float": caffe2_records(tensor(FLOAT, floats=[2.5])),
    "caffe2_dense": caffe2_records(tensor(INT32, int32s=[4, 0, 5])),
    "caffe2_sparse": caffe2_records(tensor(INT32, int32s=[3, 1])),
    "caffe2_weighted": caffe2_records(tensor(INT32, int32s=[4, 0]), (tensor(FLOAT, floats=[0.75, 0.5]),)),
    "caffe2_extra": caffe2_records(tensor(INT32, int32s=[7]), (
        tensor(FLOAT, dims=(2,), floats=[1.5, 2.5]), tensor(INT64, int64s=[-5, 2 ** 40]),
        tensor(INT32, int32s=[1, 2, 3, 4]))),
    "caffe2_unlabelled": [protos(tensor(STRING, strings=[b"abc", b"de"]))] * 2,
    "caffe2_size_mismatch": [protos(tensor(BYTE, dims=(2, 4), byte_data=b"abcdef"), tensor(INT32, int32s=[1]))],
    "caffe2_int64_label": [protos(tensor(STRING, strings=[b"x"]), tensor(INT64, int64s=[1]))],
}


def _caffe(case_id: str, reader: str, db: str | list, **kwargs: Any) -> ReaderCase:
    return ReaderCase(case_id, {"path": [db] if isinstance(db, str) else db, **kwargs}, reader)


CASES += [
    _caffe("caffe:default", "caffe", "caffe"),
    _caffe("caffe:shuffle", "caffe", "caffe", random_shuffle=True, initial_fill=4),
    _caffe("caffe:shard", "caffe", "caffe", num_shards=2, shard_id=1),
    _caffe("caffe:pad", "caffe", "caffe", num_shards=4, shard_id=3, pad_last_batch=True),
    _caffe("caffe:stick", "caffe", "caffe", num_shards=3, shard_id=2, stick_to_shard=True),
    _caffe("caffe:no_image", "caffe", "caffe", image_available=False),
    _caffe("caffe:no_label", "caffe", "caffe", label_available=False),
    _caffe("caffe:two_databases", "caffe", ["caffe", "caffe_b"], random_shuffle=True, initial_fill=3),
    _caffe("caffe:bad_record", "caffe", "caffe_bad"),
    _caffe("caffe:missing", "caffe", "no_such_database"),
    _caffe("caffe2:default", "caffe2", "caffe2"),
    _caffe("caffe2:shuffle_shard", "caffe2", "caffe2", random_shuffle=True, initial_fill=2, num_shards=2, shard_id=0),
    _caffe("caffe2:no_image", "caffe2", "caffe2", image_available=False),
    _caffe("caffe2:float_label", "caffe2", "caffe2_float"),
    _caffe("caffe2:dense", "caffe2", "caffe2_dense", label_type=2),
    _caffe("caffe2:sparse", "caffe2", "caffe2_sparse", label_type=1, num_labels=5),
    _caffe("caffe2:weighted_sparse", "caffe2", "caffe2_weighted", label_type=3, num_labels=5),
    _caffe("caffe2:additional_bbox", "caffe2", "caffe2_extra", additional_inputs=2, bbox=True),
    _caffe("caffe2:extra_tensors", "caffe2", "caffe2_extra"),
    _caffe("caffe2:no_label", "caffe2", "caffe2_unlabelled", label_type=4),
    _caffe("caffe2:size_mismatch", "caffe2", "caffe2_size_mismatch"),
    _caffe("caffe2:int64_label", "caffe2", "caffe2_int64_label"),
    _caffe("caffe2:label_type_5", "caffe2", "caffe2", label_type=5),
]


def _sequence(case_id: str, **kwargs: Any) -> ReaderCase:
    return ReaderCase(case_id, {"sequence_length": 2, **kwargs}, "sequence", batch_size=kwargs.pop("batch_size", 2))


CASES += [_sequence("sequence:default"), _sequence("sequence:step_stride", step=2, stride=2),
          _sequence("sequence:length_3", sequence_length=3, batch_size=3),
          _sequence("sequence:gray", image_type=T("GRAY")), _sequence("sequence:bgr", image_type=T("BGR")),
          _sequence("sequence:ycbcr", image_type=T("YCbCr")),
          _sequence("sequence:shuffle", random_shuffle=True, initial_fill=3),
          _sequence("sequence:shard", num_shards=2, shard_id=1, pad_last_batch=True),
          _sequence("sequence:too_long", sequence_length=6), _sequence("sequence:zero_length", sequence_length=0)]

# DALI 2.4's CPU FITS reader asks for a CUDA driver for every image it reads: compared here are the
# errors it raises before (penstock's own tests check the images against astropy)
CASES += [ReaderCase("fits:primary_has_no_image", {"hdu_indices": [1], "file_filter": "img*.fits"}, "fits"),
          ReaderCase("fits:past_the_last_hdu", {"hdu_indices": [5], "file_filter": "img*.fits"}, "fits"),
          ReaderCase("fits:no_files", {"file_filter": "*.none"}, "fits")]


@pytest.fixture(scope="module", autouse=True)
def recordio_files():
    os.makedirs(FOLDER, exist_ok=True)
    if not os.path.isdir(os.path.join(FOLDER, "streams")):
        write_streams(os.path.join(FOLDER, "streams"))
    if not os.path.isdir(os.path.join(FOLDER, "fits")):
        os.makedirs(os.path.join(FOLDER, "fits"))
        write_fits(os.path.join(FOLDER, "fits"))
    for name, records in DATABASES.items():
        if not os.path.exists(os.path.join(FOLDER, name, "data.mdb")):
            write_lmdb(os.path.join(FOLDER, name), records)
    write_recordio(os.path.join(FOLDER, "d"), [record(float(k), img) for k, img in enumerate(IMAGES[:5])]
                   + [record(0, IMAGES[5], [1.5, 2.5])])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_db_reader(case):
    check_case(case)
