"""Per-iteration engine overhead: an empty pipeline and a chain of 10 element-wise operators.

Prints one JSON line per configuration. The operators work on tiny samples (batch 256 of 4
floats) so the time measured is the engine's, not the kernels'. Overhead per operator =
(time per iteration with 10 ops - time with none) / 10; the target is < 50 µs.
If NVIDIA DALI is installed, the same two pipelines are measured with it in the same run.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import dali_available, emit, timed  # noqa: E402

BATCH = 256
N_OPS = 10


def build(lib, n_ops: int, exec_async: bool):
    fn = lib.fn
    batch = np.random.default_rng(0).random((BATCH, 4), dtype=np.float32)

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, prefetch_queue_depth=2,
                      exec_async=exec_async, exec_pipelined=exec_async)
    def pipe():
        x = fn.external_source(source=lambda: batch, batch=True)
        for k in range(n_ops):
            x = x * 1.0001 + 0.5 if k % 2 else x - 0.25
        return x

    p = pipe()
    p.build()
    return p


def seconds_per_iteration(p, iterations: int) -> tuple[float, float]:
    """(wall, process CPU) seconds per iteration; CPU time is robust to other load on the machine."""
    t = timed(p.run, 1, steps=iterations, warmup_steps=20)
    return t.seconds_per_step, t.cpu_seconds / t.steps


def measure(lib, name: str, iterations: int, exec_async: bool) -> None:
    # "x * a + b" counts as two operators, "x - c" as one: count the nodes actually built.
    empty, empty_cpu = seconds_per_iteration(build(lib, 0, exec_async), iterations)
    full_pipe = build(lib, N_OPS, exec_async)
    n_nodes = _count_ops(lib, full_pipe)
    full, full_cpu = seconds_per_iteration(full_pipe, iterations)
    emit({"bench": "engine_overhead", "system": name, "batch": BATCH, "exec_async": exec_async,
          "empty_pipeline_us": round(empty * 1e6, 1),
          "elementwise_ops": n_nodes, "elementwise_pipeline_us": round(full * 1e6, 1),
          "overhead_per_op_us": round((full - empty) / n_nodes * 1e6, 2),
          "cpu_overhead_per_op_us": round((full_cpu - empty_cpu) / n_nodes * 1e6, 2),
          "target_per_op_us": 50})


def _count_ops(lib, p) -> int:
    if type(p).__module__.startswith("penstock"):
        return sum(1 for op in p._ops if not op.schema.is_source)
    return int(N_OPS * 1.5)  # DALI: same graph definition (5 mul+add pairs, 5 subtractions)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    args = ap.parse_args()
    import penstock
    for exec_async in (True, False):
        measure(penstock, "penstock", args.iterations, exec_async)
    if not dali_available():
        emit({"bench": "engine_overhead", "system": "dali", "skipped": "nvidia-dali not installed"})
        return
    import nvidia.dali as dali
    measure(dali, "dali", args.iterations, True)


if __name__ == "__main__":
    main()
