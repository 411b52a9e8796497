"""The driver of the benchmarks that feed a framework (pytorch_loader.py, jax_iterator.py):

1. iterator overhead: per DALI-API system, in a process of its own, pipe.run() against the
   framework iterator over a pipeline that does nothing (_pipelines.iterator_overhead);
2. loader throughput: ``loader_rate(system, root, batches)`` of each system over a photo set, in
   processes of their own, alternating over rounds; one JSON line per system, then the ratios.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import photos
from _common import (LIBRARIES, alternating_rounds, bench_parser, emit, library, parsed, report, run_worker,
                     with_dali)
from _pipelines import CPU_BATCH, CPU_THREADS, iterator_overhead


def main(script: str, doc: str, plugin: str, systems: Sequence[str], loader_rate: Callable[[str, str, int], dict],
         overhead_batches: int, dali_at: int | None = None) -> None:
    """The benchmark ``script``: ``plugin`` names the framework ("pytorch", "jax"), ``systems``
    the loaders compared, DALI's inserted at ``dali_at`` when it imports (DALI-API ones are also
    timed for iterator overhead)."""
    ap = bench_parser(doc, batches=15, worker=("KIND", "SYSTEM", "ROOT"), dataset={"default_images": 512})
    ap.add_argument("--overhead-batches", type=int, default=overhead_batches)

    def worker(kind: str, system: str, root: str, a: argparse.Namespace) -> dict:
        if kind == "loader":
            return loader_rate(system, root, a.batches)
        return iterator_overhead(library(system), library(system, plugin), CPU_BATCH, CPU_THREADS, a.overhead_batches)

    args = parsed(ap, worker)
    if args is None:
        return

    root = photos.prepared(args)  # before DALI's import brings in the framework: making a set forks
    systems = with_dali(list(systems), plugin=plugin, at=dali_at)
    for system in systems:
        if system in LIBRARIES:
            result = run_worker(script, ["--worker", "overhead", system, "-",
                                         "--overhead-batches", str(args.overhead_batches)])
            emit({"bench": f"{plugin}_iterator_overhead", "system": system, "batch": CPU_BATCH,
                  "sample": "int32[1]", **result})
    runs = alternating_rounds(args.rounds, systems, lambda s: run_worker(
        script, ["--worker", "loader", s, root, "--batches", str(args.batches)]))
    report(f"{plugin}_loader", runs, set=args.set, pipeline="rn50_train", batch=CPU_BATCH, threads=CPU_THREADS)
