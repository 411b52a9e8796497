"""Where the engine's build time goes: CPU seconds of each translation unit of csrc/, compiled one
at a time with setup.py's flags and optimization levels (or one level for all, --opt), and the
wall time a build with --jobs compile jobs would take, the units handed out in setup.py's order.
Also the cost of a unit that includes nothing but pybind11's headers: what every unit including
them pays (only bindings.cpp does).

CPU seconds (user + system of the compiler) are what a parallel build divides among its jobs and
vary much less with the machine's load than wall time. One JSON line per unit, slowest first,
then the total.

    python bench/build_times.py [--opt=-O3] [--jobs 2] [FILE.cpp ...]
"""
from __future__ import annotations

import argparse
import ast
import glob
import heapq
import json
import os
import resource
import shlex
import subprocess
import sys
import sysconfig
import tempfile

import pybind11

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# setup.py's compile flags (Python's, pybind11's, the extension's), the optimization level apart
FLAGS = ["-std=c++17", "-fPIC", "-DNDEBUG", "-fwrapv", "-g0", "-fvisibility=hidden", "-Wall", "-Wno-unused-function",
         '-DPENSTOCK_PRIVATE_LIBS="_libs"', f"-I{os.path.join(ROOT, 'csrc')}", f"-I{pybind11.get_include()}",
         f"-I{sysconfig.get_paths()['include']}"]


def setup_constants() -> dict:
    """setup.py's literal module-level settings (OPT_LEVEL, DEFAULT_OPT_LEVEL, LONGEST)."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        tree = ast.parse(f.read())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ("OPT_LEVEL", "DEFAULT_OPT_LEVEL", "LONGEST")}


def compile_seconds(source: str, opt: str, out_dir: str) -> float:
    """CPU seconds g++ takes to compile ``source`` to an object file."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    obj = os.path.join(out_dir, os.path.basename(source) + ".o")
    subprocess.run(["g++", *FLAGS, *shlex.split(opt), "-c", source, "-o", obj], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def includes_pybind11(source: str) -> bool:
    """Whether pybind11's headers are among those ``source`` includes, directly or not."""
    deps = subprocess.run(["g++", *FLAGS, "-MM", source], check=True, capture_output=True, text=True).stdout
    return "pybind11/pybind11.h" in deps


def build_wall(seconds: list[float], jobs: int) -> float:
    """The wall time of compiling units of these durations, in this order, each taken by the next
    free one of `jobs` jobs."""
    free_at = [0.0] * jobs
    for s in seconds:
        heapq.heappush(free_at, heapq.heappop(free_at) + s)
    return max(free_at)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="units to compile (default: every .cpp under csrc/)")
    ap.add_argument("--opt", help="one optimization level for every unit (default: setup.py's per unit)")
    ap.add_argument("--jobs", type=int, default=2, help="compile jobs of the estimated build (default 2)")
    args = ap.parse_args()
    settings = setup_constants()
    units = [os.path.relpath(os.path.abspath(f), ROOT) for f in args.files] or sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "csrc", "**", "*.cpp"), recursive=True))
    longest = settings["LONGEST"]
    units.sort(key=lambda u: (longest.index(u) if u in longest else len(longest),  # setup.py's order
                              -os.path.getsize(os.path.join(ROOT, u))))
    level = {u: args.opt or settings["OPT_LEVEL"].get(u, settings["DEFAULT_OPT_LEVEL"]) for u in units}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as out_dir:
        floor_unit = os.path.join(out_dir, "pybind11_headers_only.cpp")
        with open(floor_unit, "w") as f:
            f.write("#include <pybind11/numpy.h>\n#include <pybind11/pybind11.h>\n#include <pybind11/stl.h>\n")
        floor = compile_seconds(floor_unit, args.opt or settings["DEFAULT_OPT_LEVEL"], out_dir)
        # one at a time: concurrent compiles would share the cores and the caches
        seconds = {u: compile_seconds(os.path.join(ROOT, u), level[u], out_dir) for u in units}
    with_pybind = [u for u in units if includes_pybind11(os.path.join(ROOT, u))]
    for unit, cpu in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(json.dumps({"bench": "build_times", "unit": unit, "opt": level[unit], "cpu_s": round(cpu, 2),
                          "includes_pybind11": unit in with_pybind}))
    print(json.dumps({"bench": "build_times", "unit": "(total)", "units": len(units),
                      "cpu_s": round(sum(seconds.values()), 1), "jobs": args.jobs,
                      "estimated_wall_s": round(build_wall([seconds[u] for u in units], args.jobs), 1),
                      "units_with_pybind11": len(with_pybind), "pybind11_headers_only_cpu_s": round(floor, 2),
                      "load_average_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
                      "compiler": subprocess.run(["g++", "-dumpfullversion"], capture_output=True,
                                                 text=True).stdout.strip()}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
