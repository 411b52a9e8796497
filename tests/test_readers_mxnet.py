"""readers.mxnet over RecordIO files written here: labels (one or several), images' bytes, records the
writer split in parts, sharding, and errors naming the file."""
import struct

import numpy as np
import pytest

from penstock import fn, pipeline_def

MAGIC = 0xced7230a


def record(label, data, labels=None):
    if labels is None:
        return struct.pack("<IfQQ", 0, label, 0, 0) + data
    return struct.pack("<IfQQ", len(labels), 0.0, 0, 0) + np.asarray(labels, np.float32).tobytes() + data


def write_recordio(path, payloads, split_at=None):
    """A .rec and .idx; ``split_at``: {record: position of a magic word the writer cut the payload at}."""
    offsets = []
    with open(f"{path}.rec", "wb") as f:
        for k, payload in enumerate(payloads):
            offsets.append(f.tell())
            cut = (split_at or {}).get(k)
            parts = [payload] if cut is None else [payload[:cut], payload[cut + 4:]]
            for p, part in enumerate(parts):
                flag = 0 if len(parts) == 1 else (1 if p == 0 else 3)
                f.write(struct.pack("<II", MAGIC, flag << 29 | len(part)) + part + b"\0" * (-len(part) % 4))
    with open(f"{path}.idx", "w") as f:
        f.writelines(f"{k}\t{o}\n" for k, o in enumerate(offsets))


def read(path, batch, iters=1, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def pipe():
        return tuple(fn.readers.mxnet(path=[f"{path}.rec"], index_path=[f"{path}.idx"], **kw))
    p = pipe()
    out = []
    for _ in range(iters):
        images, labels = p.run()
        out += [(bytes(np.asarray(images.at(i))), np.asarray(labels.at(i)).tolist(), images[i].source_info())
                for i in range(batch)]
    return out


rng = np.random.default_rng(30)
IMAGES = [bytes(rng.integers(0, 256, 5 + 7 * k, dtype=np.uint8)) for k in range(6)]


def test_images_labels_and_sources(tmp_path):
    payloads = [record(float(k), img) for k, img in enumerate(IMAGES[:5])] + [record(0, IMAGES[5], [1.5, 2.5])]
    write_recordio(tmp_path / "d", payloads)
    got = read(tmp_path / "d", 3, iters=2)
    assert [g[0] for g in got] == IMAGES
    assert [g[1] for g in got] == [[0.0], [1.0], [2.0], [3.0], [4.0], [1.5, 2.5]]
    assert got[0][2] == f"{tmp_path / 'd'}.rec at index 0"


def test_records_without_image_bytes_give_empty_samples(tmp_path):
    """A batch whose records hold only their headers (the fuzzer's find: a copy of no bytes from a
    null image buffer)."""
    write_recordio(tmp_path / "e", [record(4.0, b""), record(0, b"", [1.0, 2.0])])
    assert [(g[0], g[1]) for g in read(tmp_path / "e", 2)] == [(b"", [4.0]), (b"", [1.0, 2.0])]


def test_records_split_around_a_magic_word(tmp_path):
    data = IMAGES[2][:7] + struct.pack("<I", MAGIC) + IMAGES[2][7:]
    write_recordio(tmp_path / "s", [record(7.0, data), record(8.0, IMAGES[0])], split_at={0: 24 + 7})
    got = read(tmp_path / "s", 2)
    assert got[0][0] == data and got[0][1] == [7.0] and got[1][0] == IMAGES[0]


def test_shards_split_the_records(tmp_path):
    write_recordio(tmp_path / "h", [record(float(k), IMAGES[k]) for k in range(6)])
    first = read(tmp_path / "h", 3, num_shards=2, shard_id=0)
    second = read(tmp_path / "h", 3, num_shards=2, shard_id=1)
    assert [g[1] for g in first] == [[0.0], [1.0], [2.0]] and [g[1] for g in second] == [[3.0], [4.0], [5.0]]


def test_corrupt_record_is_named(tmp_path):
    write_recordio(tmp_path / "c", [record(0.0, IMAGES[0]), record(1.0, IMAGES[1])])
    raw = bytearray((tmp_path / "c.rec").read_bytes())
    raw[0] ^= 0xFF
    (tmp_path / "c.rec").write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match="bad record magic.*c.rec at index 0|c.rec at index 0.*bad record magic"):
        read(tmp_path / "c", 2)
