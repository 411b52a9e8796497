"""The fuzz targets and their seeds, shared by the fuzzer (fuzz.py) and the regression tests.

Each target takes arbitrary bytes and must end in a clean, named error or a result: anything
else (another exception type, a crash, a sanitizer report) is a bug. The engine is
penstock._engine, or the sanitizer build named by PENSTOCK_FUZZ_ENGINE (see README.md).
"""
from __future__ import annotations

import importlib.util
import io
import os
import sys
import tempfile

import numpy as np

_CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "core")
if _CORE not in sys.path:
    sys.path.insert(0, _CORE)


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

from penstock import _engine  # noqa: E402
from penstock._operator import SampleError  # noqa: E402
from penstock.operators import decoders  # noqa: E402
from penstock.operators.audio_decoders import load_libsndfile  # noqa: E402
from penstock.operators.audio_readers import NemoAsrReader  # noqa: E402
from penstock.operators.readers_file import FileReaderCPU  # noqa: E402
from penstock.types import DALIImageType  # noqa: E402

_POOL = _engine.ThreadPool(1)
load_libsndfile("fuzz")
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
    found = _scan(FileReaderCPU.scan, data, "list.txt",
                  lambda path: {"file_root": None, "file_list": path, "files": None, "labels": None})
    if found:
        op, n = found
        assert n == len(op.paths) == len(op.labels) > 0


def nemo_manifest(data: bytes) -> None:
    """readers.nemo_asr's parsing of NeMo manifests (JSON lines)."""
    found = _scan(NemoAsrReader.scan, data, "manifest.json",
                  lambda path: {"manifest_filepaths": (path,), "min_duration": 0.0, "max_duration": 0.0})
    if found:
        op, n = found
        assert n == len(op.paths) > 0


TARGETS = {"decode": decode, "pillow": pillow, "file_list": file_list, "audio": audio,
           "nemo_manifest": nemo_manifest}


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
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from _audio_data import CONTAINERS, encode, signal
        for k, container in enumerate(CONTAINERS):
            rate = 16000 if container == "opus" else (8000, 22050)[k % 2]
            _AUDIO.append(encode(signal("chirp", 600, rate, 1 + k % 2, k), rate, container).tobytes())
    return _AUDIO


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
    if target == "decode":
        return [bytes([i, opts, 255]) for i in range(len(_images())) for opts in (0, 8 | 16, 2 | 32, 3 | 64)]
    blobs = _encoded([("TIFF", {}), ("WEBP", {"quality": 80}), ("BMP", {"compression": "rle8"})])
    return [bytes([opts]) + blob for blob in blobs for opts in (0, 1, 2, 3)]
