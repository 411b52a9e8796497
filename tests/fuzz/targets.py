"""The fuzz targets and their seeds, shared by the fuzzer (fuzz.py) and the regression tests.

Each target takes arbitrary bytes and must end in a clean, named error or a result: anything
else (another exception type, a crash, a sanitizer report) is a bug. The engine is
penstock._engine, or the sanitizer build named by PENSTOCK_FUZZ_ENGINE (see README.md).
"""
from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import sys
import tempfile
import warnings

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _path in (os.path.join(_ROOT, "core"), os.path.join(_ROOT, "examples")):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def _load_engine() -> None:
    """Puts the sanitizer build of the engine in place of penstock._engine before penstock loads."""
    path = os.environ.get("PENSTOCK_FUZZ_ENGINE")
    if not path or "penstock._engine" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location("penstock._engine", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["penstock._engine"] = module


_load_engine()

from make_sample_data import tf_example, tfrecord_record  # noqa: E402
from make_video_data import encode as encode_video, encoder_for  # noqa: E402
from penstock import _checkpoint, _engine, fn, pipeline_def  # noqa: E402
from penstock._operator import SampleError  # noqa: E402
from penstock.operators import image_decode as decoders  # noqa: E402
from penstock.operators._video_codec import decode_into, index_of, require_av  # noqa: E402
from penstock.operators.audio_decode import load_libsndfile  # noqa: E402
from penstock.operators.readers_nemo_asr import NemoAsrReader  # noqa: E402
from penstock.operators._reader import FilesReader  # noqa: E402
from penstock.operators.readers_file import FileReaderCPU  # noqa: E402
from penstock.types import DALIImageType  # noqa: E402

_POOL = _engine.ThreadPool(1)
_OUTPUT_TYPES = (DALIImageType.RGB, DALIImageType.BGR, DALIImageType.GRAY, DALIImageType.YCbCr,
                 DALIImageType.ANY_DATA)
MAX_PIXELS = 1 << 22  # decoding a header's claimed size beyond this only measures memory


class _Op:
    """What the Python helpers under test read from an operator."""
    label = "fuzz ('target')"
    name = "target"


def decode_blob(data: bytes, originals: list[bytes] | None = None) -> tuple[int, bytes]:
    """(options, encoded file) of a decode input: a valid file (``originals``, default: an image
    of every format) with bytes overwritten and the end cut, so random inputs reach past the
    headers (the native code gives libFuzzer no coverage, see README.md); option bit 7 takes the
    rest as raw bytes instead.

    Layout: [file index] [options] [cut] then (offset lo, offset hi, value) triples."""
    if len(data) < 3:
        return 0, b""
    opts = data[1]
    if opts & 128:
        return opts, bytes(data[2:])
    images = originals or _images()
    blob = bytearray(images[data[0] % len(images)])
    edits = data[3:]
    for k in range(0, len(edits) - 2, 3):
        blob[int.from_bytes(edits[k:k + 2], "little") % len(blob)] = edits[k + 2]
    keep = len(blob) if data[2] == 255 else max(1, len(blob) * data[2] // 255)
    return opts, bytes(blob[:keep])


def decode(data: bytes) -> None:
    """The native decoders (JPEG, PNG, BMP, PNM): header peek, then full or windowed decode."""
    opts, raw = decode_blob(data)
    if not raw:
        return
    blob = np.frombuffer(raw, np.uint8).copy()
    shapes = np.array([[blob.size]], np.int64)
    offsets = np.zeros(1, np.int64)
    output_type = int(_OUTPUT_TYPES[opts % len(_OUTPUT_TYPES)])
    adjust = bool(opts & 8)
    try:
        hwc, fallback = _engine.peek_image_shapes(_POOL, blob, shapes, offsets, output_type, adjust)
        if fallback[0] or int(np.prod(hwc[0])) > MAX_PIXELS:
            return
        h, w = int(hwc[0][0]), int(hwc[0][1])
        crop = None
        if opts & 16 and h > 1 and w > 1:
            crop = np.array([[h // 4, w // 3, max(1, h // 2), max(1, w // 2)]], np.int64)
        target = np.array([[max(1, h // 3), max(1, w // 3)]], np.int64) if opts & 32 else None
        if target is not None and crop is not None:
            target = np.minimum(target, crop[:, 2:4])
        _engine.decode_images(_POOL, blob, shapes, offsets, output_type, adjust, crop, target,
                              bool(opts & 64), return_geometry=target is not None)
    except _engine.SampleError:
        pass


def audio(data: bytes) -> None:
    """The audio decoder (libsndfile: WAV, FLAC, OGG/Vorbis, Opus), every output type, downmixed
    or not, resampled or not."""
    opts, raw = decode_blob(data, _audio_files())
    if not raw:
        return
    blob = np.frombuffer(raw, np.uint8).copy()
    out_type = (5, 6, 9)[opts % 3]  # INT16, INT32, FLOAT
    rates = np.array([(0.0, 8000.0, 16000.0, 44100.0)[(opts >> 2) % 4]])
    try:
        _engine.audio_decode(_POOL, blob, np.array([[blob.size]], np.int64), np.zeros(1, np.int64), out_type,
                             bool(opts & 16), rates, 50.0, None, None)
    except _engine.SampleError:
        pass


def pillow(data: bytes) -> None:
    """The Pillow fallback (TIFF, WebP, JPEG 2000, compressed BMP) and its colour conversions."""
    if len(data) < 2:
        return
    try:
        img = decoders._pillow_open(_Op(), data[1:], 0, bool(data[0] & 1))
        if img.width * img.height > MAX_PIXELS:
            return
        px = decoders._stored_pixels(img)
        decoders._convert_type(px, int(_OUTPUT_TYPES[data[0] % len(_OUTPUT_TYPES)]))
    except SampleError:
        pass


def _scan(scan, data: bytes, file_name: str, args_for) -> tuple[_Op, int] | None:
    """A reader's ``scan`` of a file holding ``data`` (``args_for(path)``: the reader's arguments):
    the operator and its count, or None after a clean error naming the operator."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, file_name)
        with open(path, "wb") as f:
            f.write(data)
        op = _Op()
        op.args = args_for(path)
        try:
            return op, scan(op)
        except (ValueError, RuntimeError) as exc:
            if not str(exc).startswith(op.label):
                raise AssertionError(f"error without the operator's name: {exc!r}") from exc
            return None


def file_list(data: bytes) -> None:
    """readers.file's parsing of a file_list: 'path label' lines."""
    def scan(op: _Op) -> int:
        op.fetch_remote = lambda: FilesReader.fetch_remote(op)  # what the scan calls once the paths are listed
        return FileReaderCPU.scan(op)

    found = _scan(scan, data, "list.txt",
                  lambda path: {"file_root": None, "file_list": path, "files": None, "labels": None})
    if found:
        op, n = found
        assert n == len(op.paths) == len(op.labels) > 0


_TMP = tempfile.mkdtemp(prefix="penstock-fuzz-")
_FEATURES = ["data", "floats", "ints"]  # of every kind: bytes, float, int64


def tfrecord(data: bytes) -> None:
    """readers.tfrecord's native read: the CRC32C checks, then the tf.train.Example parser. Option
    bit 0 frames the rest as one record with valid CRCs (so the parser sees it), else the rest is
    the whole file, its one index entry spanning it."""
    if not data:
        return
    body = tfrecord_record(data[1:]) if data[0] & 1 else bytes(data[1:])
    path = os.path.join(_TMP, "fuzz.tfrecord")
    with open(path, "wb") as f:
        f.write(body)
    try:
        parsed = _engine.tfrecord_read(_POOL, [path], np.zeros(1, np.int64), np.array([len(body)], np.int64),
                                       _FEATURES, [0, 1, 2])
    except _engine.SampleError:
        return
    for values, counts, found in parsed:
        assert len(counts) == len(found) == 1 and int(counts.sum()) == len(values)


_CAFFE2_TYPES = (np.uint8, np.int32, np.float32, np.int64)


def caffe(data: bytes) -> None:
    """readers.caffe's and readers.caffe2's native record parsers (Caffe's Datum, Caffe2's TensorProtos).
    Option bit 0: Caffe2 (else Caffe); bit 1: no image; bits 2-4: label_type (mod 5); bits 5-6: additional
    inputs; bit 7: a bounding box."""
    if not data:
        return
    opts, record = data[0], np.frombuffer(bytes(data[1:]), np.uint8)
    starts, sizes = np.zeros(1, np.int64), np.array([len(record)], np.int64)
    try:
        if not opts & 1:
            images, image_sizes, labels, label_counts = _engine.caffe_datums(_POOL, record, starts, sizes)
            assert len(images) == image_sizes.sum() <= len(record) and len(labels) == label_counts.sum() <= 1
            return
        packed = _engine.caffe2_protos(_POOL, record, starts, sizes, not opts & 2, (opts >> 2 & 7) % 5, 5,
                                       opts >> 5 & 3, bool(opts & 128))
    except _engine.SampleError:
        return
    for k in range(0, len(packed), 4):
        values, shapes, ranks, types = packed[k:k + 4]
        count = int(np.prod(shapes[0, :ranks[0]]))
        assert len(values) == count * np.dtype(_CAFFE2_TYPES[types[0]]).itemsize


def inflate(data: bytes) -> None:
    """decoders.inflate's LZ4 block decoder: the rest of the input decompressed into 3 * (first byte) bytes."""
    if not data:
        return
    out = np.zeros(3 * data[0], np.uint8)
    src = np.frombuffer(bytes(data[1:]), np.uint8)
    try:
        _engine.inflate_lz4(_POOL, src, np.zeros(1, np.int64), np.array([len(src)], np.int64), out,
                            np.zeros(1, np.int64), np.array([len(out)], np.int64))
    except _engine.SampleError:
        return


_CKPT_FILES = 11


def _checkpoint_pipelines() -> list:
    """Two running pipelines (a shuffle buffer; shuffle_after_epoch with shards) over files whose
    bytes are their index, and a checkpoint of each taken mid-epoch."""
    if not _CKPT_PIPES:
        files = []
        for i in range(_CKPT_FILES):
            files.append(os.path.join(_TMP, f"{i:02d}.bin"))
            with open(files[-1], "wb") as f:
                f.write(bytes([i]))
        for kw in (dict(random_shuffle=True, initial_fill=4), dict(shuffle_after_epoch=True, num_shards=2, shard_id=1)):
            @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=5, enable_checkpointing=True,
                          exec_async=False, exec_pipelined=False)
            def pipe():
                data, _ = fn.readers.file(files=files, name="R", **kw)
                return data, fn.random.uniform(range=(0, 1))
            p = pipe()
            p.build()
            for _ in range(5):
                p.run()
            _CKPT_PIPES.append((p, p.checkpoint()))
    return _CKPT_PIPES


_CKPT_PIPES: list = []
# what a mutated value becomes: counters at and across the edges of their ranges, other types
_PALETTE = [-1, 0, 1, 2, 3, 4, 5, _CKPT_FILES - 1, _CKPT_FILES, 2 ** 31 - 1, 2 ** 31, 2 ** 63, -(2 ** 63) - 1,
            None, True, 1.5, "", "x", [], {}, [0, 0], "eJwDAAAAAAE="]


def _leaves(node, path=()):
    """(path, value) of every value in a parsed checkpoint."""
    yield path, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from _leaves(child, path + (key,))


def checkpoint(data: bytes) -> None:
    """Checkpoint parsing and restore: edits of a valid checkpoint, either as bytes (its checksum
    then fails) or, with option bit 0, as values of its parsed JSON signed again (reaching the
    range checks). Layout: [options] then (place, change) byte pairs. A restore must end in a
    RuntimeError about the checkpoint, or restore a pipeline that then runs and gives samples of
    its dataset only."""
    if not data:
        return
    pipe, cpt = _checkpoint_pipelines()[(data[0] >> 1) & 1]
    edits = data[1:]
    if data[0] & 1:
        state = json.loads(cpt)
        del state["sha256"]
        for k in range(0, len(edits) - 1, 2):
            places = list(_leaves(state))[1:]
            if not places:  # every key deleted
                break
            path, _ = places[edits[k] % len(places)]
            parent = state
            for key in path[:-1]:
                parent = parent[key]
            if edits[k + 1] == 255 and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(_PALETTE[edits[k + 1] % len(_PALETTE)])
        blob = _checkpoint.serialize(dict(state, sha256=_checkpoint._digest(state)))
    else:
        blob = bytearray(cpt)
        for k in range(0, len(edits) - 1, 2):
            blob[edits[k] * 7 % len(blob)] = edits[k + 1]
        blob = bytes(blob)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            pipe._restore_in_place(blob)
    except RuntimeError as exc:
        if "checkpoint" not in str(exc):
            raise AssertionError(f"a refused checkpoint without saying so: {exc!r}") from exc
        return
    for _ in range(3):
        samples, _ = pipe.run()
        assert len(samples) == 3 and all(0 <= int(np.asarray(samples.at(i))[0]) < _CKPT_FILES for i in range(3))



def video(data: bytes) -> None:
    """The video path: demuxing and indexing (PyAV/FFmpeg), then decoding a set of frames, seeking
    or not, with 4:2:0 frames converted by the engine (``yuv420_to_rgb``); inputs are edits of
    built-in videos of several codecs and containers, as for ``decode``."""
    opts, raw = decode_blob(data, _videos())
    if not raw:
        return
    av = require_av("fuzz")
    what = "video 'fuzz'"
    try:
        index = index_of(av, raw, what)
        if index.height * index.width * min(index.frames, 4) > MAX_PIXELS:
            return
        wanted = (np.arange(index.frames)[::-1] if opts & 1 else
                  np.array([index.frames - 1, 0, index.frames // 2, index.frames - 1]))[:4]
        out = np.empty((len(wanted), index.height, index.width, 3), np.uint8)
        decode_into(av, raw, index, wanted, out, what, _POOL, seek=not opts & 2)
    except ValueError as exc:
        if not str(exc).startswith(what):
            raise AssertionError(f"error without the video's name: {exc!r}") from exc


_RECORDIO_MAGIC = 0xCED7230A


def recordio_record(payload: bytes, split: int | None = None) -> bytes:
    """One RecordIO record of ``payload``; ``split``: cut in two parts around a magic word there."""
    parts = [payload] if split is None else [payload[:split], payload[split + 4:]]
    out = b""
    for p, part in enumerate(parts):
        flag = 0 if len(parts) == 1 else (1 if p == 0 else 3)
        out += (_RECORDIO_MAGIC.to_bytes(4, "little") + (flag << 29 | len(part)).to_bytes(4, "little") + part +
                b"\0" * (-len(part) % 4))
    return out


def recordio(data: bytes) -> None:
    """readers.mxnet's native parse (``_engine.recordio_records``): records (edits of built-in ones:
    one label, several labels, a record split around a magic word; or raw bytes, option bit 7) read
    as one to three byte ranges, cut where the options say."""
    opts, raw = decode_blob(data, _recordio_files())
    if not raw:
        return
    blob = np.frombuffer(raw, np.uint8).copy()
    cuts = sorted({0, len(blob)} | {len(blob) * c // 8 for c in (opts & 7, (opts >> 3) & 7)})
    starts = np.array(cuts[:-1], np.int64)
    sizes = np.diff(np.array(cuts, np.int64))
    try:
        images, image_sizes, labels, label_counts = _engine.recordio_records(_POOL, blob, starts, sizes)
    except _engine.SampleError:
        return
    assert int(image_sizes.sum()) == len(images) and int(label_counts.sum()) == len(labels)
    assert len(image_sizes) == len(label_counts) == len(starts)


def npy(data: bytes) -> None:
    """.npy files: decoders.numpy's in-memory headers and arrays (``npy_buffer_headers``,
    ``npy_decode``) and readers.numpy's from a file (``npy_headers``, ``npy_read``), whole or a
    window partly outside the array (padded); inputs are edits of built-in files (several types,
    ranks, both orders), as for ``decode``."""
    opts, raw = decode_blob(data, _npy_files())
    if not raw:
        return
    blob = np.frombuffer(raw, np.uint8).copy()
    one = np.array([[blob.size]], np.int64)
    zero = np.zeros(1, np.int64)
    try:
        codes, sizes, fortran, offsets, ndims, shapes = _engine.npy_buffer_headers(_POOL, blob, one, zero)
    except _engine.SampleError:
        return
    shape = shapes[:, :int(ndims[0])]
    if int(np.prod(shape)) * int(sizes[0]) > MAX_PIXELS:
        return
    out = np.empty(max(1, int(np.prod(shape))) * int(sizes[0]), np.uint8)
    try:
        _engine.npy_decode(_POOL, blob, one, zero, offsets, fortran, out, np.ascontiguousarray(shape), zero,
                           int(sizes[0]))
    except _engine.SampleError:
        pass
    path = os.path.join(_TMP, "fuzz.npy")
    with open(path, "wb") as f:
        f.write(raw)
    try:
        codes, sizes, fortran, offsets, ndims, shapes = _engine.npy_headers(_POOL, [path])
        shape = np.ascontiguousarray(shapes[:, :int(ndims[0])])
        anchors = np.zeros_like(shape)
        window = shape.copy()
        if opts & 1 and shape.size:  # from the middle, past the end on every axis: padded
            anchors, window = shape // 2, shape // 2 + 2
        window = np.ascontiguousarray(window)
        out = np.empty(max(1, int(np.prod(window))) * int(sizes[0]), np.uint8)
        _engine.npy_read(_POOL, [path], offsets, fortran, shape, np.ascontiguousarray(anchors), out, window, zero,
                         int(sizes[0]), np.zeros(int(sizes[0]), np.uint8))
    except _engine.SampleError:
        pass


def nemo_manifest(data: bytes) -> None:
    """readers.nemo_asr's parsing of NeMo manifests (JSON lines)."""
    def scan(op: _Op) -> int:
        op.fetch_remote = lambda: FilesReader.fetch_remote(op)  # what the scan calls once the paths are listed
        return NemoAsrReader.scan(op)

    found = _scan(scan, data, "manifest.json",
                  lambda path: {"manifest_filepaths": (path,), "min_duration": 0.0, "max_duration": 0.0})
    if found:
        op, n = found
        assert n == len(op.paths) > 0


TARGETS = {"decode": decode, "pillow": pillow, "file_list": file_list, "tfrecord": tfrecord, "caffe": caffe,
           "inflate": inflate, "checkpoint": checkpoint, "audio": audio, "nemo_manifest": nemo_manifest,
           "video": video, "recordio": recordio, "npy": npy}


_IMAGES: list[bytes] = []


def _encoded(formats) -> list[bytes]:
    from PIL import Image
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (19, 23, 3), dtype=np.uint8))
    out = []
    for fmt, kw in formats:
        variants = [rgb, rgb.convert("L")] + ([rgb.convert("RGBA")] if fmt in ("PNG", "TIFF", "WEBP") else [])
        for img in variants:
            buf = io.BytesIO()
            try:
                (img.convert("P") if kw.get("compression") else img).save(buf, fmt, **kw)
            except (OSError, ValueError, KeyError):
                continue  # this Pillow build cannot write the format
            out.append(buf.getvalue())
    return out


def _images() -> list[bytes]:
    """Valid images of every natively decoded format (the decode target edits them)."""
    if not _IMAGES:
        _IMAGES.extend(_encoded([("JPEG", {"quality": 90}), ("JPEG", {"progressive": True}),
                                 ("JPEG", {"subsampling": 0, "quality": 75}), ("PNG", {}),
                                 ("BMP", {}), ("PPM", {})]))
    return _IMAGES


_AUDIO: list[bytes] = []


def _audio_files() -> list[bytes]:
    """Valid files of every audio container (the audio target edits them)."""
    if not _AUDIO:
        load_libsndfile("fuzz")  # here, not at import: only the audio target needs libsndfile
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from _audio_data import CONTAINERS, encode, signal
        for k, container in enumerate(CONTAINERS):
            rate = 16000 if container == "opus" else (8000, 22050)[k % 2]
            _AUDIO.append(encode(signal("chirp", 600, rate, 1 + k % 2, k), rate, container).tobytes())
    return _AUDIO


_VIDEOS: list[bytes] = []


def _videos() -> list[bytes]:
    """Small valid videos of each codec this FFmpeg writes (the video target edits them)."""
    if not _VIDEOS:
        rng = np.random.default_rng(0)
        clip = np.repeat(rng.integers(0, 256, (1, 16, 16, 3), dtype=np.uint8), 6, axis=0)
        clip[:, :, :, 0] += np.arange(6, dtype=np.uint8)[:, None, None] * 20  # frames that differ
        for codec, container in (("h264", "mp4"), ("mjpeg", "avi"), ("mpeg4", "avi"), ("vp9", "webm")):
            if encoder_for(codec) is not None:
                _VIDEOS.append(encode_video(clip, codec, container, gop=3))
    return _VIDEOS


def _recordio_files() -> list[bytes]:
    """RecordIO records as readers.mxnet reads them: a label in the header, several labels before
    the image, a record split around a magic word."""
    head = (0).to_bytes(4, "little") + np.float32(3.0).tobytes() + bytes(16)
    several = (3).to_bytes(4, "little") + bytes(20) + np.array([1.0, 2.0, 4.0], np.float32).tobytes()
    image = bytes(range(40))
    return [recordio_record(head + image), recordio_record(several + image),
            recordio_record(head + image, split=24 + 7) + recordio_record(several + image[:5]),
            recordio_record(head)]


def _npy_files() -> list[bytes]:
    """.npy files of several types, ranks and orders (the npy target edits them)."""
    arrays = [np.arange(24, dtype=np.int16).reshape(2, 3, 4), np.asfortranarray(np.ones((3, 5), np.float32)),
              np.array(7, np.int64), np.zeros(0, np.uint8), np.arange(6, dtype=">u4"), np.array([True, False])]
    out = []
    for a in arrays:
        buf = io.BytesIO()
        np.save(buf, a)
        out.append(buf.getvalue())
    return out


def seeds(target: str) -> list[bytes]:
    """Valid inputs to start from: every image and audio file unedited with several options,
    well-formed file lists and manifests."""
    if target == "audio":
        return [bytes([i, opts, 255]) for i in range(len(_audio_files())) for opts in (0, 1 | 4 | 16, 2 | 12)]
    if target == "nemo_manifest":
        return [b'{"audio_filepath": "a.wav", "duration": 1.5, "text": "hello"}\n',
                b'{"audio_filepath": "b.flac", "offset": 0.5, "duration": 2}\n\n{"audio_filepath": "c.ogg"}\n']
    if target == "file_list":
        return [b"a.jpg 0\nb/c.png 1\n", b"x 3\n\n  y 4  \n", b"with space.jpg 7\n", b"-1 -1\n"]
    if target == "tfrecord":
        examples = [tf_example({"data": b"abc", "floats": [1.5, -2.0], "ints": [1, -1, 2 ** 40]}),
                    tf_example({"data": [b"x", b"yz"], "other": [3]}), tf_example({})]
        return [b"\x01" + ex for ex in examples] + [b"\x00" + tfrecord_record(ex) for ex in examples]
    if target == "checkpoint":
        return [bytes([opts]) for opts in range(4)] + [bytes([1, 40, 3, 2, 9]), bytes([3, 7, 12])]
    if target == "caffe":
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from test_readers_caffe import CAFFE2_IMAGE_RECORDS, CAFFE_RECORDS, FLOAT, INT32, caffe2_records, tensor
        weighted = caffe2_records(tensor(INT32, int32s=[4, 0]), (tensor(FLOAT, floats=[0.75, 0.5]),))[0]
        return ([b"\x00" + r for r in CAFFE_RECORDS[4:]] + [b"\x01" + r for r in CAFFE2_IMAGE_RECORDS[3:]]
                + [bytes([1 | 3 << 2]) + weighted, bytes([1 | 1 << 2 | 1 << 5 | 128]) + CAFFE2_IMAGE_RECORDS[0]])
    if target == "inflate":
        import lz4.block
        texts = [bytes(range(90)) * 2, b"abcabcabcabc" * 20, bytes(270)]
        return [bytes([len(t) // 3]) + lz4.block.compress(t, store_size=False) for t in texts]
    if target == "decode":
        return [bytes([i, opts, 255]) for i in range(len(_images())) for opts in (0, 8 | 16, 2 | 32, 3 | 64)]
    if target == "video":
        return [bytes([i, opts, 255]) for i in range(len(_videos())) for opts in range(4)]
    if target == "recordio":
        return [bytes([i, opts, 255]) for i in range(len(_recordio_files())) for opts in (0, 4, 4 | 6 << 3)]
    if target == "npy":
        return [bytes([i, opts, 255]) for i in range(len(_npy_files())) for opts in (0, 1)]
    blobs = _encoded([("TIFF", {}), ("WEBP", {"quality": 80}), ("BMP", {"compression": "rle8"})])
    return [bytes([opts]) + blob for blob in blobs for opts in (0, 1, 2, 3)]
