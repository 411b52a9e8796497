"""readers.nemo_asr: NeMo manifests read and decoded as soundfile decodes the listed ranges;
sharding, checkpoints, on_error="skip", errors naming the file, paths as listed."""
import json
import os

import numpy as np
import pytest

from _audio_data import files
from penstock import fn, pipeline_def

import soundfile  # noqa: E402 - the audio extra, installed wherever the tests run


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("nemo")
    lines, expected = [], []
    for k in range(7):
        container = ["wav16", "flac24", "vorbis", "wavfloat"][k % 4]
        path = str(root / f"{k}.{container}")
        blob = files(container, 1, seed=k)[0]
        blob.tofile(path)
        info = soundfile.info(path)
        entry = {"audio_filepath": path, "duration": info.duration, "text": f"utterance {k} é"}
        if k % 3 == 2:
            entry.update(offset=info.duration / 4, duration=info.duration / 2)
        lines.append(json.dumps(entry))
        expected.append((path, entry, info))
    (root / "manifest.json").write_text("\n".join(lines) + "\n")
    return str(root / "manifest.json"), expected


def _nemo_pipe(manifest_path, batch=3, checkpoint=None, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=3, enable_checkpointing=True,
                  checkpoint=checkpoint)
    def p():
        return tuple(fn.readers.nemo_asr(manifest_filepaths=[manifest_path], read_idxs=True, name="Reader", **kw))
    pipe = p()
    pipe.build()
    return pipe


def test_nemo_reader_decodes_the_listed_ranges(manifest):
    path, expected = manifest
    pipe = _nemo_pipe(path, batch=7)
    audio, rate, text, idx = pipe.run()
    for i in range(7):
        k = int(np.array(idx.at(i))[0])
        file_path, entry, info = expected[k]
        want, _ = soundfile.read(file_path, dtype="float32", always_2d=True)
        first = int(entry.get("offset", 0) * info.samplerate)
        count = min(int(entry["duration"] * info.samplerate), info.frames - first)
        np.testing.assert_allclose(np.array(audio.at(i)), want[first:first + count].mean(axis=1), atol=2e-7)
        assert float(np.array(rate.at(i))) == info.samplerate
        assert bytes(np.array(text.at(i))).decode() == entry["text"]


def test_nemo_reader_shards_cover_the_manifest(manifest):
    path, _ = manifest
    seen = []
    for shard in range(3):
        pipe = _nemo_pipe(path, batch=1, shard_id=shard, num_shards=3)
        for _ in range((shard + 1) * 7 // 3 - shard * 7 // 3):  # the shard's size
            seen.append(int(np.array(pipe.run()[3].at(0))[0]))
    assert sorted(seen) == list(range(7))


def test_nemo_reader_resumes_from_a_checkpoint(manifest):
    path, _ = manifest
    kw = dict(random_shuffle=True, initial_fill=3)

    def indices(pipe):
        idx = pipe.run()[3]
        return np.concatenate([np.array(idx.at(i)) for i in range(len(idx))])
    first = _nemo_pipe(path, **kw)
    reference = [indices(first) for _ in range(6)]
    head = _nemo_pipe(path, **kw)
    for _ in range(2):
        head.run()
    resumed = _nemo_pipe(path, checkpoint=head.checkpoint(), **kw)
    tail = [indices(resumed) for _ in range(4)]
    for a, b in zip(reference[2:], tail):
        np.testing.assert_array_equal(a, b)


def test_nemo_reader_skips_an_unreadable_file(tmp_path):
    lines = []
    for k in range(4):
        path = str(tmp_path / f"{k}.wav")
        with open(path, "wb") as f:
            f.write(b"not audio" if k == 2 else files("wav16", 1, seed=k)[0].tobytes())
        lines.append(json.dumps({"audio_filepath": path, "duration": 0.1, "text": str(k)}))
    (tmp_path / "m.json").write_text("\n".join(lines))
    pipe = _nemo_pipe(str(tmp_path / "m.json"), batch=3, on_error="skip")
    with pytest.warns(RuntimeWarning, match="2.wav"):
        out = pipe.run()
    assert [int(np.array(out[3].at(i))[0]) for i in range(3)] == [0, 1, 3]


def test_nemo_reader_error_names_the_file(tmp_path):
    path = str(tmp_path / "bad.wav")
    with open(path, "wb") as f:
        f.write(b"RIFF....WAVEfmt garbage")
    (tmp_path / "m.json").write_text(json.dumps({"audio_filepath": path, "duration": 1.0, "text": ""}))
    pipe = _nemo_pipe(str(tmp_path / "m.json"), batch=1)
    with pytest.raises(RuntimeError, match="bad.wav"):
        pipe.run()


def test_file_paths_are_as_listed(tmp_path, monkeypatch):
    """A relative audio_filepath is opened from the working directory, as DALI 2.4 does."""
    files("wav16", 1)[0].tofile(tmp_path / "a.wav")
    (tmp_path / "m.json").write_text(json.dumps({"audio_filepath": "a.wav", "duration": 1.0, "text": "x"}))
    monkeypatch.chdir(tmp_path)
    pipe = _nemo_pipe(os.path.join(str(tmp_path), "m.json"), batch=1)
    assert np.array(pipe.run()[0].at(0)).size > 0
