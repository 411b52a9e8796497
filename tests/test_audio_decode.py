"""decoders.audio against soundfile's decoding of the same files (the same libsndfile): every
container, dtype, downmixing, resampling, ranges; corrupt and truncated files name the operator
and the file."""

import numpy as np
import pytest

from _audio_data import CONTAINERS, LOSSY, encode, files, signal
from penstock import fn, pipeline_def, types

import soundfile  # noqa: E402 - the audio extra, installed wherever the tests run


def _decode(data, batch=None, **kw):
    @pipeline_def(batch_size=batch or len(data), num_threads=2, device_id=None)
    def p():
        enc = fn.external_source(source=lambda: data)
        return tuple(fn.decoders.audio(enc, **kw))
    pipe = p()
    pipe.build()
    audio, rate = pipe.run()
    return [np.array(audio.at(i)) for i in range(len(audio))], [float(np.array(rate.at(i))) for i in range(len(rate))]


def _soundfile(blob, dtype):
    import io
    return soundfile.read(io.BytesIO(blob.tobytes()), dtype=dtype, always_2d=True)


@pytest.mark.parametrize("container", sorted(CONTAINERS))
@pytest.mark.parametrize("dtype,sf_dtype", [(types.FLOAT, "float32"), (types.INT16, "int16"), (types.INT32, "int32")])
def test_decoding_equals_libsndfile(container, dtype, sf_dtype):
    data = files(container, 4)
    audio, rates = _decode(data, dtype=dtype)
    for blob, x, rate in zip(data, audio, rates):
        want, want_rate = _soundfile(blob, sf_dtype)
        assert rate == want_rate and x.dtype == want.dtype
        np.testing.assert_array_equal(x, want)  # (frames, channels), mono included


def test_lossless_files_decode_to_what_was_written():
    samples = np.round(signal("speechlike", 3000, 16000, 2) * 32767).astype(np.int16)
    for container in ("wav16", "flac16"):
        (x,), _ = _decode([encode(samples, 16000, container)], dtype=types.INT16)
        np.testing.assert_array_equal(x, samples)


def test_downmix_averages_the_channels_in_float():
    data = files("wav24", 4)
    audio, _ = _decode(data, downmix=True)
    for blob, x in zip(data, audio):
        want, _ = _soundfile(blob, "float32")
        assert x.ndim == 1
        np.testing.assert_allclose(x, want.mean(axis=1), rtol=0, atol=2e-7)


def test_resampling_keeps_a_tone_and_gives_dalis_length():
    rate, target = 44100, 16000
    t = np.arange(8820) / rate
    tone = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[:, None]
    (x,), (got_rate,) = _decode([encode(tone, rate, "wavfloat")], sample_rate=target)
    assert got_rate == target and x.shape == (int(np.ceil(8820 * target / rate)), 1)
    want = 0.5 * np.sin(2 * np.pi * 440 * np.arange(len(x)) / target)
    np.testing.assert_allclose(x[200:-200, 0], want[200:-200], atol=2e-3)  # away from the edges


def test_resampling_to_integers_is_rounded_full_scale():
    data = files("wav16", 4)
    floats, _ = _decode(data, sample_rate=12000)
    ints, _ = _decode(data, sample_rate=12000, dtype=types.INT16)
    for f, i in zip(floats, ints):
        scaled = (f * np.float32(32767)).astype(np.float64)  # in float, then rounded half away from zero
        np.testing.assert_array_equal(i, np.clip(np.trunc(scaled + np.copysign(0.5, scaled)), -32768, 32767))


def test_per_sample_rates():
    data = files("flac16", 4)
    targets = [np.array(r, np.float32) for r in (8000, 0, 24000, 16000)]  # 0: no resampling

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def p():
        audio, rate = fn.decoders.audio(fn.external_source(source=lambda: data),
                                        sample_rate=fn.external_source(source=lambda: targets))
        return audio, rate
    pipe = p()
    pipe.build()
    audio, rate = pipe.run()
    for i, blob in enumerate(data):
        info = soundfile.info(__import__("io").BytesIO(blob.tobytes()))
        assert float(np.array(rate.at(i))) == float(targets[i])  # reported as given, as DALI does
        want_rate = float(targets[i]) or info.samplerate
        assert np.array(audio.at(i)).shape[0] == int(np.ceil(info.frames * want_rate / info.samplerate))


def test_argument_checks():
    with pytest.raises(ValueError, match="dtype"):
        _decode(files("wav16", 1), dtype=types.UINT8)
    with pytest.raises(ValueError, match="quality"):
        _decode(files("wav16", 1), sample_rate=8000.0, quality=101.0)
    _decode(files("wav16", 1), quality=101.0)  # as in DALI, checked only where it resamples


def _files_pipe(paths, batch=2, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        enc, _ = fn.readers.file(files=paths, name="Reader")
        return tuple(fn.decoders.audio(enc, **kw))
    pipe = p()
    pipe.build()
    return pipe


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_bad_file_names_the_operator_and_the_file(tmp_path, damage):
    good = files("flac16", 2)
    paths = []
    for k, blob in enumerate(good):
        path = str(tmp_path / f"{k}.flac")
        data = blob.tobytes()
        if k == 1:
            data = b"RIFF not really audio" * 4 if damage == "garbage" else data[:len(data) // 2]
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    pipe = _files_pipe(paths)
    with pytest.raises(RuntimeError, match=r"decoders\.audio.*\n?.*") as err:
        pipe.run()
    assert "1.flac" in str(err.value) and "audio" in str(err.value)


def test_on_error_skip_replaces_a_bad_file(tmp_path):
    paths = []
    for k, blob in enumerate(files("wav16", 5)):
        path = str(tmp_path / f"{k}.wav")
        with open(path, "wb") as f:
            f.write(b"broken" if k == 1 else blob.tobytes())
        paths.append(path)
    pipe = _files_pipe(paths, batch=2, on_error="skip")
    with pytest.warns(RuntimeWarning, match="1.wav"):
        audio, _ = pipe.run()
    assert len(audio) == 2
    assert [s["source"] for s in pipe.skipped_samples][:1] == [paths[1]]


# ---- readers.nemo_asr ----------------------------------------------------------------------------

def test_deprecated_names():
    assert fn.audio_decoder is not None and fn.nemo_asr_reader is not None
    assert fn.experimental.audio_resample is not None


@pytest.mark.parametrize("container", sorted(set(CONTAINERS) - set(LOSSY)))
def test_silence_decodes_to_zeros(container):
    blob = encode(np.zeros((500, 2), np.float32), 16000, container)
    (x,), _ = _decode([blob], dtype=types.INT16)
    assert x.shape == (500, 2) and not x.any()
