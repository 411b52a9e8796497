"""Soak: many epochs over a small dataset through every kind of operator; resources must stay flat.

Each epoch runs (a) a reader pipeline (readers.file -> decoders -> geometry -> colour -> CMN,
random operators, shapes) through the PyTorch iterator over the reader's epoch, over pictures of
the imagenet-like photo set (bench/photos.py), (b) an external-source pipeline (serial, and
parallel when this build supports it) through run(), and (c) two accounted pipelines, each
checkpointed every CHECKPOINT_EVERY iterations and replaced by a new pipeline restored from the
checkpoint (whose first batch must equal the one the old pipeline gives next):

* a reader over photos and damaged files (cut short, noise, empty) with the decoder's
  ``on_error="skip"`` (penstock only): every position of the reader's stream must be a sample
  returned or a file skipped, each file as often as the stream's epochs visit it, never a damaged
  file returned nor a good one skipped;
* a parallel per-sample source in spawned worker processes: every batch must hold exactly the
  next samples, none lost or repeated across restores (new worker processes each time).

After each epoch it samples resident memory, open file descriptors, threads (Python's and the
OS's), child processes and the /dev/shm segments this process tree has open or mapped (other
processes' are not counted: /dev/shm is shared), and with ``--device-id`` the GPU's memory in use
(through CuPy). After the warm-up (``--warmup`` epochs, or a timed run's first tenth if longer),
RSS and GPU memory must stay flat and the counts must not grow. Flat: the samples after the warm-up,
cut into WINDOWS stretches in order, have medians within +-2% of the first stretch's. A median,
not one sample: caches that fill and empty (the host buffer pool's blocks waiting for reuse, glibc's
free memory in the threads' arenas) swing RSS sample to sample by +-4% around a level that does
not move (10 minutes: samples 276-297 MB, one stretch's median to another's 282.5-287.9 MB, trend
-0.7 MB/hour), so a check against the first sample alone fails or passes by which sample came first;
growth moves the medians. ``rss_swing_pct`` (the samples' spread) and ``rss_slope_mb_per_hour``
(RSS's least-squares trend after the warm-up) are reported beside it, and ``trends_per_hour`` gives
the trends of what RSS is made of, so that a rise says where it is: malloc's heaps in use and their
free memory (glibc's mallinfo2), the host buffer pool's cached blocks, Python's allocated blocks.

Prints one JSON line (penstock; with ``--dali``, a second one for NVIDIA DALI, in its own process)
with the curves, the accounts and a verdict, and exits non-zero when a check fails. Descriptors are counted
without the parallel sources' shared-memory slots, a pool bounded by design that is checked
against its bound instead (see SLOT_BOUND). ``--plot FILE`` draws the curves with matplotlib
when it is installed.

    python bench/soak.py                     # 100 epochs, 10 of warm-up
    python bench/soak.py --minutes 60        # as many epochs as one hour takes
    python bench/soak.py --epochs 20 --plot soak.png
    python bench/soak.py --minutes 20 --device-id 0   # the reader pipeline on GPU 0 (mixed
                                             # decoders, GPU operators); GPU memory must stay flat too
"""
from __future__ import annotations

import argparse
import array
import collections
import ctypes
import functools
import gc
import importlib
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import photos  # noqa: E402
from _common import LIBRARIES, emit, process_gpu_mb, run_worker, with_dali  # noqa: E402

BATCH = 8


def reader_pipeline(lib, root: str, device_id: int | None = None):
    fn, types = lib.fn, lib.types
    decoder = {} if device_id is None else {"device": "mixed"}

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=device_id, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        a = fn.decoders.image(jpegs, output_type=types.RGB, **decoder)
        b = fn.decoders.image_random_crop(jpegs, **decoder)
        a = fn.resize(a, resize_x=40, resize_y=32)
        b = fn.resize(b, size=(32, 40))
        a = fn.rotate(a, angle=fn.random.uniform(range=(-10.0, 10.0)), size=(32, 40), fill_value=0)
        b = fn.warp_affine(b, matrix=(1.0, 0.1, 0.0, 0.0, 1.0, 0.0), fill_value=0)
        a = fn.flip(a, horizontal=fn.random.coin_flip())
        a = fn.hsv(a, hue=5.0, saturation=1.1)
        b = fn.brightness_contrast(b, brightness=1.1, contrast=0.9)
        b = fn.color_twist(b, hue=3.0)
        b = fn.gaussian_blur(b, window_size=3)
        a = fn.jpeg_compression_distortion(a, quality=50)
        a = fn.crop(a, crop=(24, 24))
        b = fn.crop_mirror_normalize(b, crop=(24, 24), mean=[128.0] * 3, std=[64.0] * 3,
                                     output_layout="HWC", dtype=types.FLOAT)
        out = fn.cast(a, dtype=types.FLOAT) * 0.5 + b
        return fn.transpose(out, perm=[2, 0, 1]), labels, fn.shapes(jpegs)

    return pipe()


# The parallel source's shared-memory slots: each worker keeps one per task it holds at once and
# reuses it, so they form a bounded pool that grows on demand. Tasks go to the worker with the fewest
# unreceived results, so which worker needs one more slot, and when, depends on timing: a slot can
# first appear late in a short run. Every task of a batch in flight may land on one worker: at most
# WORKERS x (SOURCE_DEPTH + 1) tasks, in each of WORKERS workers.
WORKERS, SOURCE_DEPTH = 2, 1
PARALLEL_PIPELINES = 2  # the parallel source pipeline and the accounted one
SLOT_BOUND = PARALLEL_PIPELINES * WORKERS * WORKERS * (SOURCE_DEPTH + 1)
SLOT_NAME = "penstock-external-source"  # the memfd name of a slot


def source_pipeline(lib, parallel: bool):
    fn = lib.fn

    def source(info):
        rng = np.random.default_rng(info.iteration)
        return rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=None,
                      py_num_workers=WORKERS if parallel else 1, py_start_method="spawn")
    def pipe():
        depth = {"prefetch_queue_depth": SOURCE_DEPTH} if parallel else {}
        x = fn.external_source(source=source, batch=False, layout="HWC", parallel=parallel, **depth)
        return fn.normalize(fn.cast(fn.resize(x, size=(16, 16)), dtype=lib.types.FLOAT))

    return pipe()


# ---- accounted pipelines: checkpoint and restore, every sample accounted for ------------------

CHECKPOINT_EVERY = 100  # iterations
ACCOUNTED_STEPS = 25    # iterations of each accounted pipeline per epoch
DAMAGED = ("cut", "noise", "empty")  # how the damaged files of the reader's set are damaged


def damaged_set(photo_root: str, folder: str, good: int) -> tuple[str, dict[str, int], set[int]]:
    """``good`` photos and one file of each kind of DAMAGED, listed in a file list whose labels
    number the files: (file list, label of each listed path, labels of the damaged files)."""
    photos_found = sorted(os.path.join(d, f) for d, _, fs in os.walk(photo_root) for f in fs if f.endswith(".jpg"))
    os.makedirs(folder, exist_ok=True)
    names = []
    for i, src in enumerate(photos_found[:good]):
        shutil.copyfile(src, os.path.join(folder, f"good_{i:03d}.jpg"))
        names.append(f"good_{i:03d}.jpg")
    with open(photos_found[0], "rb") as f:
        jpeg = f.read()
    contents = {"cut": jpeg[:len(jpeg) // 3], "noise": np.random.default_rng(0).bytes(5000), "empty": b""}
    for kind in DAMAGED:
        with open(os.path.join(folder, f"bad_{kind}.jpg"), "wb") as f:
            f.write(contents[kind])
        names.insert(len(names) * 2 // 3, f"bad_{kind}.jpg")  # amid the good ones
    listing = os.path.join(folder, "files.txt")
    with open(listing, "w") as f:
        f.writelines(f"{name} {label}\n" for label, name in enumerate(names))
    return listing, {name: label for label, name in enumerate(names)}, {
        label for label, name in enumerate(names) if name.startswith("bad_")}


def skipping_reader_pipeline(lib, folder: str, listing: str, checkpoint=None):
    fn = lib.fn

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=3, enable_checkpointing=True,
                      checkpoint=checkpoint)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=folder, file_list=listing, shuffle_after_epoch=True, name="Reader")
        images = fn.decoders.image(jpegs, on_error="skip")
        return fn.resize(images, size=(16, 16)), labels

    return pipe()


def counted_sample(info):
    """A sample that says which it is: its index in the epoch, in a 12x12x3 image."""
    return np.full((12, 12, 3), info.idx_in_epoch % 251, np.uint8), np.array([info.idx_in_epoch], np.int64)


def counted_source_pipeline(lib, checkpoint=None):
    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, py_num_workers=WORKERS,
                      py_start_method="spawn", enable_checkpointing=True, checkpoint=checkpoint)
    def pipe():
        image, index = lib.fn.external_source(source=counted_sample, num_outputs=2, batch=False, parallel=True,
                                              prefetch_queue_depth=SOURCE_DEPTH)
        return lib.fn.resize(image, size=(8, 8)), index

    return pipe()


class Replaced:
    """A pipeline run ``ACCOUNTED_STEPS`` iterations an epoch and, every CHECKPOINT_EVERY
    iterations, replaced by a pipeline restored from its checkpoint; the restored pipeline's first
    batch must equal the batch the old one gives next. ``consume(outputs, iteration)`` checks or
    records each batch; ``retire(pipeline, consumed)`` what the old pipeline's record holds."""

    def __init__(self, make, consume, retire=None):
        self.make, self.consume, self.retire = make, consume, retire
        self.pipe = make(None)
        self.consumed = 0   # iterations returned, over every pipeline
        self.restores = 0
        self.mismatches = 0

    def step(self, iterations: int) -> None:
        for _ in range(iterations):
            if self.consumed and self.consumed % CHECKPOINT_EVERY == 0:
                self._replace()
                continue
            self.consume(self.pipe.run(), self.consumed)
            self.consumed += 1

    def _replace(self) -> None:
        cpt = self.pipe.checkpoint()
        expected = _fingerprint(self.pipe.run())  # what the old pipeline gives next
        old, self.pipe = self.pipe, self.make(cpt)
        if self.retire is not None:
            self.retire(old, self.consumed)
        del old
        gc.collect()  # its threads and worker processes end now, before resources are sampled
        got = self.pipe.run()
        self.mismatches += _fingerprint(got) != expected
        self.consume(got, self.consumed)
        self.consumed += 1
        self.restores += 1

    def finish(self) -> None:
        if self.retire is not None:
            self.retire(self.pipe, self.consumed)


def _fingerprint(outputs) -> list:
    return [np.asarray(o.as_array() if hasattr(o, "as_array") else o).tobytes() for o in outputs]


class SkipLedger:
    """Every position of the damaged set's reader stream: a sample returned or a file skipped."""

    def __init__(self, labels: dict[str, int], damaged: set[int]):
        self.labels, self.damaged = labels, damaged
        self.returned: collections.Counter = collections.Counter()
        self.skipped: collections.Counter = collections.Counter()

    def consume(self, outputs, iteration: int) -> None:
        self.returned.update(int(x) for x in np.asarray(outputs[1].as_array()).ravel())

    def retire(self, pipe, consumed: int) -> None:
        """The skips of the iterations consumed (a pipeline also lists those it prefetched)."""
        for s in pipe.skipped_samples:
            if s["iteration"] < consumed:
                self.skipped[self.labels[os.path.basename(s["source"])]] += 1

    def verdict(self) -> dict:
        """Each file visited as often as the stream's epochs visit it (F or F+1 times after F whole
        epochs), good ones returned, damaged ones skipped."""
        files = len(self.labels)
        positions = sum(self.returned.values()) + sum(self.skipped.values())
        visits = self.returned + self.skipped
        full = positions // files
        ok = (all(visits[f] in (full, full + 1) for f in range(files)) and
              sum(visits[f] == full + 1 for f in range(files)) == positions % files and
              not set(self.returned) & self.damaged and set(self.skipped) <= self.damaged)
        return {"stream_positions": positions, "returned": sum(self.returned.values()),
                "skipped": sum(self.skipped.values()), "damaged_files": len(self.damaged), "ok": ok}


class IndexLedger:
    """The parallel source's batches: each must hold exactly the next BATCH samples."""

    def __init__(self):
        self.samples = 0
        self.wrong = 0

    def consume(self, outputs, iteration: int) -> None:
        got = [int(x) for x in np.asarray(outputs[1].as_array()).ravel()]
        self.wrong += got != list(range(iteration * BATCH, (iteration + 1) * BATCH))
        self.samples += len(got)

    def verdict(self) -> dict:
        return {"samples": self.samples, "wrong_batches": self.wrong, "ok": self.wrong == 0}


# ---- resource sampling -------------------------------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _descendants() -> list[int]:
    """The processes below this one (workers, and anything they started)."""
    parent_of = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent_of[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree, found = {os.getpid()}, True
    while found:
        below = {pid for pid, parent in parent_of.items() if parent in tree} - tree
        tree |= below
        found = bool(below)
    return sorted(tree - {os.getpid()})


def _tree_shm(pids: list[int]) -> int:
    """/dev/shm segments that this process or the processes below it have open or mapped (deleted
    ones too): /dev/shm is shared with other users' processes, which must not count."""
    found = set()
    for pid in [os.getpid(), *pids]:
        try:
            for name in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{name}")
                except OSError:
                    continue
                if target.startswith("/dev/shm/"):
                    found.add(target)
            with open(f"/proc/{pid}/maps") as f:
                found.update(line.split(None, 5)[5].strip() for line in f if " /dev/shm/" in line)
        except OSError:  # the process ended meanwhile
            continue
    return len(found)


def _os_threads() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def _gpu_used_mb(device_id: int | None) -> float | None:
    """This process's memory on the GPU (NVML: what runs beside the soak there does not count)."""
    return None if device_id is None else _gpu_reader(device_id)()


@functools.lru_cache(maxsize=None)
def _gpu_reader(device_id: int):
    return process_gpu_mb(device_id)


def _open_fds() -> tuple[int, int]:
    """Open descriptors other than the parallel source's slots, and the number of slots (distinct
    memfds: the pipeline process holds each twice, the descriptor it received and the duplicate
    that Python's mmap keeps). The fewest of a few looks: readers read ahead on their own threads,
    so a look can land while a file is open for a moment."""
    looks = []
    for _ in range(5):
        other, slots = 0, set()
        for name in os.listdir("/proc/self/fd"):
            path = f"/proc/self/fd/{name}"
            try:
                if SLOT_NAME in os.readlink(path):
                    slots.add(os.stat(path).st_ino)
                else:
                    other += 1
            except OSError:  # closed between the listing and the look
                continue
        looks.append((other, len(slots)))
        time.sleep(0.01)
    return min(looks)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


@functools.lru_cache(maxsize=None)
def _mallinfo2():
    """glibc's mallinfo2 (2.33 and later), or None where there is none."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    fn.restype = _MallInfo2
    return fn


def _heap_mb() -> dict:
    """Where resident memory is: malloc's heaps in use and free (free memory the threads' arenas
    keep), the library's host buffer pool's cached blocks, and Python's allocated blocks."""
    found = {"py_blocks": sys.getallocatedblocks()}
    info = _mallinfo2()
    if info is not None:
        mi = info()
        found.update(heap_in_use_mb=round((mi.uordblks + mi.hblkhd) / 2**20, 2),
                     heap_free_mb=round(mi.fordblks / 2**20, 2))
    engine = sys.modules.get("penstock._engine")
    if engine is not None:
        found["pool_mb"] = round(engine.pool_cached_bytes() / 2**20, 2)
    return found


def sample(device_id: int | None = None) -> dict:
    gc.collect()
    fds, slots = _open_fds()
    below = _descendants()
    s = {"rss_mb": round(_rss_mb(), 2), "fds": fds, "shm_slots": slots,
         "threads": threading.active_count(), "os_threads": _os_threads(), "processes": len(below),
         "shm": _tree_shm(below), **_heap_mb()}
    gpu = _gpu_used_mb(device_id)
    if gpu is not None:
        s["gpu_mb"] = round(gpu, 2)
    return s


class Curve:
    """The samples, a typed array per quantity: an hour's record of dicts would itself grow RSS by
    about 1.5 MB, which the soak would then count as the library's."""

    def __init__(self) -> None:
        self.columns: dict[str, array.array] = {}

    def append(self, s: dict) -> None:
        if not self.columns:
            self.columns = {k: array.array("q" if isinstance(v, int) else "d") for k, v in s.items()}
        for k, column in self.columns.items():
            column.append(s[k])

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), ()))

    def rows(self) -> list[dict]:
        return [dict(zip(self.columns, values)) for values in zip(*self.columns.values())]


# ---- the soak ---------------------------------------------------------------------------------

WARMUP_SHARE = 0.1  # of a timed run (--minutes)


def soak(lib_name: str, epochs: int | None, warmup: int, images: int, device_id: int | None = None,
         minutes: float | None = None) -> dict:
    """``epochs`` epochs, or as many as ``minutes`` take (at least warmup + 1). A timed run's warm-up
    is its first WARMUP_SHARE of the time when that holds more than ``warmup`` epochs: the allocator's
    arenas settle over minutes, not a fixed number of epochs."""
    root, _ = photos.photo_set("imagenet-like", images)  # before the libraries start threads: it may fork
    lib = importlib.import_module(lib_name)
    iterators = importlib.import_module(f"{lib_name}.plugin.pytorch")
    warnings.simplefilter("ignore")  # the damaged files are warned about once each: expected here
    notes = []
    loader = iterators.DALIGenericIterator(reader_pipeline(lib, root, device_id), ["data", "label", "shape"],
                                           reader_name="Reader")
    sources = [source_pipeline(lib, False)]
    try:
        sources.append(source_pipeline(lib, True))
        sources[-1].build()
    except NotImplementedError as exc:
        sources.pop()
        notes.append(f"parallel external source not run: {exc}")
    scratch = tempfile.mkdtemp(prefix="soak-")
    accounted = {"parallel_source": (IndexLedger(), lambda cpt: counted_source_pipeline(lib, cpt))}
    if lib_name == "penstock":  # on_error="skip" is penstock's
        listing, labels, damaged = damaged_set(root, os.path.join(scratch, "damaged"), min(images, 24))
        folder = os.path.dirname(listing)
        accounted["skipping_reader"] = (SkipLedger(labels, damaged),
                                        lambda cpt: skipping_reader_pipeline(lib, folder, listing, cpt))
    else:
        notes.append("skipping reader not run: on_error='skip' is penstock's")
    runs = {name: Replaced(make, ledger.consume, getattr(ledger, "retire", None))
            for name, (ledger, make) in accounted.items()}
    curve, checksum = Curve(), 0.0
    start = time.monotonic()
    while (len(curve) < epochs if minutes is None else
           time.monotonic() - start < 60 * minutes or len(curve) <= warmup):
        if minutes is not None and time.monotonic() - start < WARMUP_SHARE * 60 * minutes:
            warmup = max(warmup, len(curve) + 1)
        steps = 0
        for batch in loader:
            checksum += float(batch[0]["label"].sum())
            steps += 1
        for pipe in sources:
            for _ in range(steps):
                checksum += float(np.asarray(pipe.run()[0].as_array()).mean())
        for run in runs.values():
            run.step(ACCOUNTED_STEPS)
        curve.append(dict(sample(device_id), seconds=round(time.monotonic() - start, 1)))
    seconds = time.monotonic() - start
    for run in runs.values():
        run.finish()
    accounts = {name: dict(ledger.verdict(), iterations=runs[name].consumed, restores=runs[name].restores,
                           restore_mismatches=runs[name].mismatches)
                for name, (ledger, _) in accounted.items()}
    for account in accounts.values():
        account["ok"] = account["ok"] and account["restore_mismatches"] == 0
    shutil.rmtree(scratch, ignore_errors=True)
    return verdict(lib_name + ("" if device_id is None else f" (GPU {device_id})"), curve.rows(), warmup, seconds,
                   notes, accounts=accounts)


TRENDS = ("rss_mb", "heap_in_use_mb", "heap_free_mb", "pool_mb", "py_blocks", "gpu_mb")
WINDOWS = 10  # stretches of the post-warm-up samples whose medians must stay within +-2%


def _drift(values: list[float]) -> float:
    """The largest relative distance of a stretch's median from the first stretch's: the values cut
    into WINDOWS stretches in order (fewer values: one a stretch)."""
    medians = [float(np.median(w)) for w in np.array_split(np.asarray(values, float), min(WINDOWS, len(values)))]
    return max(abs(m / medians[0] - 1) for m in medians)


def verdict(system: str, curve: list[dict], warmup: int, seconds: float, notes: list[str],
            slot_bound: int = SLOT_BOUND, accounts: dict | None = None) -> dict:
    """RSS (and GPU memory in use, when sampled) flat after warm-up (see ``drift``), no growth of
    descriptors (the parallel sources' slot pool aside: it must stay within its bound), threads,
    processes or shared-memory segments, and every accounted sample accounted for."""
    after = curve[warmup:] or curve[-1:]
    ref = after[0]
    drift = _drift([s["rss_mb"] for s in after])
    rss = [s["rss_mb"] for s in after]
    swing = (max(rss) - min(rss)) / float(np.median(rss))
    # the trends beneath the samples' swings (caches filling and emptying), least squares over time:
    # RSS's, and those of the parts it is made of, which say where a rise is
    timed = len(after) > 2 and all("seconds" in s for s in after)
    trends = {k: round(float(np.polyfit([s["seconds"] for s in after], [s[k] for s in after], 1)[0]) * 3600, 2)
              for k in TRENDS if timed and k in ref}
    gpu_drift = _drift([s["gpu_mb"] for s in after]) if ref.get("gpu_mb") else 0.0
    growth = {k: after[-1][k] - ref[k] for k in ("fds", "threads", "os_threads", "processes", "shm") if k in ref}
    slots = max(s.get("shm_slots", 0) for s in curve)
    accounts = accounts or {}
    ok = (drift <= 0.02 and gpu_drift <= 0.02 and all(v <= 0 for v in growth.values()) and slots <= slot_bound
          and all(a["ok"] for a in accounts.values()))
    return {"system": system, "epochs": len(curve), "warmup": warmup, "seconds": round(seconds, 1),
            "rss_drift_pct": round(100 * drift, 3), "rss_swing_pct": round(100 * swing, 3),
            "rss_slope_mb_per_hour": trends.get("rss_mb", 0.0), "trends_per_hour": trends,
            "gpu_mem_drift_pct": round(100 * gpu_drift, 3),
            "growth_after_warmup": growth,
            "shm_slots_max": slots, "shm_slot_bound": slot_bound, "accounts": accounts, "ok": ok,
            "notes": notes, "curve": {k: [s.get(k) for s in curve] for k in curve[0]}}


def plot(results: list[dict], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot: matplotlib is not installed; skipped", file=sys.stderr)
        return
    keys = [k for k in results[0]["curve"] if k != "seconds"]
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 2.2 * len(keys)), sharex=True)
    for ax, key in zip(axes, keys):
        for r in results:
            ax.plot(r["curve"][key], label=r["system"])
        ax.axvline(results[0]["warmup"], color="grey", lw=0.5)
        ax.set_ylabel(key)
    axes[0].legend()
    axes[-1].set_xlabel("epoch")
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--minutes", type=float, default=None, help="run this long instead of --epochs")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--images", type=int, default=48)
    ap.add_argument("--plot", metavar="FILE", help="draw the curves (needs matplotlib)")
    ap.add_argument("--device-id", type=int, default=None,
                    help="the reader pipeline on this GPU (mixed decoders); its memory in use is sampled")
    ap.add_argument("--dali", action="store_true", help="NVIDIA DALI too, when installed")
    ap.add_argument("--lib", default=None, help=argparse.SUPPRESS)  # one system, in this process
    a = ap.parse_args()
    if a.lib:
        emit(soak(a.lib, a.epochs, a.warmup, a.images, a.device_id, a.minutes))
        return 0
    photos.photo_set("imagenet-like", a.images)  # made once, before the systems' processes read it
    results = []
    # each in its own process: resident memory is per process
    for system in with_dali(["penstock"]) if a.dali else ["penstock"]:
        try:
            result = run_worker(__file__, ["--lib", LIBRARIES[system], "--epochs", str(a.epochs), "--warmup",
                                           str(a.warmup), "--images", str(a.images)]
                                + ([] if a.device_id is None else ["--device-id", str(a.device_id)])
                                + ([] if a.minutes is None else ["--minutes", str(a.minutes)]))
        except RuntimeError as exc:
            result = {"system": LIBRARIES[system], "ok": False, "error": str(exc)}
        emit(result)
        results.append(result)
    if a.plot and all("curve" in r for r in results):
        plot(results, a.plot)
    return 0 if results[0]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
