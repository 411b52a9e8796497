"""Decoded video through the image operators: FHWC sequences are resized, cropped, flipped,
normalized and colour-adjusted frame by frame (each frame equal to the operator applied to that
frame as an HWC image), and ``fn.per_frame`` arguments give each frame a value of its own."""
import numpy as np
import pytest

from _video_data import encoded
from penstock import fn, pipeline_def, types

FRAMES = 4


def _run(graph, batch=2):
    data = [np.frombuffer(encoded("h264", "mp4"), np.uint8), np.frombuffer(encoded("vp9", "webm", seed=1), np.uint8)]

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        video = fn.decoders.video(fn.external_source(source=lambda: data[:batch]), sequence_length=FRAMES, stride=3)
        return graph(video)
    return [[np.array(o.at(i)) for i in range(len(o))] for o in p().run()]


def _frames_as_images(graph, video):
    """``graph`` applied to each frame of each sequence as a batch of HWC images."""
    frames = [f for seq in video for f in seq]

    @pipeline_def(batch_size=len(frames), num_threads=2, device_id=None)
    def p():
        return graph(fn.external_source(source=lambda: frames, layout="HWC"))
    (tl,) = p().run()
    return [np.array(tl.at(i)) for i in range(len(tl))]


def _assert_frame_by_frame(sequences, frames):
    for i, seq in enumerate(sequences):
        assert seq.shape[0] == FRAMES
        for k in range(FRAMES):
            np.testing.assert_allclose(seq[k], frames[i * FRAMES + k], atol=1e-4)


@pytest.mark.parametrize("name,graph", [
    ("resize", lambda x: fn.resize(x, resize_x=40, resize_y=30)),
    ("flip", lambda x: fn.flip(x, vertical=1)),
    ("brightness_contrast", lambda x: fn.brightness_contrast(x, brightness=1.2, contrast=0.8)),
    ("hsv", lambda x: fn.hsv(x, hue=30.0, saturation=0.7)),
])
def test_image_operators_take_sequences_frame_by_frame(name, graph):
    video, out = _run(lambda v: (v, graph(v)))
    _assert_frame_by_frame(out, _frames_as_images(graph, video))


def test_crop_mirror_normalize_takes_sequences_frame_by_frame():
    # the output layout named for each: DALI 2.4 refuses its default (CHW) for an FHWC sequence
    def cmn(x, layout):
        return fn.crop_mirror_normalize(x, crop=(32, 40), mirror=1, mean=[120.0] * 3, std=[60.0] * 3,
                                        dtype=types.FLOAT, output_layout=layout)
    video, out = _run(lambda v: (v, cmn(v, "FCHW")))
    _assert_frame_by_frame(out, _frames_as_images(lambda x: cmn(x, "CHW"), video))


def test_per_frame_arguments():
    brightness = [np.array([0.5, 1.0, 1.5, 0.8], np.float32), np.array([1.0, 0.7, 0.9, 1.1], np.float32)]
    angles = [np.array([0, 90, 180, 270], np.float32), np.array([10, 20, 30, 40], np.float32)]

    def graph(v):
        b = fn.per_frame(fn.external_source(source=lambda: brightness))
        a = fn.per_frame(fn.external_source(source=lambda: angles))
        return v, fn.brightness(v, brightness=b), fn.rotate(v, angle=a, keep_size=True)
    video, bright, rotated = _run(graph)
    for i in range(2):
        assert bright[i].shape == video[i].shape and rotated[i].shape == video[i].shape
        for k in range(FRAMES):
            one, = _frames_as_images(lambda x: fn.brightness(x, brightness=float(brightness[i][k])), [video[i][k:k + 1]])
            np.testing.assert_array_equal(bright[i][k], one)
            one, = _frames_as_images(lambda x: fn.rotate(x, angle=float(angles[i][k]), keep_size=True),
                                     [video[i][k:k + 1]])
            np.testing.assert_array_equal(rotated[i][k], one)


def test_per_frame_values_must_match_the_frames():
    wrong = [np.array([1.0, 1.0], np.float32)] * 2
    with pytest.raises(RuntimeError, match="contains 2 per-frame parameters, but there are"):
        _run(lambda v: fn.brightness(v, brightness=fn.per_frame(fn.external_source(source=lambda: wrong))))
