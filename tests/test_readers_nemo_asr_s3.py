"""readers.nemo_asr over an object store: manifests and audio files in a real S3 server on loopback
give what the same reader gives over the same files on local disk."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from _audio_data import files
from _s3_server import s3_server  # noqa: F401 - the fixture
from test_readers_nemo_asr import _nemo_pipe

import soundfile  # noqa: E402 - the audio extra, installed wherever the tests run


@pytest.fixture(scope="module")
def speech(s3_server):  # noqa: F811
    """Seven files in s3://speech/set/clips; a local manifest of their local paths, one in the bucket of
    paths relative to it (and one whole URL), one local of URLs. Returns the three manifests."""
    root = os.path.join(s3_server.bucket("speech"), "set")
    os.makedirs(os.path.join(root, "clips"))
    local, relative, urls = [], [], []
    for k in range(7):
        container = ["wav16", "flac24", "vorbis", "wavfloat"][k % 4]
        name = f"clips/{k}.{container}"
        files(container, 1, seed=k)[0].tofile(os.path.join(root, name))
        info = soundfile.info(os.path.join(root, name))
        entry = {"duration": info.duration, "text": f"utterance {k} é"}
        if k % 3 == 2:
            entry.update(offset=info.duration / 4, duration=info.duration / 2)
        local.append(json.dumps({"audio_filepath": os.path.join(root, name), **entry}))
        relative.append(json.dumps({"audio_filepath": f"s3://speech/set/{name}" if k == 5 else name, **entry}))
        urls.append(json.dumps({"audio_filepath": f"s3://speech/set/{name}", **entry}))
    manifests = {"local": os.path.join(root, "..", "local.json"), "in_bucket": os.path.join(root, "m.json"),
                 "urls": os.path.join(root, "..", "urls.json")}
    for which, lines in (("local", local), ("in_bucket", relative), ("urls", urls)):
        with open(manifests[which], "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    manifests["in_bucket"] = "s3://speech/set/m.json"
    return manifests


def _read(manifest, batch=3, iterations=4, checkpoint=None, **reader):
    p = _nemo_pipe(manifest, batch, checkpoint, **reader)
    out = []
    for _ in range(iterations):
        audio, rate, text, idx = p.run()
        out += [(np.array(audio.at(i)), float(np.array(rate.at(i))), bytes(np.array(text.at(i))),
                 int(np.array(idx.at(i))[0]), audio.source_info(i)) for i in range(len(audio))]
    return out, p


def _same(got, expected):
    assert [g[1:4] for g in got] == [e[1:4] for e in expected]
    for g, e in zip(got, expected):
        assert g[0].dtype == e[0].dtype and g[0].shape == e[0].shape and np.array_equal(g[0], e[0])


@pytest.mark.parametrize("reader", [{}, {"random_shuffle": True, "initial_fill": 4},
                                    {"num_shards": 2, "shard_id": 1, "pad_last_batch": True},
                                    {"downmix": False, "sample_rate": 8000.0}])
@pytest.mark.parametrize("which", ["in_bucket", "urls"])
def test_as_on_local_disk(speech, reader, which):
    expected, local = _read(speech["local"], **reader)
    got, remote = _read(speech[which], **reader)
    assert remote.reader_meta("Reader") == local.reader_meta("Reader")
    _same(got, expected)
    assert {e[0].size for e in expected} != {0} and len({e[3] for e in expected}) >= 4
    # source_info: the audio file's URL (a relative one resolved beside the manifest)
    assert [g[4] for g in got] == [e[4].replace(os.path.dirname(os.path.dirname(e[4])), "s3://speech/set")
                                   for e in expected]


def test_checkpoint_resumes_exactly(speech):
    reader = {"random_shuffle": True, "initial_fill": 3}
    reference, _ = _read(speech["in_bucket"], iterations=6, **reader)
    head, first = _read(speech["in_bucket"], iterations=2, **reader)
    tail, _ = _read(speech["in_bucket"], iterations=4, checkpoint=first.checkpoint(), **reader)
    _same(head + tail, reference)


def test_missing_audio_names_url_and_reader(speech, s3_server, tmp_path):  # noqa: F811
    (tmp_path / "m.json").write_text("\n".join(json.dumps({"audio_filepath": p, "duration": 0.1, "text": p})
                                               for p in ["s3://speech/set/clips/0.wav16", "s3://speech/set/gone.wav"]))
    with pytest.raises(RuntimeError, match=r"readers\.nemo_asr.*'s3://speech/set/gone\.wav'.*no such object"):
        _read(str(tmp_path / "m.json"), batch=2, iterations=1)
    with pytest.warns(RuntimeWarning, match="gone.wav"):
        got, p = _read(str(tmp_path / "m.json"), batch=2, iterations=1, on_error="skip")
    assert [g[2] for g in got] == [b"s3://speech/set/clips/0.wav16"] * 2
    with pytest.raises(RuntimeError, match=r"readers\.nemo_asr.*'s3://speech/set/none\.json'.*no such object"):
        _read("s3://speech/set/none.json")


def test_manifest_mixing_urls_and_local_paths_is_refused(speech, tmp_path):
    (tmp_path / "m.json").write_text("\n".join(json.dumps({"audio_filepath": p, "duration": 0.1})
                                               for p in ["s3://speech/set/clips/0.wav16", str(tmp_path / "a.wav")]))
    with pytest.raises(ValueError, match=r"readers\.nemo_asr.*mix URLs and local paths"):
        _read(str(tmp_path / "m.json"), batch=1, iterations=1)
