"""``penstock.plugin.pytorch.loader_evaluator.LoaderEvaluator``: how fast a data loader feeds
training, measured per batch ("log"), against the ideal of replaying batches already in memory
("replay"): the gap between the two is what the loader costs."""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterator

# `import penstock.plugin.pytorch.loader_evaluator` must find this module, not load a second copy of it
sys.modules.setdefault("penstock.plugin.pytorch.loader_evaluator", sys.modules[__name__])

MODES = ("log", "replay")


class LoaderEvaluator:
    """Wraps a loader (a ``DataLoader``, a penstock iterator: any iterable with ``len``).

    ``mode="log"``: iterates the loader, timing how long each batch takes to arrive.
    ``mode="replay"``: takes the loader's first ``num_cached_batches`` batches into memory when
    constructed, then each epoch yields ``len(loader)`` batches cycling through them, timed the same
    way: the loader's ideal. ``get_metrics()`` has the timings of the last epoch."""

    def __init__(self, dataloader: Any, mode: str = "log", num_cached_batches: int = 20,
                 metrics_file: str | None = None):
        if mode not in MODES:
            raise ValueError(f"LoaderEvaluator: mode must be one of {MODES}, got {mode!r}")
        if num_cached_batches < 1:
            raise ValueError(f"LoaderEvaluator: num_cached_batches must be at least 1, got {num_cached_batches}")
        self.dataloader = dataloader
        self.mode = mode
        self.num_cached_batches = num_cached_batches
        self.metrics_file = metrics_file
        self.cached_batches: list = []
        self.batch_times: list[float] = []
        self.start_time: float | None = None
        self.end_time: float | None = None
        if mode == "replay":
            self._cache_batches()

    @property
    def cache_ready(self) -> bool:
        return bool(self.cached_batches)

    def __len__(self) -> int:
        return len(self.dataloader)

    def _cache_batches(self) -> None:
        self.cached_batches = []
        for batch in self.dataloader:
            self.cached_batches.append(batch)
            if len(self.cached_batches) == self.num_cached_batches:
                break
        if not self.cached_batches:
            raise RuntimeError("LoaderEvaluator: the loader yielded no batch to replay")

    def __iter__(self) -> Iterator[Any]:
        if self.mode == "log":
            batches = iter(self.dataloader)
        else:
            batches = (self.cached_batches[i % len(self.cached_batches)] for i in range(len(self.dataloader)))
        return self._timed(batches)

    def _timed(self, batches: Iterator[Any]) -> Iterator[Any]:
        self.batch_times = []
        self.start_time, self.end_time = time.perf_counter(), None
        while True:
            asked = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                break
            self.batch_times.append(time.perf_counter() - asked)
            yield batch
        self.end_time = time.perf_counter()

    def get_metrics(self) -> dict[str, Any]:
        """The last epoch's timings (seconds); empty before any batch."""
        if not self.batch_times:
            return {}
        end = self.end_time if self.end_time is not None else time.perf_counter()
        return {"mode": self.mode, "total_batches": len(self.batch_times), "total_time": end - self.start_time,
                "avg_batch_time": sum(self.batch_times) / len(self.batch_times),
                "min_batch_time": min(self.batch_times), "max_batch_time": max(self.batch_times),
                "batch_times": list(self.batch_times), "cached_batches": len(self.cached_batches),
                "cache_ready": self.cache_ready}

    def save_metrics(self, filename: str | None = None) -> None:
        """Writes ``get_metrics()`` as JSON to ``filename`` (default: ``metrics_file``)."""
        filename = filename or self.metrics_file
        if filename is None:
            raise ValueError("LoaderEvaluator.save_metrics: no file name (give one, or metrics_file= when "
                             "constructing)")
        with open(filename, "w") as f:
            json.dump(self.get_metrics(), f, indent=2)

    def print_summary(self) -> None:
        lines = ["Loader Evaluator Summary:", f"  Mode: {self.mode}", f"  Number of batches: {len(self)}",
                 f"  Cache size: {len(self.cached_batches)}/{self.num_cached_batches}"]
        dataset = getattr(self.dataloader, "dataset", None)
        if dataset is not None and hasattr(dataset, "__len__"):
            lines.insert(2, f"  Dataset size: {len(dataset)}")
        m = self.get_metrics()
        if m:
            lines += [f"  Total batches processed: {m['total_batches']}", f"  Total time: {m['total_time']:.2f}s",
                      f"  Average batch time: {m['avg_batch_time']:.4f}s",
                      f"  Min batch time: {m['min_batch_time']:.4f}s", f"  Max batch time: {m['max_batch_time']:.4f}s"]
        print("\n".join(lines))


__all__ = ["LoaderEvaluator"]
