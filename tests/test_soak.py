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


def test_short_soak_is_flat(soak):
    # a fresh interpreter (other tests' threads and files do not count); one-time allocations land
    # within the warm-up epochs, apart from the parallel source's slots (bounded, checked apart)
    code = (f"import json, importlib.util; spec = importlib.util.spec_from_file_location('soak', {_PATH!r}); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "print(json.dumps(m.soak('penstock', epochs=6, warmup=3, images=16)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["system"] == "penstock" and r["epochs"] == 6
    assert set(r["curve"]) >= {"rss_mb", "fds", "shm_slots", "threads", "processes", "shm",
                               "heap_in_use_mb", "heap_free_mb", "pool_mb", "py_blocks"}
    # what RSS is made of: malloc's heaps and the pool's cached blocks lie within it
    for rss, heap, pool in zip(r["curve"]["rss_mb"], r["curve"]["heap_in_use_mb"], r["curve"]["pool_mb"]):
        assert 0 < heap < rss and 0 <= pool < rss
    assert all(isinstance(n, int) and n > 0 for n in r["curve"]["py_blocks"])
    assert all(len(v) == 6 for v in r["curve"].values())
    growth = r["growth_after_warmup"]
    assert all(v <= 0 for v in growth.values()), growth
    # the parallel source's shared-memory slots (counted apart from "fds") grow on demand, sometimes
    # after the warm-up, but never past their bound
    assert r["shm_slots_max"] <= r["shm_slot_bound"]
    # ACCOUNTED_STEPS (25) iterations an epoch: 150, one restore from the checkpoint at iteration 100
    # (CHECKPOINT_EVERY); every sample accounted for
    accounts = r["accounts"]
    assert set(accounts) == {"parallel_source", "skipping_reader"}
    for account in accounts.values():
        assert account["iterations"] == 150 and account["restores"] == 1 and account["restore_mismatches"] == 0
        assert account["ok"], account
    assert accounts["parallel_source"]["samples"] == 150 * soak.BATCH
    reader = accounts["skipping_reader"]
    assert reader["skipped"] > 0 and reader["returned"] == 150 * soak.BATCH
    assert reader["stream_positions"] == reader["returned"] + reader["skipped"]


def test_verdict_flags_growth(soak):
    flat = [{"rss_mb": 100.0, "fds": 5, "threads": 3, "processes": 0, "shm": 0}] * 3
    assert soak.verdict("x", flat, 1, 1.0, [])["ok"]
    grown = flat[:2] + [{"rss_mb": 103.0, "fds": 6, "threads": 3, "processes": 0, "shm": 0}]
    v = soak.verdict("x", grown, 1, 1.0, [])
    assert not v["ok"] and v["rss_drift_pct"] == pytest.approx(3.0) and v["growth_after_warmup"]["fds"] == 1
    slots = [dict(s, shm_slots=n) for s, n in zip(flat, (2, 4, 9))]
    assert soak.verdict("x", slots, 1, 1.0, [], slot_bound=9)["ok"]
    assert not soak.verdict("x", slots, 1, 1.0, [], slot_bound=8)["ok"]
    rising = [dict(flat[0], rss_mb=100.0 + k, seconds=900.0 * k) for k in range(5)]  # +1 MB every 15 minutes
    v = soak.verdict("x", rising, 1, 3600.0, [])
    assert v["rss_slope_mb_per_hour"] == pytest.approx(4.0) and v["trends_per_hour"] == {"rss_mb": pytest.approx(4.0)}
    parts = [dict(s, heap_in_use_mb=50.0, pool_mb=10.0 + 2 * k) for k, s in enumerate(rising)]
    trends = soak.verdict("x", parts, 1, 3600.0, [])["trends_per_hour"]
    assert trends == {"rss_mb": pytest.approx(4.0), "heap_in_use_mb": pytest.approx(0.0), "pool_mb": pytest.approx(8.0)}


def test_curve_keeps_each_quantity_in_a_typed_array(soak):
    curve = soak.Curve()
    for k in range(3):
        curve.append({"rss_mb": 100.5 + k, "fds": 5 + k})
    assert len(curve) == 3 and curve.columns["fds"].typecode == "q" and curve.columns["rss_mb"].typecode == "d"
    assert curve.rows() == [{"rss_mb": 100.5, "fds": 5}, {"rss_mb": 101.5, "fds": 6}, {"rss_mb": 102.5, "fds": 7}]
    assert all(type(row["fds"]) is int for row in curve.rows())


def test_drift_is_judged_on_stretch_medians_not_on_the_first_sample(soak):
    # a cache's sawtooth (+-4% sample to sample) around a level that does not move is flat, whichever
    # sample comes first; the same swings over a level rising 3% are not
    base = {"fds": 5, "threads": 3, "processes": 0, "shm": 0}
    sawtooth = [dict(base, rss_mb=100.0 + (4.0 if k % 3 == 0 else -4.0 if k % 3 == 1 else 0.0), seconds=float(k))
                for k in range(100)]
    v = soak.verdict("x", sawtooth, 1, 100.0, [])
    assert v["ok"] and v["rss_drift_pct"] < 2 and v["rss_swing_pct"] == pytest.approx(8.0)
    rising = [dict(s, rss_mb=s["rss_mb"] + 3.0 * k / 99) for k, s in enumerate(sawtooth)]
    v = soak.verdict("x", rising, 1, 100.0, [])
    assert not v["ok"] and v["rss_drift_pct"] > 2


def test_a_failed_worker_is_reported_by_its_first_traceback_and_its_end(soak):
    # a GPU fault surfaces at some call, and every later call repeats it: the first traceback says
    # where, the end how the process ended
    common = sys.modules["_common"]
    first = "Traceback (most recent call last):\n  File \"loader.py\", line 9\nCUDA error: illegal address\n"
    err = "warning: slow\n" + first + "CUDA Runtime failure: '#700\n" * 2000 + "the end\n"
    excerpt = common._stderr_excerpt(err, head=200, tail=30)
    assert excerpt.startswith(first) and excerpt.endswith("the end\n") and "characters ..." in excerpt
    assert len(excerpt) < 300
    assert common._stderr_excerpt("short failure\n") == "short failure\n"
