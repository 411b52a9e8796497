"""readers.sequence (deprecated): streams of frame files written here, read as FHWC sequences with
sequence_length, step and stride, image types, shuffling and checkpoints; its deprecation warning.
tests/differential/test_db_readers.py compares the same with DALI 2.4."""
import os

import numpy as np
import pytest

from penstock import fn, pipeline_def, types

pytestmark = pytest.mark.filterwarnings("ignore:.*readers.sequence:DeprecationWarning")

# stream name -> frames; frame k of a stream is filled with FRAME_VALUE(stream, k)
STREAMS = {"0": 5, "1": 3, "b": 4, "c": 0}


def frame_value(stream: str, k: int) -> int:
    return 10 * k + ord(stream[0]) % 7


def write_streams(root: str) -> str:
    """Streams of PNG frames (and, to be passed over, a text file, a sub-directory and a file at the top)."""
    from PIL import Image
    for stream, n in STREAMS.items():
        os.makedirs(os.path.join(root, stream), exist_ok=True)
        for k in range(n):
            frame = np.full((4, 6, 3), frame_value(stream, k), np.uint8)
            frame[0, 0] = (k, 100, 200)
            Image.fromarray(frame).save(os.path.join(root, stream, f"{k:05d}.png"))
    with open(os.path.join(root, "1", "zz.txt"), "w") as f:
        f.write("not a frame")
    os.makedirs(os.path.join(root, "c", "sub"), exist_ok=True)
    Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(os.path.join(root, "top.png"))
    return root


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_streams(str(tmp_path_factory.mktemp("streams")))


def read(batch_size=1, iterations=1, checkpointing=False, reader=None, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=5, enable_checkpointing=checkpointing)
    def pipe():
        return (reader or fn.readers.sequence)(name="seq", **kwargs)

    p = pipe()
    p.build()
    return p, [[np.array(s) for s in p.run()[0]] for _ in range(iterations)]


def firsts(runs):
    """Each sequence's frames as the values they were filled with."""
    return [s[:, 1, 1, 0].tolist() for batch in runs for s in batch]


def test_streams_are_cut_into_whole_sequences(root):
    p, runs = read(iterations=10, file_root=root, sequence_length=2)
    assert p.reader_meta("seq")["epoch_size"] == 9  # 4 of stream 0, 2 of stream 1, 3 of b
    assert firsts(runs) == [[6, 16], [16, 26], [26, 36], [36, 46], [0, 10], [10, 20], [0, 10], [10, 20], [20, 30],
                            [6, 16]]
    assert runs[0][0].shape == (2, 4, 6, 3) and runs[0][0].dtype == np.uint8
    assert p.run()[0].layout() == "FHWC"


def test_step_and_stride(root):
    p, runs = read(iterations=4, file_root=root, sequence_length=2, step=2, stride=2)
    assert p.reader_meta("seq")["epoch_size"] == 4
    assert firsts(runs) == [[6, 26], [26, 46], [0, 20], [0, 20]]
    _, runs = read(iterations=2, file_root=root, sequence_length=3, step=3)
    assert firsts(runs) == [[6, 16, 26], [0, 10, 20]]


@pytest.mark.parametrize("image_type, corner", [(types.RGB, [0, 100, 200]), (types.BGR, [200, 100, 0]),
                                                (types.GRAY, [82]), (types.ANY_DATA, [0, 100, 200])])
def test_image_types(root, image_type, corner):
    _, runs = read(file_root=root, sequence_length=3, image_type=image_type)
    seq = runs[0][0]
    assert seq.shape == (3, 4, 6, len(corner)) and seq[0, 0, 0].tolist() == corner
    assert seq[:, 1, 1, 0].tolist() == [6, 16, 26]  # grey pixels are the same in every type


def test_shuffled_epochs_are_permutations_and_resume_from_checkpoints(root):
    kwargs = dict(file_root=root, sequence_length=2, random_shuffle=True, initial_fill=4)
    _, runs = read(batch_size=3, iterations=6, **kwargs)
    in_order = firsts(read(iterations=9, file_root=root, sequence_length=2)[1])
    assert sorted(map(str, firsts(runs)[:9])) == sorted(map(str, in_order))
    p, _ = read(batch_size=3, iterations=2, checkpointing=True, **kwargs)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=5, enable_checkpointing=True)
    def pipe():
        return fn.readers.sequence(**kwargs)

    q = pipe(checkpoint=p.checkpoint())
    q.build()
    assert firsts([[np.array(s) for s in q.run()[0]] for _ in range(4)]) == firsts(runs[2:6])


def test_errors(root, tmp_path):
    with pytest.raises(ValueError, match="sequence_length"):
        read(file_root=root, sequence_length=0)
    with pytest.raises(ValueError, match="step"):
        read(file_root=root, sequence_length=2, step=0)
    with pytest.raises(RuntimeError, match="Format not supported"):
        read(file_root=root, sequence_length=2, image_type=types.YCbCr)
    with pytest.raises(RuntimeError, match="no samples"):
        read(file_root=root, sequence_length=6)
    with pytest.raises(RuntimeError, match="cannot list file_root"):
        read(file_root=str(tmp_path / "missing"), sequence_length=2)
    os.makedirs(tmp_path / "s")
    for k, size in enumerate((4, 5)):
        from PIL import Image
        Image.fromarray(np.zeros((size, 6, 3), np.uint8)).save(tmp_path / "s" / f"{k}.png")
    with pytest.raises(RuntimeError, match="differ in shape"):
        read(file_root=str(tmp_path), sequence_length=2)


@pytest.mark.filterwarnings("default")
def test_every_name_of_it_warns(root):
    for reader, name in ((fn.readers.sequence, "fn.readers.sequence"),
                         (fn.readers.hidden.sequence, "fn.readers.sequence"),
                         (fn.sequence_reader, "fn.sequence_reader"), (fn.hidden.sequence_reader, "fn.sequence_reader")):
        with pytest.warns(DeprecationWarning, match=f"`penstock.{name}` is now deprecated"):
            read(file_root=root, sequence_length=2, reader=reader)
