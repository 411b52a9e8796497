"""bench/jpeg_damage.py: which damaged JPEGs penstock's corruption check refuses and nvImageCodec's CPU
backend reports (its other backends run on a GPU)."""
import importlib.util
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

if importlib.util.find_spec("skimage") is None:
    pytest.skip("the photo sets are made from scikit-image's photographs", allow_module_level=True)

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import jpeg_damage  # noqa: E402


def test_damage_stays_in_the_scan_and_off_its_markers():
    px = np.random.default_rng(1).integers(0, 255, (64, 80, 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(px).save(out, "JPEG", quality=90)
    data = out.getvalue()
    start, end = jpeg_damage.scan_range(data)
    sos = data.rfind(b"\xff\xda")
    assert start == sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")
    assert data[end:] == b"\xff\xd9"
    rng = np.random.default_rng(3)
    for kind in jpeg_damage.KINDS:
        broken = jpeg_damage.damaged(data, kind, rng)
        assert broken[:start] == data[:start], kind  # the headers untouched
        assert broken != data, kind
        if kind.startswith("bitflip"):
            diff = [i for i, (a, b) in enumerate(zip(data, broken)) if a != b]
            assert len(diff) == 1 and bin(data[diff[0]] ^ broken[diff[0]]).count("1") == 1, kind
        assert broken.endswith(b"\xff\xd9") == (kind != "truncate"), kind


def test_a_record_per_damage_and_decoder(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "jpeg_damage.py"), "--images", "12",
                          "--data-cache", str(tmp_path)], capture_output=True, text=True, timeout=300, check=True)
    records = [json.loads(line) for line in out.stdout.splitlines() if '"jpeg_damage"' in line]
    assert {(r["kind"], r["decoder"]) for r in records} == {
        (k, d) for k in jpeg_damage.KINDS for d in ("penstock", "nvimgcodec-cpu")}
    by = {(r["kind"], r["decoder"]): r for r in records}
    for kind in jpeg_damage.KINDS:
        mine, theirs = by[kind, "penstock"], by[kind, "nvimgcodec-cpu"]
        assert mine["files"] == theirs["files"] == 12
        assert mine["refused"] + mine["passed_with_changed_pixels"] <= 12
        assert theirs["decoded_wrong_refused_by_penstock"] <= min(theirs["decoded_wrong"], mine["refused"])
    # a scan cut short is refused, with its end marker put back or not; nvImageCodec's CPU backend
    # reports only the one without
    assert by["truncate", "penstock"]["refused"] == by["truncate-keep-eoi", "penstock"]["refused"] == 12
    assert by["truncate", "nvimgcodec-cpu"]["reported"] == 12
    assert by["truncate-keep-eoi", "nvimgcodec-cpu"]["decoded_wrong"] == 12
    # damage in a scan changes the pixels; the check refuses some of it, never none of all kinds
    assert all(by[k, "penstock"]["changed_pixels"] == 12 for k in jpeg_damage.KINDS)
    assert sum(by[k, "penstock"]["refused"] for k in jpeg_damage.KINDS if not k.startswith("truncate")) > 0


def test_a_backend_that_does_not_open_is_a_record_of_its_own(monkeypatch, tmp_path, capsys):
    opened = jpeg_damage.NvImageCodec

    def some_open(backend):
        if backend == "hw":
            raise RuntimeError("nvImageCodec: creating the decoder failed with status 7 (ARCH_MISMATCH)")
        return opened(backend)
    monkeypatch.setattr(jpeg_damage, "NvImageCodec", some_open)
    monkeypatch.setattr(sys, "argv", ["jpeg_damage.py", "--images", "4", "--data-cache", str(tmp_path),
                                      "--backends", "hw,cpu"])
    jpeg_damage.main()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"jpeg_damage"' in line]
    failed = [r for r in records if r["decoder"] == "nvimgcodec-hw"]
    assert len(failed) == 1 and "ARCH_MISMATCH" in failed[0]["error"]
    assert sum(r["decoder"] == "nvimgcodec-cpu" for r in records) == len(jpeg_damage.KINDS)
