"""What the video operators take from PyAV, under every PyAV the 'video' extra admits (14 and
later): PyAV 19 dropped ``av.open``'s ``metadata_errors`` and gives its own rationals (0/1 where
unset) instead of Fractions and None. `make test` runs this file under the pinned PyAV and, in
a venv of CPython 3.12+, under the newest (the Makefile's newest-deps-test)."""
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from _video_data import check_frames, clip, encoded
from penstock import fn, pipeline_def
from penstock.operators._video_codec import as_fraction, index_of, open_video

av = pytest.importorskip("av")

def _with_latin1_tag() -> bytes:
    """The tests' H.264 clip in MP4 with its encoder tag ("Lavf..." as FFmpeg's muxer writes it)
    turned to Latin-1, which is not UTF-8 (the same length: the atoms' sizes hold)."""
    data = encoded("h264", "mp4", frames=12)
    assert data.count(b"Lavf") == 1
    return data.replace(b"Lavf", "L\u00e0vf".encode("latin-1"))


def test_a_tag_that_is_not_utf8_is_read_past():
    data = _with_latin1_tag()
    with open_video(av, data) as container:
        tag = container.metadata.get("encoder", "")
    assert tag.startswith("L") and tag[2:].startswith("vf") and "L\u00e0vf" not in tag  # read, not as UTF-8

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return fn.decoders.video(fn.external_source(source=lambda: [np.frombuffer(data, np.uint8)]),
                                 sequence_length=12)
    video, = p().run()
    check_frames(np.asarray(video.at(0)), clip(12), range(12), "h264")


def test_the_index_holds_fractions_whatever_rationals_pyav_gives():
    index = index_of(av, encoded("h264", "mp4", frames=12), "clip")
    assert type(index.time_base) is Fraction and type(index.rate) is Fraction
    assert index.rate == 25
    np.testing.assert_allclose(index.timestamps(), np.arange(12) * 0.04)


@pytest.mark.parametrize("value,expect", [
    (Fraction(1, 25), Fraction(1, 25)),
    (None, None),                                              # PyAV before 19: unset
    (SimpleNamespace(numerator=0, denominator=1), None),       # PyAV 19's AVRational(0, 1): unset
    (SimpleNamespace(numerator=30000, denominator=1001), Fraction(30000, 1001)),
])
def test_as_fraction(value, expect):
    got = as_fraction(value)
    assert got == expect and (got is None or type(got) is Fraction)
