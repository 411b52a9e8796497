"""Which damaged JPEGs each decoder refuses, and which it decodes to wrong pixels without a word.

Photo-like JPEGs (bench/photos.py) damaged inside their entropy-coded data, one kind at a time: a
flipped bit early, midway or late in the scan, a byte deleted or inserted midway, 100 bytes zeroed
midway, the last quarter of the scan cut (with and without the end marker put back). For each kind:

- ``penstock``: the decoders' corruption check (the engine's read-through of the entropy-coded data
  to the end marker, which the CPU decoders make as they decode and the mixed decoders make on the
  GPU's JPEGs): how many files it refuses, and how many it passes although their pixels differ
  from the clean file's (Pillow's libjpeg-turbo decoding, damaged and clean, compared).
- ``nvimgcodec-<backend>``: nvImageCodec, the library DALI 2.4's decoders are built on, with one
  backend (cpu here; hw, gpu and hybrid on a GPU): how many files it reports as not decoded, how
  many it decodes to pixels other than the clean file's, and of those how many penstock refuses.

Damage that leaves the Huffman codes in step decodes to wrong pixels in every JPEG decoder; what a
check can refuse is damage that puts the decoding out of step with the file's end.

    python bench/jpeg_damage.py [--images 64] [--backends cpu]
    python bench/jpeg_damage.py --backends hw,gpu,hybrid,cpu      # on a GPU
"""
from __future__ import annotations

import io
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import bench_parser, emit, gpu_name  # noqa: E402

KINDS = ("bitflip-early", "bitflip-mid", "bitflip-late", "delete-mid", "insert-mid", "zeros-mid", "truncate",
         "truncate-keep-eoi")
_WHERE = {"early": 0.1, "mid": 0.5, "late": 0.9}


def scan_range(data: bytes) -> tuple[int, int]:
    """[start, end) of the last scan's entropy-coded data: after its SOS segment, before the end marker."""
    sos = data.rfind(b"\xff\xda")
    start = sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")
    return start, data.rfind(b"\xff\xd9")


def damaged(data: bytes, kind: str, rng: np.random.Generator) -> bytes:
    """``data`` with one damage of ``kind`` in its entropy-coded data, at a place ``rng`` jitters."""
    start, end = scan_range(data)
    at = start + int((end - start) * _WHERE.get(kind.rsplit("-", 1)[-1], 0.5)) + int(rng.integers(-64, 64))
    at = max(start + 1, min(end - 3, at))
    while at < end - 3 and (data[at] == 0xFF or data[at - 1] == 0xFF):  # not a marker's or a stuffed byte's
        at += 1
    out = bytearray(data)
    if kind.startswith("bitflip"):
        bit = 1 << int(rng.integers(0, 8))
        out[at] ^= bit if out[at] ^ bit != 0xFF else 1
    elif kind == "delete-mid":
        del out[at]
    elif kind == "insert-mid":
        out.insert(at, int(rng.integers(0, 0xFF)))
    elif kind == "zeros-mid":
        out[at:at + 100] = bytes(min(100, end - at))
    elif kind.startswith("truncate"):
        out = out[:start + (end - start) * 3 // 4] + (b"\xff\xd9" if kind == "truncate-keep-eoi" else b"")
    else:
        raise ValueError(f"unknown damage {kind!r}")
    return bytes(out)


def pixels(data: bytes) -> np.ndarray | None:
    """Pillow's RGB decoding (libjpeg-turbo, its warnings ignored, a cut file's missing rows grey); None
    when it cannot decode at all."""
    from PIL import Image, ImageFile
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    except OSError:
        return None


def refused_by_penstock(pool, data: bytes) -> bool:
    from penstock import _engine
    try:
        _engine.verify_jpegs(pool, np.frombuffer(data, np.uint8), np.array([[len(data)]], np.int64),
                             np.array([0], np.int64))
    except _engine.SampleError:
        return True
    return False


class NvImageCodec:
    """nvImageCodec's decoder with one backend, whole images, a batch per call."""

    def __init__(self, backend: str):
        from penstock._cuda import _nvimgcodec
        self.gpu = backend != "cpu"
        if self.gpu:
            import cupy
            self.cp = cupy
            self.stream = cupy.cuda.Stream(non_blocking=True)
        device = 0 if self.gpu else _nvimgcodec.CPU_ONLY
        self.native = _nvimgcodec.open_decoder(device, 4, [(backend, 1.0, _nvimgcodec.FIXED)],
                                               _nvimgcodec.decoder_options(False, 64))

    def __call__(self, datas: list[bytes], shapes: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Which files it decoded, and what it wrote for each (zeros where it wrote nothing)."""
        lengths = np.array([len(d) for d in datas], np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        parsed = self.native.parse(np.frombuffer(b"".join(datas), np.uint8), starts, lengths, shapes, False)
        pitches = shapes[:, 1] * 3
        if self.gpu:
            outs = [self.cp.zeros((h, w, 3), self.cp.uint8) for h, w in shapes]
            self.cp.cuda.runtime.deviceSynchronize()
            decoded, _ = self.native.decode(parsed, np.array([o.data.ptr for o in outs], np.uint64), pitches,
                                            self.stream.ptr)
            self.stream.synchronize()
            outs = [self.cp.asnumpy(o) for o in outs]
        else:
            outs = [np.zeros((h, w, 3), np.uint8) for h, w in shapes]
            decoded, _ = self.native.decode(parsed, np.array([o.ctypes.data for o in outs], np.uint64), pitches, 0)
        return np.asarray(parsed.parsed()) & np.asarray(decoded), outs


def main() -> None:
    ap = bench_parser(__doc__, rounds=None, dataset={"default_images": 64})
    ap.add_argument("--backends", default="cpu", help="nvImageCodec's backends, comma-separated, of cpu, hw, gpu, "
                    "hybrid (the last three on a GPU)")
    args = ap.parse_args()
    from penstock import _engine
    root = photos.prepared(args)
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names)[:args.images]
    clean = [open(f, "rb").read() for f in files]
    reference = [pixels(d) for d in clean]
    shapes = np.array([r.shape[:2] for r in reference], np.int64)
    pool = _engine.ThreadPool(2)
    assert not any(refused_by_penstock(pool, d) for d in clean), "a clean photograph was refused"
    rng = np.random.default_rng(5)
    broken = {kind: [damaged(d, kind, rng) for d in clean] for kind in KINDS}
    refused = {kind: np.array([refused_by_penstock(pool, d) for d in broken[kind]]) for kind in KINDS}
    common = {"bench": "jpeg_damage", "set": args.set, "files": len(files)}
    for kind in KINDS:
        changed = np.array([p is None or p.shape != r.shape or not np.array_equal(p, r)
                            for p, r in zip(map(pixels, broken[kind]), reference)])
        emit({**common, "kind": kind, "decoder": "penstock", "refused": int(refused[kind].sum()),
              "passed_with_changed_pixels": int((changed & ~refused[kind]).sum()),
              "changed_pixels": int(changed.sum())})
    for backend in args.backends.split(","):
        try:
            decode = NvImageCodec(backend)
        except RuntimeError as exc:  # on an H200, nvImageCodec 0.9 opened no decoder of the gpu backend alone
            emit({**common, "decoder": f"nvimgcodec-{backend}", "gpu": gpu_name() if backend != "cpu" else None,
                  "error": str(exc)})
            continue
        ok, outs = decode(clean, shapes)
        if not ok.all():
            raise RuntimeError(f"nvImageCodec's {backend} backend did not decode {int((~ok).sum())} clean photographs")
        for kind in KINDS:
            decoded, got = decode(broken[kind], shapes)
            wrong = np.array([bool(d) and not np.array_equal(g, o) for d, g, o in zip(decoded, got, outs)])
            emit({**common, "kind": kind, "decoder": f"nvimgcodec-{backend}",
                  "gpu": gpu_name() if backend != "cpu" else None, "reported": int((~decoded).sum()),
                  "decoded_wrong": int(wrong.sum()), "decoded_wrong_refused_by_penstock": int((wrong & refused[kind]).sum())})


if __name__ == "__main__":
    main()
