"""on_error="skip" on readers and decoders (opt-in, beyond DALI): an unreadable or undecodable
sample is dropped, the batch refilled from the next samples (full batches, labels still aligned),
each skipped file recorded in Pipeline.skipped_samples and warned about once. The default stays
DALI's: the iteration raises, naming the file."""
import os
import warnings

import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def
from penstock.plugin.pytorch import DALIGenericIterator, LastBatchPolicy


def _jpeg(path, seed):
    rng = np.random.default_rng(seed)
    px = rng.integers(0, 256, (8 + seed % 5, 10 + seed % 3, 3), dtype=np.uint8)
    Image.fromarray(px).save(path, quality=95)


def _reference(path):
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"))


def _dataset(tmp_path, n, corrupt=(), missing=(), directories=()):
    """n files; the given indices are corrupt JPEGs, deleted after listing, or directories.
    Returns (file_list path, paths, labels)."""
    paths, labels = [], []
    for i in range(n):
        p = str(tmp_path / f"img{i:03d}.jpg")
        if i in directories:
            os.mkdir(p)
        elif i in corrupt:
            with open(p, "wb") as f:
                f.write(b"\xff\xd8\xff\xe0 definitely not a jpeg" * 3)
        else:
            _jpeg(p, i)
        paths.append(p)
        labels.append(100 + i)
    return paths, labels


def _pipe(paths, labels, batch, reader_skip="raise", decoder_skip="raise", resize=False):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        jpegs, lab = fn.readers.file(files=paths, labels=labels, name="Reader", on_error=reader_skip)
        images = fn.decoders.image(jpegs, on_error=decoder_skip)
        return (fn.resize(images, size=(6, 6)) if resize else images), lab

    return p()


def _check_batch(images, labels, paths, all_labels):
    """Every sample is the decode of the file its label belongs to."""
    by_label = dict(zip(all_labels, paths))
    for i in range(len(images)):
        label = int(np.asarray(labels.at(i)).reshape(-1)[0])
        np.testing.assert_array_equal(np.asarray(images.at(i)), _reference(by_label[label]))
        assert images._source_info[i] == by_label[label]


def test_default_raises_naming_the_file(tmp_path):
    paths, labels = _dataset(tmp_path, 4, corrupt={2})
    pipe = _pipe(paths, labels, batch=4)
    with pytest.raises(RuntimeError, match="img002.jpg"):
        pipe.run()


def test_decoder_skip_keeps_batches_full_and_labels_aligned(tmp_path):
    paths, labels = _dataset(tmp_path, 10, corrupt={1, 6})
    pipe = _pipe(paths, labels, batch=4, decoder_skip="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = []
        for _ in range(5):  # two epochs' worth: each corrupt file comes round twice
            images, labs = pipe.run()
            assert len(images) == 4 and len(labs) == 4
            _check_batch(images, labs, paths, labels)
            seen += [int(np.asarray(labs.at(i)).reshape(-1)[0]) for i in range(4)]
    good = [l for i, l in enumerate(labels) if i not in (1, 6)]
    # the stream order with the corrupt files left out, wrapping at the end of the dataset
    assert seen == (good * 3)[:20]
    skipped = pipe.skipped_samples[:5]  # later ones: iterations already prefetched
    assert [s["source"] for s in skipped] == [paths[1], paths[6], paths[1], paths[6], paths[1]]
    assert [s["iteration"] for s in skipped] == [0, 1, 2, 3, 4]
    assert all(s["operator"] and s["reason"] for s in skipped)
    warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(warned) == 2 and "img001.jpg" in warned[0] and "img006.jpg" in warned[1]


def test_skip_records_are_bounded_and_counted(tmp_path, monkeypatch):
    """A damaged file comes round every epoch: the records keep the latest SKIPPED_KEPT per
    operator, skipped_count counts them all, and the file is still warned about once."""
    from penstock import _on_error
    monkeypatch.setattr(_on_error, "SKIPPED_KEPT", 3)
    paths, labels = _dataset(tmp_path, 4, corrupt={2})
    pipe = _pipe(paths, labels, batch=2, decoder_skip="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(12):  # 24 samples of 3 good files a turn: the damaged one skipped 8 times
            pipe.run()
    assert pipe.skipped_count >= 8
    assert len(pipe.skipped_samples) == 3
    assert [s["source"] for s in pipe.skipped_samples] == [paths[2]] * 3
    iterations = [s["iteration"] for s in pipe.skipped_samples]
    assert iterations == sorted(iterations) and iterations[0] >= 6  # the latest ones, not the first
    assert sum(issubclass(w.category, RuntimeWarning) for w in caught) == 1


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_reader_skip_unreadable_files(tmp_path, kind):
    paths, labels = _dataset(tmp_path, 6, directories={3} if kind == "directory" else ())
    if kind == "missing":
        os.remove(paths[3])
    pipe = _pipe(paths, labels, batch=3, reader_skip="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = [pipe.run() for _ in range(2)]
    got = [int(np.asarray(l.at(i)).reshape(-1)[0]) for _, l in out for i in range(3)]
    assert got == [100, 101, 102, 104, 105, 100]
    for images, labs in out:
        _check_batch(images, labs, paths, labels)
    early = [s for s in pipe.skipped_samples if s["iteration"] < 2]  # later: prefetched iterations
    assert [(s["source"], s["iteration"]) for s in early] == [(paths[3], 1)]


def test_iterator_len_and_epoch_with_skips(tmp_path):
    """len() follows the reader's epoch size (files listed, skipped or not); every batch is full,
    and an epoch ends after len() batches as without skipping."""
    paths, labels = _dataset(tmp_path, 10, corrupt={4})
    pipe = _pipe(paths, labels, batch=4, decoder_skip="skip", resize=True)
    it = DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader",
                             last_batch_policy=LastBatchPolicy.DROP)
    assert len(it) == 10 // 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        batches = list(it)
    assert len(batches) == len(it)
    assert all(b[0]["label"].shape[0] == 4 for b in batches)


def test_every_sample_failing_gives_up_with_an_error(tmp_path):
    paths, labels = _dataset(tmp_path, 3, corrupt={0, 1, 2})
    pipe = _pipe(paths, labels, batch=2, decoder_skip="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(RuntimeError, match="every sample of the dataset failed"):
            pipe.run()
    assert len(pipe.skipped_samples) >= 3


def test_skip_needs_readers_before_the_decoder():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        data = fn.external_source(source=lambda: [np.zeros(4, np.uint8)] * 2)
        return fn.decoders.image(data, on_error="skip")

    with pytest.raises(ValueError, match="cannot give extra samples"):
        p().build()


def test_unknown_policy_is_a_build_error(tmp_path):
    paths, labels = _dataset(tmp_path, 2)
    with pytest.raises(ValueError, match="on_error.*'raise' or 'skip'.*'ignore'"):
        _pipe(paths, labels, batch=2, decoder_skip="ignore").build()


def test_reader_and_decoder_skip_together_with_shuffle(tmp_path):
    paths, labels = _dataset(tmp_path, 12, corrupt={2, 9}, directories={5})

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=3)
    def p():
        jpegs, lab = fn.readers.file(files=paths, labels=labels, random_shuffle=True, initial_fill=6,
                                     on_error="skip", name="Reader")
        return fn.decoders.image(jpegs, on_error="skip", name="Decoder"), lab

    pipe = p()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(6):
            images, labs = pipe.run()
            assert len(images) == 4
            _check_batch(images, labs, paths, labels)
    by_op = {}
    for s in pipe.skipped_samples:
        by_op.setdefault(s["source"], set()).add(s["operator"])
    # the directory is the reader's to skip, the corrupt files the decoder's
    assert by_op.pop(paths[5]) == {"Reader"}
    assert by_op and all(src in (paths[2], paths[9]) and ops == {"Decoder"} for src, ops in by_op.items())


def test_reader_and_decoder_skips_name_files_alike(tmp_path):
    """skipped_samples' source is the sample's source_info whichever operator skipped it: with
    file_root, the path as listed (relative), for the reader's skips as for the decoder's."""
    paths, labels = _dataset(tmp_path, 6, corrupt={1}, directories={4})
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{os.path.basename(p)} {label}\n" for p, label in zip(paths, labels)))

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def p():
        jpegs, lab = fn.readers.file(file_root=str(tmp_path), file_list=str(listing), on_error="skip", name="Reader")
        return fn.decoders.image(jpegs, on_error="skip", name="Decoder"), lab

    pipe = p()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        images, _ = pipe.run()
        pipe.run()
    assert images._source_info == ["img000.jpg", "img002.jpg"]
    first = {s["source"]: s["operator"] for s in pipe.skipped_samples if s["iteration"] < 2}
    assert first == {"img001.jpg": "Decoder", "img004.jpg": "Reader"}
