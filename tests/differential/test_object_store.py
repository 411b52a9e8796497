"""Readers over an object store, penstock against DALI 2.4: the same pipelines pointed at the same
S3 server (rclone serve s3 on loopback) give the same samples in the same order (shuffled with a
seed too), with the same labels, source names and epoch sizes. (shuffle_after_epoch's
permutations differ from DALI's on local disk too: known_differences.py.)"""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _s3_server import s3_server  # noqa: E402,F401 - the fixture
from test_readers_coco import write_coco  # noqa: E402
from test_readers_mxnet import record, write_recordio  # noqa: E402
from test_readers_webdataset import _shard  # noqa: E402

import penstock  # noqa: E402

ITERATIONS = 7

# the reader's outputs, sample by sample: digest of the data's bytes, shape, and the other outputs' values
_RUN = r'''
import hashlib, json, sys
import numpy as np
lib = __import__(sys.argv[1], fromlist=["fn"])
reader, kwargs, batch, iterations = json.loads(sys.argv[2])

@lib.pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=17)
def pipe():
    out = getattr(lib.fn.readers, reader)(name="r", **kwargs)
    return tuple(out) if isinstance(out, (list, tuple)) else out

p = pipe()
p.build()
samples = []
for _ in range(iterations):
    outs = p.run()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    for i in range(len(outs[0])):
        data = np.array(outs[0].at(i))
        samples.append([hashlib.sha1(data.tobytes()).hexdigest(), list(data.shape), str(data.dtype),
                        outs[0][i].source_info(), [np.array(o.at(i)).tolist() for o in outs[1:]]])
print(json.dumps({"samples": samples, "meta": p.reader_meta("r")}))
'''


def _outcome(library: str, reader: str, kwargs: dict, batch: int) -> dict:
    env = dict(os.environ)
    if library == "penstock":  # the same checkout's penstock in a process like DALI's
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(penstock.__file__)),
                                             env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _RUN, library, json.dumps([reader, kwargs, batch, ITERATIONS])],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"{library} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bucket(s3_server):  # noqa: F811
    """Class folders of small 'JPEG' files (some in a folder below, which discovery does not
    enter), files directly under the root, and a folder of .npy arrays, in the bucket
    'differential'."""
    root = s3_server.bucket("differential")
    rng = np.random.default_rng(8)
    for c, count in enumerate([6, 3, 5]):
        for i in range(count):
            folder = os.path.join(root, "images", f"class{c}", "nested" if i == 2 else "")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"img{i:02d}.jpg"), "wb") as f:
                f.write(rng.bytes(int(rng.integers(10, 4000))))
    for name in ("class1.jpg", "stray.jpg", "note.txt"):  # directly under the root: each a class of its own
        with open(os.path.join(root, "images", name), "wb") as f:
            f.write(name.encode())
    os.makedirs(os.path.join(root, "images", "class15"))  # only files the filters leave out: no class
    with open(os.path.join(root, "images", "class15", "note.txt"), "w") as f:
        f.write("no image")
    os.makedirs(os.path.join(root, "arrays"))
    for i in range(9):
        np.save(os.path.join(root, "arrays", f"x{i}.npy"), rng.random((3, 2 + i % 3)).astype(np.float32))
    os.makedirs(os.path.join(root, "wds"))
    for k in range(2):
        _shard(os.path.join(root, "wds", f"part{k}.tar"),
               [(f"k{k}/{i:02d}", {"jpg": rng.bytes(int(rng.integers(1, 3000))), "cls": str(i).encode()})
                for i in range(4 + 3 * k)])
    write_coco(os.path.join(root, "coco"))
    os.makedirs(os.path.join(root, "recordio"))  # one file: DALI's reader takes a single index file
    write_recordio(os.path.join(root, "recordio", "r"),
                   [record(float(i), rng.bytes(int(rng.integers(1, 900)))) for i in range(7)])
    return "s3://differential"


@pytest.fixture(scope="module")
def local_files(s3_server, tmp_path_factory):  # noqa: F811
    """Local files the cases name: a file list of keys under the bucket (DALI reads file lists from
    local disk only), and the COCO annotations (so are DALI's annotations files)."""
    path = tmp_path_factory.mktemp("lists") / "list.txt"
    path.write_text("images/class1/img01.jpg 4\nimages/class0/img03.jpg 2\nimages/class2/nested/img02.jpg 7\n")
    return {"{list}": str(path), "{annotations}": os.path.join(s3_server.root, "differential", "coco",
                                                                "instances.json")}


CASES = [
    ("file", {"file_root": "{b}/images"}, 4),
    ("file", {"file_root": "{b}/images", "random_shuffle": True, "initial_fill": 6}, 4),
    ("file", {"file_root": "{b}/images", "num_shards": 3, "shard_id": 2, "pad_last_batch": True}, 3),
    ("file", {"file_root": "{b}/images", "stick_to_shard": True, "num_shards": 2, "shard_id": 1}, 5),
    ("file", {"file_root": "{b}/images", "dir_filters": ["class1*", "s*"]}, 3),
    ("file", {"file_root": "{b}/images", "file_filters": ["*.txt", "img0[13].jpg"]}, 3),
    ("file", {"file_root": "{b}", "file_list": "{list}"}, 2),
    ("file", {"file_root": "{b}/images", "files": ["class2/img00.jpg", "class0/img05.jpg"]}, 2),
    ("webdataset", {"paths": ["{b}/wds/part0.tar", "{b}/wds/part1.tar"], "ext": ["jpg", "cls"]}, 3),
    ("webdataset", {"paths": ["{b}/wds/part0.tar", "{b}/wds/part1.tar"], "ext": ["jpg", "cls"],
                    "random_shuffle": True, "initial_fill": 4, "num_shards": 2, "shard_id": 0}, 2),
    ("numpy", {"file_root": "{b}/arrays"}, 4),
    ("numpy", {"file_root": "{b}/arrays", "random_shuffle": True, "num_shards": 2, "shard_id": 1}, 3),
    ("coco", {"file_root": "{b}/coco/images", "annotations_file": "{annotations}", "image_ids": True}, 3),
    ("coco", {"file_root": "{b}/coco/images", "annotations_file": "{annotations}", "random_shuffle": True,
              "initial_fill": 3, "num_shards": 2, "shard_id": 1, "pad_last_batch": True}, 2),
    ("mxnet", {"path": ["{b}/recordio/r.rec"], "index_path": ["{b}/recordio/r.idx"]}, 3),
    ("mxnet", {"path": ["{b}/recordio/r.rec"], "index_path": ["{b}/recordio/r.idx"], "random_shuffle": True,
               "initial_fill": 4, "num_shards": 2, "shard_id": 0}, 2),
]


@pytest.mark.parametrize("reader, kwargs, batch", CASES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(CASES)])
def test_same_samples_as_dali(bucket, local_files, reader, kwargs, batch):
    text = json.dumps(kwargs).replace("{b}", bucket)
    for name, path in local_files.items():
        text = text.replace(name, path)
    kwargs = json.loads(text)
    theirs = _outcome("nvidia.dali", reader, kwargs, batch)
    ours = _outcome("penstock", reader, kwargs, batch)
    assert ours["meta"] == theirs["meta"]
    assert len({s[0] for s in ours["samples"]}) > 1
    if reader == "webdataset":  # its source_info differs from DALI's on local disk too ('shard:index' here)
        ours["samples"], theirs["samples"] = ([s[:3] + s[4:] for s in o["samples"]] for o in (ours, theirs))
    if reader == "coco":  # DALI 2.4 gives every image fetched from S3 as 1 MiB (its buffer), not the file's bytes
        assert {tuple(s[1]) for s in theirs["samples"]} == {(1 << 20,)}
        ours["samples"], theirs["samples"] = ([s[2:] for s in o["samples"]] for o in (ours, theirs))
    assert ours["samples"] == theirs["samples"]
