"""ResNet-50 input pipelines on the GPU: penstock vs NVIDIA DALI 2.4, side by side in one run.

Batch 256, num_threads = host cores, over generated ImageNet-like JPEGs (≈430×520, quality 90):
  train: readers.file (shuffle) -> decoders.image_random_crop(device="mixed") -> resize 224×224
         -> crop_mirror_normalize (float CHW, ImageNet mean/std, coin-flip mirror)
  val:   decoders.image(device="mixed") -> resize(resize_shorter=256) -> crop_mirror_normalize(crop 224)
Each (system, pipeline) runs in its own process, alternating over rounds. One JSON line per system
and pipeline: median img/s, peak GPU memory (device memory in use above the process's baseline,
other processes' included), host CPU seconds per image (child processes' included); then the
ratios. DALI is included when `import nvidia.dali` works.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

BATCH = 256
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def build(lib, kind: str, root: str, threads: int, hw_load: float | None):
    fn, types = lib.fn, lib.types
    decoder_args = {} if hw_load is None else {"hw_decoder_load": hw_load}

    @lib.pipeline_def(batch_size=BATCH, num_threads=threads, device_id=0, seed=7)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=(kind == "train"), name="Reader")
        if kind == "train":
            images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB, **decoder_args)
            images = fn.resize(images, resize_x=224, resize_y=224)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                              mirror=fn.random.coin_flip())
        else:
            images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB, **decoder_args)
            images = fn.resize(images, resize_shorter=256)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224),
                                              mean=MEAN, std=STD)
        return images, labels.gpu()

    return pipe()


class _GpuMemory:
    """Peak device memory in use, sampled every 2 ms, above the level when sampling started."""

    def __init__(self):
        import cupy
        self.rt = cupy.cuda.runtime
        self.base = self._used()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _used(self) -> int:
        free, total = self.rt.memGetInfo()
        return total - free

    def _loop(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, self._used() - self.base)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _cpu_seconds() -> float:
    """CPU time of this process and of its live child processes."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                children = f.read().split()
        except OSError:
            continue
        for pid in children:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
    return total


def worker(system: str, kind: str, root: str, batches: int, threads: int, hw_load: float | None) -> None:
    import cupy
    cupy.cuda.runtime.setDevice(0)
    memory = _GpuMemory()
    if system == "penstock":
        import penstock as lib
    else:
        import nvidia.dali as lib
    pipe = build(lib, kind, root, threads, hw_load)
    pipe.build()
    # warm up for a second at least: with 4 batches (50 ms) the first process after the GPU sat idle
    # measured up to 40% slower than the next ones (clocks ramping up, caches filling)
    warm_until = time.perf_counter() + 1.0
    for k in itertools.count():
        pipe.run()
        if k >= 3 and time.perf_counter() > warm_until:
            break
    cupy.cuda.runtime.deviceSynchronize()
    cpu0 = _cpu_seconds()
    start = time.perf_counter()
    for _ in range(batches):
        pipe.run()
    cupy.cuda.runtime.deviceSynchronize()
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu0
    images = batches * BATCH
    print(json.dumps({"img_per_s": images / seconds, "peak_gpu_mb": round(memory.stop() / 2**20, 1),
                      "host_cpu_ms_per_img": round(1000 * cpu / images, 3)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default="/tmp/penstock_bench_imagenet_like")
    ap.add_argument("--images", type=int, default=2048)
    ap.add_argument("--batches", type=int, default=100)  # 24 batches (0.3 s) varied by 10% run to run
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--pipelines", default="train,val")
    ap.add_argument("--hw-decoder-load", type=float, default=None, help="pass to both systems (default: theirs)")
    ap.add_argument("--worker", nargs=2, metavar=("SYSTEM", "PIPELINE"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.root, args.batches, args.threads, args.hw_decoder_load)
        return
    from make_sample_data import make_dataset
    make_dataset(args.root, classes=16, per_class=args.images // 16, size=(430, 520), noise_sigma=17.0)
    systems = ["penstock"]
    try:
        import nvidia.dali  # noqa: F401
        systems.append("dali")
    except ImportError:
        pass
    extra = [] if args.hw_decoder_load is None else ["--hw-decoder-load", str(args.hw_decoder_load)]
    for kind in args.pipelines.split(","):
        runs: dict[str, list[dict]] = {s: [] for s in systems}
        for _ in range(args.rounds):
            for system in systems:
                out = subprocess.run([sys.executable, __file__, "--worker", system, kind, "--root", args.root,
                                      "--batches", str(args.batches), "--threads", str(args.threads)] + extra,
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    raise RuntimeError(f"{system}/{kind} failed:\n{out.stderr[-3000:]}")
                runs[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
        medians = {}
        for system, results in runs.items():
            medians[system] = statistics.median(r["img_per_s"] for r in results)
            print(json.dumps({"bench": "rn50_gpu", "pipeline": kind, "system": system, "batch": BATCH,
                              "threads": args.threads, "hw_decoder_load": args.hw_decoder_load,
                              "img_per_s": round(medians[system], 1),
                              "peak_gpu_mb": max(r["peak_gpu_mb"] for r in results),
                              "host_cpu_ms_per_img": statistics.median(r["host_cpu_ms_per_img"] for r in results),
                              "rounds": len(results)}), flush=True)
        if "dali" in medians:
            print(json.dumps({"bench": "rn50_gpu", "pipeline": kind,
                              "penstock_vs_dali": round(medians["penstock"] / medians["dali"], 2), "target": 1.15}),
                  flush=True)


if __name__ == "__main__":
    main()
