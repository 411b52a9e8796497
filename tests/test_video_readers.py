"""experimental.readers.video on the CPU over files the tests write: how files are cut into
sequences (sequence_length, stride, step, pad_mode, uniform_sample), the label, frame-number and
timestamp outputs, file_root and file_list sources, variable frame rates, shuffling, checkpoints
and errors."""
import numpy as np
import pytest

from _video_data import check_frames, clip, encoded, write
from penstock import fn, pipeline_def


def _read(batch=2, iterations=1, name="r", **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=3)
    def p():
        out = fn.experimental.readers.video(name=name, **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else out
    pipe = p()
    pipe.build()
    runs = []
    for _ in range(iterations):
        outs = pipe.run()
        runs.append([[np.array(o.at(i)) for i in range(len(o))] for o in outs])
    return runs, pipe


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("videos")
    return {"a": write(root, "class_a/a.mp4", encoded("h264", "mp4", frames=30)),
            "b": write(root, "class_b/b.webm", encoded("vp9", "webm", frames=20, height=32, width=48, seed=1)),
            "c": write(root, "class_b/c.mkv", encoded("hevc", "mkv", frames=7, seed=2)),
            "vfr": write(root, "vfr/v.mp4", encoded("h264", "mp4", frames=30, vfr=True)),
            "root": str(root)}


def test_sequences_of_one_file(files):
    runs, pipe = _read(batch=3, iterations=2, filenames=[files["a"]], sequence_length=4, stride=2, step=5,
                       enable_frame_num="sequence", enable_timestamps=True)
    assert pipe.epoch_size("r") == 5  # starts 0, 5, 10, 15, 20: each span of 8 frames fits in 30
    starts = [int(n[0]) for run in runs for n in run[1]]
    assert starts == [0, 5, 10, 15, 20, 0]
    for run in runs:
        for video, numbers, times in zip(*run):
            check_frames(video, clip(), numbers, "h264")
            np.testing.assert_allclose(times, numbers * 0.04)
            assert times.dtype == np.float64 and numbers.dtype == np.int32


def test_labels_and_frame_number_outputs(files):
    runs, _ = _read(batch=2, filenames=[files["a"], files["b"]], labels=[7, 9], sequence_length=20,
                    enable_frame_num=True)
    video, labels, first = runs[0]
    assert [int(x[0]) for x in labels] == [7, 9] and [int(x[0]) for x in first] == [0, 0]
    assert video[0].shape == (20, 48, 64, 3) and video[1].shape == (20, 32, 48, 3)
    runs, _ = _read(batch=2, filenames=[files["a"]], sequence_length=3)
    assert len(runs[0]) == 1  # no labels given: the frames only


def test_ycbcr_frames_are_interleaved_as_ffmpeg_converts_them(files):
    import av
    from penstock import types
    runs, _ = _read(batch=1, filenames=[files["a"]], sequence_length=3, image_type=types.YCbCr)
    with av.open(files["a"]) as c:
        expect = np.stack([np.moveaxis(f.to_ndarray(format="yuv444p"), 0, -1)  # PyAV 14 has no channel_last
                           for _, f in zip(range(3), c.decode(video=0))])
    assert runs[0][0][0].shape == (3, 48, 64, 3)
    np.testing.assert_array_equal(runs[0][0][0], expect)


@pytest.mark.parametrize("mode,expect", [("constant", [24, 25, 26, 27, 28, 29, -1, -1]),
                                         ("edge", [24, 25, 26, 27, 28, 29, 29, 29]),
                                         ("reflect", [24, 25, 26, 27, 28, 29, 28, 27]),
                                         ("symmetric", [24, 25, 26, 27, 28, 29, 29, 28])])
def test_padding_the_last_sequence(files, mode, expect):
    runs, pipe = _read(batch=4, filenames=[files["a"]], sequence_length=8, pad_mode=mode,
                       enable_frame_num="sequence", enable_timestamps=True, fill_value=[50])
    assert pipe.epoch_size("r") == 4
    video, numbers, times = (o[3] for o in runs[0])
    assert numbers.tolist() == expect
    check_frames(video, clip(), numbers, "h264")
    if mode == "constant":
        assert (video[6:] == 50).all() and (times[6:] == -1).all()


def test_uniform_sample(files):
    runs, pipe = _read(batch=2, filenames=[files["a"], files["c"]], sequence_length=10, uniform_sample=True,
                       enable_frame_num="sequence")
    assert pipe.epoch_size("r") == 2
    assert runs[0][1][0].tolist() == [0, 3, 6, 10, 13, 16, 19, 23, 26, 29]
    assert runs[0][1][1].tolist() == [0, 1, 1, 2, 3, 3, 4, 5, 5, 6]


def test_file_root_labels_by_sorted_directory(files, tmp_path):
    runs, pipe = _read(batch=4, file_root=files["root"], sequence_length=5, enable_frame_num=True)
    # class_a/a (30 frames: 6 sequences), class_b/b (20: 4), class_b/c (7: 1), vfr/v (30: 6)
    assert pipe.epoch_size("r") == 17
    labels = [int(x[0]) for x in runs[0][1]]
    assert labels == [0, 0, 0, 0]


def test_file_list_frames_and_timestamps(files, tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{files['a']} 3 2 13\n{files['b']} 4 -10 -2\n")
    runs, pipe = _read(batch=5, file_list=str(listing), file_list_format="frames", sequence_length=3,
                       enable_frame_num="sequence")
    assert pipe.epoch_size("r") == 5  # [2, 13): 2, 5, 8; [10, 18): 10, 13
    assert [n.tolist()[0] for n in runs[0][2]] == [2, 5, 8, 10, 13]
    assert [int(x[0]) for x in runs[0][1]] == [3, 3, 3, 4, 4]
    listing.write_text(f"{files['a']} 1 0.1 0.5\n")
    runs, pipe = _read(batch=3, file_list=str(listing), sequence_length=3, enable_frame_num="sequence")
    assert [n.tolist()[0] for n in runs[0][2]] == [2, 5, 8]  # frames 2.5 -> 2 .. 12.5 -> 13 at 25 fps
    runs, pipe = _read(batch=3, file_list=str(listing), sequence_length=3, enable_frame_num="sequence",
                       file_list_rounding="start_up_end_down")
    assert [n.tolist()[0] for n in runs[0][2]] == [3, 6, 9]


def test_variable_frame_rate_timestamps(files):
    from make_video_data import variable_pts
    runs, _ = _read(batch=2, filenames=[files["vfr"]], sequence_length=5, enable_frame_num="sequence",
                    enable_timestamps=True)
    pts = np.array(variable_pts(30)) / 1000
    for video, numbers, times in zip(*runs[0]):
        check_frames(video, clip(), numbers, "h264")
        np.testing.assert_allclose(times, pts[numbers])


def test_shuffling_is_a_permutation_each_epoch_and_checkpoints_resume(files):
    kw = dict(filenames=[files["a"], files["b"]], sequence_length=4, enable_frame_num=True, labels=[0, 1],
              random_shuffle=True, initial_fill=4)

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=5, enable_checkpointing=True)
    def p():
        return tuple(fn.experimental.readers.video(name="r", **kw))
    pipe = p()
    pipe.build()
    seen = []
    for _ in range(4):  # one epoch: 7 sequences of a (starts 0..24), 5 of b (starts 0..16)
        _, labels, first = pipe.run()
        seen += [(int(labels.at(i)[0]), int(first.at(i)[0])) for i in range(3)]
    assert sorted(seen) == sorted([(0, s) for s in range(0, 28, 4)] + [(1, s) for s in range(0, 20, 4)])
    assert seen != sorted(seen)
    checkpoint = pipe.checkpoint()
    after = [tuple(np.array(o.at(0))[0] for o in pipe.run()[1:]) for _ in range(2)]
    resumed = p(checkpoint=checkpoint)
    resumed.build()
    again = [tuple(np.array(o.at(0))[0] for o in resumed.run()[1:]) for _ in range(2)]
    assert after == again


def test_errors(files, tmp_path):
    with pytest.raises(ValueError, match="exactly one of"):
        _read(filenames=[files["a"]], file_root=files["root"], sequence_length=2)
    with pytest.raises(ValueError, match="one label per file"):
        _read(filenames=[files["a"]], labels=[1, 2], sequence_length=2)
    with pytest.raises(RuntimeError, match="no video holds a whole sequence"):
        _read(filenames=[files["c"]], sequence_length=8)
    bad = write(tmp_path, "bad.mp4", b"\x00\x00\x00\x18ftypmp42 not really a video" * 10)
    with pytest.raises(RuntimeError, match="bad.mp4"):
        _read(filenames=[bad], sequence_length=2)
    with pytest.raises(ValueError, match="enable_frame_num"):
        _read(filenames=[files["a"]], sequence_length=2, enable_frame_num="all")
