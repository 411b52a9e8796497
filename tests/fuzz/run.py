"""Runs every fuzz target for a number of cases from the seed corpus (a fixed libFuzzer seed).

    python tests/fuzz/run.py --runs 3000                      # short run (make test)
    python tests/fuzz/run.py --runs -1 --seconds 600 --sanitized SO   # make fuzz: ASan/UBSan engine

A crashing input is written to tests/fuzz/crashes/<target>/; once its bug is fixed it moves to
tests/fuzz/regressions/<target>/, which test_fuzz_regressions.py replays on every test run.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_NAMES = ("decode", "pillow", "file_list", "tfrecord", "caffe", "inflate", "checkpoint", "audio",
                "nemo_manifest", "video", "recordio", "npy")
# run against the sanitizer build of the engine
NATIVE_TARGETS = ("decode", "tfrecord", "caffe", "inflate", "audio", "video", "recordio", "npy")
EDIT_TARGETS = ("decode", "checkpoint", "audio", "video", "recordio", "npy")  # inputs are edits of built-in ones
# libFuzzer's input length: edits of built-in inputs need no more (see README.md)
MAX_LEN = {"decode": 256, "checkpoint": 256, "audio": 256, "video": 256, "recordio": 256, "npy": 256,
           "tfrecord": 4096}


def _sanitizer_env(so: str) -> dict:
    libs = [subprocess.check_output(["gcc", f"-print-file-name={lib}"], text=True).strip()
            for lib in ("libasan.so", "libubsan.so")]
    return {"PENSTOCK_FUZZ_ENGINE": os.path.abspath(so), "LD_PRELOAD": " ".join(libs),
            # CPython keeps memory until exit: leaks are measured by bench/soak.py instead
            "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def run(target: str, runs: int, env: dict, seed: int, seconds: int = 0) -> int:
    """Fuzzes ``target`` for ``runs`` cases (-1: no limit) or ``seconds`` (0: no limit), whichever
    ends first; prints the cases run."""
    sys.path.insert(0, HERE)
    import targets  # the seeds; the fuzzer runs in its own process
    crashes = os.path.join(HERE, "crashes", target)
    with tempfile.TemporaryDirectory() as corpus:
        for k, data in enumerate(targets.seeds(target)):
            with open(os.path.join(corpus, f"seed{k}"), "wb") as f:
                f.write(data)
        regressions = os.path.join(HERE, "regressions", target)
        dirs = [corpus] + ([regressions] if os.path.isdir(regressions) else [])
        os.makedirs(crashes, exist_ok=True)
        cmd = [sys.executable, os.path.join(HERE, "fuzz.py"), target, f"-runs={runs}", f"-seed={seed}",
               "-timeout=20", "-rss_limit_mb=4096", f"-max_total_time={seconds}",
               f"-artifact_prefix={crashes}{os.sep}"]
        # these inputs are edits of built-in inputs (no coverage reaches libFuzzer from the native
        # code): every length is useful from the start
        cmd += ["-len_control=0"] if target in EDIT_TARGETS else []
        cmd += [f"-max_len={MAX_LEN.get(target, 65536)}"]
        # only the native code is built with the sanitizers; elsewhere libasan's coverage stubs
        # would hide atheris' Python coverage from libFuzzer
        env = env if target in NATIVE_TARGETS else {}
        start = time.monotonic()
        r = subprocess.run(cmd + dirs, env={**os.environ, **env}, capture_output=True, text=True)
        took = time.monotonic() - start
    if not os.listdir(crashes):
        os.rmdir(crashes)
    status = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
    done = re.findall(r"^Done (\d+) runs", r.stderr, re.M)  # libFuzzer's last words
    print(f"fuzz {target}: {done[-1] if done else runs} runs in {took:.1f} s: {status}", flush=True)
    if r.returncode != 0:
        print(r.stderr[-6000:], file=sys.stderr)
    return r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3000, help="cases per target (-1: no limit)")
    ap.add_argument("--seconds", type=int, default=0, help="seconds per target at most (0: no limit)")
    ap.add_argument("--seed", type=int, default=1, help="libFuzzer's random seed")
    ap.add_argument("--sanitized", metavar="SO", help="the ASan/UBSan build of penstock._engine")
    ap.add_argument("--target", choices=TARGET_NAMES, action="append", help="default: all")
    a = ap.parse_args()
    env = _sanitizer_env(a.sanitized) if a.sanitized else {}
    failed = [t for t in (a.target or TARGET_NAMES) if run(t, a.runs, env, a.seed, a.seconds) != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
