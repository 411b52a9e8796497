"""bench/multi_gpu.py stays runnable: its CPU smoke run starts one process per "GPU" on its own shard,
meets them before timing, and reports aggregates and the scaling over one."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("PIL")
BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "multi_gpu.py")


def test_smoke_run_reports_every_case_and_the_scaling(tmp_path):
    out = subprocess.run([sys.executable, BENCH, "--device", "cpu", "--set", "noise", "--images", "32",
                          "--data-cache", str(tmp_path), "--gpus", "1,2", "--threads", "1", "--rounds", "1",
                          "--seconds", "0.3", "--systems", "penstock"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    rounds = [line for line in lines if line["bench"] == "multi_gpu_round"]
    assert [(r["gpus"], len(r["per_gpu_img_per_s"])) for r in rounds] == [(1, 1), (2, 2)]
    assert all(r["img_per_s"] > 0 and r["img_per_s"] == pytest.approx(sum(r["per_gpu_img_per_s"]), abs=0.2)
               for r in rounds)
    cases = [line for line in lines if line["bench"] == "multi_gpu" and "img_per_s" in line]
    assert [(c["system"], c["gpus"], c["rounds"]) for c in cases] == [("penstock", 1, 1), ("penstock", 2, 1)]
    scaling, = [line for line in lines if "scaling_vs_one_gpu" in line]
    assert scaling["gpus"] == 2 and scaling["scaling_vs_one_gpu"] > 0 and scaling["met"] is None
