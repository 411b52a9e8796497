"""examples/audio/speech_features.py on the CPU: the ASR front end feeds the PyTorch iterator."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import soundfile  # noqa: E402,F401 - the audio extra, installed wherever the tests run

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "audio"))
import speech_features as example  # noqa: E402


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return example.make_manifest(str(tmp_path_factory.mktemp("speech")), count=10)


def test_batches_of_features_lengths_and_transcripts(manifest):
    seen_texts = []
    for batch in example.loader(manifest, batch_size=4):
        b = batch[0]
        features, frames = b["features"], b["frames"].view(-1)
        assert features.dtype == torch.float32 and features.shape[1] == example.BANDS
        assert features.shape[2] == int(frames.max())  # padded to the longest utterance
        for row, n in zip(features, frames.tolist()):
            valid = row[:, :n].numpy()
            np.testing.assert_allclose(valid.mean(axis=1), 0, atol=1e-3)  # normalized per band
            assert not row[:, n:].any()                                   # zero padding after it
        for row, n in zip(b["text"], b["text_length"].view(-1).tolist()):
            seen_texts.append(bytes(row[:n].tolist()).decode())
    assert sorted(seen_texts) == sorted(f"utterance number {k}" for k in range(10))


def test_frames_follow_the_resampled_durations(manifest):
    import json
    import soundfile
    with open(manifest, encoding="utf-8") as f:
        entries = [json.loads(line) for line in f]
    by_text = {e["text"]: e for e in entries}
    batch = next(iter(example.loader(manifest, batch_size=10)))[0]
    for row, n, frames in zip(batch["text"], batch["text_length"].view(-1).tolist(), batch["frames"].view(-1).tolist()):
        info = soundfile.info(by_text[bytes(row[:n].tolist()).decode()]["audio_filepath"])
        samples = int(np.ceil(info.frames * example.SAMPLE_RATE / info.samplerate))
        assert frames == samples // example.STEP + 1


def test_main_prints_a_summary(manifest, capsys):
    summary = example.main(["--manifest", manifest, "--batch-size", "3", "--batches", "2"])
    assert len(summary) == 2 and summary[0]["features"][0] == 3
    assert capsys.readouterr().out.count("\n") == 2
