"""bench/soak.py stays runnable: a few epochs give a well-formed verdict and a flat curve."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "soak.py")


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_soak_is_flat():
    # a fresh interpreter (other tests' threads and files do not count); one-time allocations such as
    # a lazily created pipe land within the warm-up epochs
    code = (f"import json, importlib.util; spec = importlib.util.spec_from_file_location('soak', {_PATH!r}); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "print(json.dumps(m.soak('penstock', epochs=6, warmup=3, images=16)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["system"] == "penstock" and r["epochs"] == 6
    assert set(r["curve"]) >= {"rss_mb", "fds", "threads", "processes", "shm"}
    assert all(len(v) == 6 for v in r["curve"].values())
    growth = r["growth_after_warmup"]
    assert growth["threads"] <= 0 and growth["processes"] <= 0 and growth["shm"] <= 0
    # descriptors: six epochs are too few to tell a leak from a runtime's lazily created event pair
    # (seen: +2 now and then, flat over the 100-epoch soak); a leak per batch would be far more
    assert growth["fds"] <= 4


def test_verdict_flags_growth(soak):
    flat = [{"rss_mb": 100.0, "fds": 5, "threads": 3, "processes": 0, "shm": 0}] * 3
    assert soak.verdict("x", flat, 1, 1.0, [])["ok"]
    grown = flat[:2] + [{"rss_mb": 103.0, "fds": 6, "threads": 3, "processes": 0, "shm": 0}]
    v = soak.verdict("x", grown, 1, 1.0, [])
    assert not v["ok"] and v["rss_drift_pct"] == pytest.approx(3.0) and v["growth_after_warmup"]["fds"] == 1
