"""bench/jpeg_end_check.py: the corruption check's cost per epoch, checked against unchecked
decoders, on the CPU (its GPU mode runs the same worker with the mixed decoder)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

if importlib.util.find_spec("skimage") is None:
    pytest.skip("the photo sets are made from scikit-image's photographs", allow_module_level=True)

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def test_each_epoch_has_both_sides_cpu_and_rate_and_their_ratios(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "jpeg_end_check.py"), "--images", "8", "--rounds", "1",
                          "--data-cache", str(tmp_path)], capture_output=True, text=True, timeout=300, check=True)
    record = [json.loads(line) for line in out.stdout.splitlines() if '"jpeg_end_check"' in line][-1]
    assert record["device"] == "cpu" and record["gpu"] is None and record["batch"] == 64
    for epoch in ("first_epoch", "later_epoch"):
        for side in ("checked", "unchecked"):
            assert record[f"{side}_{epoch}_cpu_ms_per_image"] > 0
            assert record[f"{side}_{epoch}_img_per_s"] > 0
        assert record[f"{epoch}_rate"] == pytest.approx(
            record[f"checked_{epoch}_img_per_s"] / record[f"unchecked_{epoch}_img_per_s"], rel=1e-3)
