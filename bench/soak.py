"""Soak: many epochs over a small dataset through every kind of operator; resources must stay flat.

Each epoch runs (a) a reader pipeline (readers.file -> decoders -> geometry -> colour -> CMN,
random operators, shapes) through the PyTorch iterator over the reader's epoch, over pictures of
the imagenet-like photo set (bench/photos.py), and (b) an
external-source pipeline (serial, and parallel when this build supports it) through run().
After each epoch it samples resident memory, open file descriptors, threads, child processes
and shared-memory segments (and GPU memory in use when CuPy sees a GPU). After the warm-up
epochs, RSS must stay within +-2% of its first post-warm-up sample and the counts must not grow.

Prints one JSON line per system (penstock; NVIDIA DALI too when installed, in its own process)
with the curves and a verdict, and exits non-zero when a check fails. Descriptors are counted
without the parallel source's shared-memory slots, a pool bounded by design that is checked
against its bound instead (see SLOT_BOUND). ``--plot FILE`` draws the curves with matplotlib
when it is installed.

    python bench/soak.py                     # 100 epochs, 10 of warm-up
    python bench/soak.py --epochs 20 --plot soak.png
    python bench/soak.py --gpu               # the reader pipeline on GPU 0 (mixed decoders, GPU
                                             # operators); GPU memory must stay flat too
"""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import photos  # noqa: E402
from _common import LIBRARIES, emit, run_worker, with_dali  # noqa: E402

BATCH = 8


def reader_pipeline(lib, root: str, gpu: bool = False):
    fn, types = lib.fn, lib.types
    decoder = {"device": "mixed"} if gpu else {}

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0 if gpu else None, seed=1)
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
SLOT_BOUND = WORKERS * WORKERS * (SOURCE_DEPTH + 1)
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


# ---- resource sampling -------------------------------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _children() -> int:
    me, n = str(os.getpid()), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                n += f.read().rsplit(")", 1)[1].split()[1] == me
        except OSError:
            continue
    return n


def _gpu_used_mb() -> float | None:
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None
        free, total = cupy.cuda.runtime.memGetInfo()
        return (total - free) / 2 ** 20
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: the curve has no GPU column
        return None


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


def sample() -> dict:
    gc.collect()
    fds, slots = _open_fds()
    s = {"rss_mb": round(_rss_mb(), 2), "fds": fds, "shm_slots": slots,
         "threads": threading.active_count(), "processes": _children(),
         "shm": len(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else 0}
    gpu = _gpu_used_mb()
    if gpu is not None:
        s["gpu_mb"] = round(gpu, 2)
    return s


# ---- the soak ---------------------------------------------------------------------------------

def soak(lib_name: str, epochs: int, warmup: int, images: int, gpu: bool = False) -> dict:
    root, _ = photos.photo_set("imagenet-like", images)  # before the libraries start threads: it may fork
    lib = importlib.import_module(lib_name)
    iterators = importlib.import_module(f"{lib_name}.plugin.pytorch")
    notes = []
    loader = iterators.DALIGenericIterator(reader_pipeline(lib, root, gpu), ["data", "label", "shape"],
                                           reader_name="Reader")
    sources = [source_pipeline(lib, False)]
    try:
        sources.append(source_pipeline(lib, True))
        sources[-1].build()
    except NotImplementedError as exc:
        sources.pop()
        notes.append(f"parallel external source not run: {exc}")
    curve, checksum = [], 0.0
    start = time.monotonic()
    for _ in range(epochs):
        steps = 0
        for batch in loader:
            checksum += float(batch[0]["label"].sum())
            steps += 1
        for pipe in sources:
            for _ in range(steps):
                checksum += float(np.asarray(pipe.run()[0].as_array()).mean())
        curve.append(sample())
    seconds = time.monotonic() - start
    return verdict(lib_name + (" (GPU)" if gpu else ""), curve, warmup, seconds, notes)


def verdict(system: str, curve: list[dict], warmup: int, seconds: float, notes: list[str],
            slot_bound: int = SLOT_BOUND) -> dict:
    """RSS (and GPU memory in use, when sampled) within +-2% after warm-up, no growth of
    descriptors (the parallel source's slot pool aside: it must stay within its bound), threads,
    processes or shared-memory segments."""
    after = curve[warmup:] or curve[-1:]
    ref = after[0]
    drift = max(abs(s["rss_mb"] / ref["rss_mb"] - 1) for s in after)
    gpu_drift = (max(abs(s["gpu_mb"] / ref["gpu_mb"] - 1) for s in after)
                 if ref.get("gpu_mb") else 0.0)
    growth = {k: after[-1][k] - ref[k] for k in ("fds", "threads", "processes", "shm")}
    slots = max(s.get("shm_slots", 0) for s in curve)
    ok = drift <= 0.02 and gpu_drift <= 0.02 and all(v <= 0 for v in growth.values()) and slots <= slot_bound
    return {"system": system, "epochs": len(curve), "warmup": warmup, "seconds": round(seconds, 1),
            "rss_drift_pct": round(100 * drift, 3), "gpu_mem_drift_pct": round(100 * gpu_drift, 3),
            "growth_after_warmup": growth,
            "shm_slots_max": slots, "shm_slot_bound": slot_bound, "ok": ok,
            "notes": notes, "curve": {k: [s.get(k) for s in curve] for k in curve[0]}}


def plot(results: list[dict], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot: matplotlib is not installed; skipped", file=sys.stderr)
        return
    keys = [k for k in results[0]["curve"]]
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
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--images", type=int, default=48)
    ap.add_argument("--plot", metavar="FILE", help="draw the curves (needs matplotlib)")
    ap.add_argument("--gpu", action="store_true", help="the reader pipeline on GPU 0 (mixed decoders)")
    ap.add_argument("--lib", default=None, help=argparse.SUPPRESS)  # one system, in this process
    a = ap.parse_args()
    if a.lib:
        emit(soak(a.lib, a.epochs, a.warmup, a.images, a.gpu))
        return 0
    photos.photo_set("imagenet-like", a.images)  # made once, before the systems' processes read it
    results = []
    for system in with_dali(["penstock"]):  # each in its own process: resident memory is per process
        try:
            result = run_worker(__file__, ["--lib", LIBRARIES[system], "--epochs", str(a.epochs), "--warmup",
                                           str(a.warmup), "--images", str(a.images)] + (["--gpu"] if a.gpu else []))
        except RuntimeError as exc:
            result = {"system": LIBRARIES[system], "ok": False, "error": str(exc)[-2000:]}
        emit(result)
        results.append(result)
    if a.plot and all("curve" in r for r in results):
        plot(results, a.plot)
    return 0 if results[0]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
