"""Engine calls run on a native thread of their own (engine/background.h): submitted with the GIL
held, collected later, their errors raised where they are collected."""
import glob
import threading

import numpy as np
import pytest

from penstock import _engine

from _util import write_smooth_jpegs


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    root = write_smooth_jpegs(tmp_path_factory.mktemp("jpegs"), 6, lambda i, c: (60 + 8 * i, 90 + 4 * i + c))
    blobs = [open(f, "rb").read() for f in sorted(glob.glob(f"{root}/*/*.jpg"))]
    lengths = np.array([len(b) for b in blobs], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.frombuffer(b"".join(blobs), np.uint8), lengths.reshape(-1, 1), offsets


def _later(background, pool, data, shapes, offsets, crop=None):
    return _engine.decode_images_later(background, pool, data, shapes, offsets, 0, True, crop, False, True, None,
                                       False)


def test_a_call_in_the_background_gives_what_the_call_itself_gives(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(2), _engine.Background("penstock-test")
    crop = np.tile(np.array([[3, 5, 20, 30]], np.int64), (len(shapes), 1))
    expected = _engine.decode_images(pool, data, shapes, offsets, 0, True, crop)
    pending = _later(background, pool, data, shapes, offsets, crop)
    got = pending.result()
    assert pending.done() and pending.seconds > 0
    assert len(got) == 4
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    background.close()


def test_calls_run_in_the_order_submitted_and_their_inputs_outlive_the_callers_references(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(2), _engine.Background("penstock-test")
    expected = _engine.decode_images(pool, data, shapes, offsets, 0)[0]
    copies = [data.copy() for _ in range(3)]
    pendings = [_later(background, pool, c, shapes, offsets) for c in copies]
    del copies, pool  # the calls hold their arrays and the pool
    for p in pendings:
        np.testing.assert_array_equal(p.result()[0], expected)
    background.close()


def test_a_bad_sample_is_the_error_of_whoever_collects_it_with_its_index(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(2), _engine.Background("penstock-test")
    bad = data.copy()
    bad[offsets[4] + 600:offsets[4] + int(shapes[4, 0]) - 2] = 7  # sample 4's scan overwritten
    reading = _engine.verify_jpegs_later(background, pool, bad, shapes, offsets)
    clean = _engine.verify_jpegs_later(background, pool, data, shapes, offsets)
    with pytest.raises(_engine.SampleError) as caught:
        reading.result()
    assert caught.value.args[1] == 4 and "JPEG" in caught.value.args[0]
    assert isinstance(caught.value, RuntimeError)
    assert clean.result() == ()  # the thread goes on after a failed call
    background.close()


def test_waiting_for_a_result_leaves_the_gil_to_other_threads(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(1), _engine.Background("penstock-test")
    many = [_later(background, pool, data, shapes, offsets) for _ in range(40)]
    stop, counted = threading.Event(), [0]

    def count() -> None:
        while not stop.is_set():
            counted[0] += 1
    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = counted[0]
        many[-1].result()  # waits for all 40 (in order)
        assert counted[0] > before
    finally:
        stop.set()
        counter.join()
    assert all(p.done() for p in many)
    background.close()


def test_closing_runs_what_was_submitted_then_refuses_more(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(2), _engine.Background("penstock-test")
    pending = _later(background, pool, data, shapes, offsets)
    background.close()
    assert pending.done()
    background.close()  # once is enough; again does nothing
    with pytest.raises(RuntimeError, match="after it stopped"):
        _later(background, pool, data, shapes, offsets)


def test_files_read_in_the_background_and_a_missing_one_named(tmp_path):
    paths = []
    for i, payload in enumerate([b"ab", b"", b"cdef"]):
        paths.append(str(tmp_path / f"{i}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(payload)
    files = _engine.FileList(paths + [str(tmp_path / "gone.bin")])
    assert len(files) == 4
    pool, background = _engine.ThreadPool(2), _engine.Background("penstock-test")
    buffer, sizes = _engine.read_files_later(background, pool, files, np.array([2, 0, 1])).result()
    assert bytes(buffer) == b"cdefab" and sizes.tolist() == [4, 2, 0]
    missing = _engine.read_files_later(background, pool, files, np.array([0, 3]))
    with pytest.raises(_engine.SampleError, match="gone.bin") as caught:
        missing.result()
    assert caught.value.args[1] == 1
    with pytest.raises(IndexError, match="file index 4 is out of range for a list of 4 files"):
        _engine.read_files_later(background, pool, files, np.array([4])).result()
    background.close()


def test_closing_from_several_threads_at_once_ends_the_thread_once(jpegs):
    data, shapes, offsets = jpegs
    pool, background = _engine.ThreadPool(1), _engine.Background("penstock-test")
    pendings = [_later(background, pool, data, shapes, offsets) for _ in range(20)]
    closers = [threading.Thread(target=background.close) for _ in range(4)]
    for t in closers:
        t.start()
    for t in closers:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in closers)
    assert all(p.done() for p in pendings)
    assert len(pendings[-1].result()) == 4
