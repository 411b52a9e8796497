"""A training loop fed by the GPU pipeline for many minutes: does anything crash, leak or go missing?

The loop of the crash report (issue 35) as users run it: torchvision's ResNet-18 at 176 px (bf16
autocast, channels_last, SGD) trained on the ResNet-50 train pipeline of _pipelines.py (shuffled
readers.file, image_random_crop on the mixed backend, resize, crop_mirror_normalize with a coin-flip
mirror) through DALIClassificationIterator (reader_name, LastBatchPolicy.PARTIAL), torchvision
imported first. Every --report seconds one JSON line: steps, img/s, this process's GPU memory (NVML),
RSS, open fds and threads. Every epoch's labels are counted against the photo set's classes: each
sample must arrive exactly once. The last line says whether the run was flat: GPU memory and RSS
after the first two reports (warm-up: cuDNN's autotuning, pools filling) grow by at most
--slack-mb, fds and threads not at all.

    python bench/train_soak.py --minutes 20           # on the GPU machine (photo set made if needed)
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import photos  # noqa: E402
from _common import emit, gpu_name, process_gpu_mb  # noqa: E402
from _pipelines import rn50_pipeline  # noqa: E402
from train_e2e import make_model, trainer  # noqa: E402


def host_usage() -> dict:
    """RSS (MB), open file descriptors and threads of this process."""
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return {"rss_mb": round(rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1),
            "fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
            "os_threads": len(os.listdir("/proc/self/task"))}


def class_counts(root: str):
    """Files per class folder, in readers.file's label order (sorted folder names)."""
    import numpy as np
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return np.array([len(os.listdir(os.path.join(root, d))) for d in folders])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    photos.add_arguments(ap)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--report", type=float, default=30.0, help="seconds between reports")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--size", type=int, default=176)
    ap.add_argument("--slack-mb", type=float, default=64.0, help="growth allowed after the warm-up")
    args = ap.parse_args()

    import numpy as np
    import torch
    import torchvision  # noqa: F401  (the crash report's condition: its bundled image libraries loaded first)
    import penstock
    from penstock.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

    root = photos.prepared(args)
    expected = class_counts(root)
    torch.backends.cudnn.benchmark = True
    model = make_model("resnet18", "cuda")
    train = trainer(model, "cuda")
    pipe = rn50_pipeline(penstock, "train", root, args.batch, args.threads, device="gpu", size=args.size,
                         layout="HWC")
    loader = DALIClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                        last_batch_policy=LastBatchPolicy.PARTIAL)
    gpu_mb = process_gpu_mb()
    start = last = time.perf_counter()
    steps = images = epochs = 0
    bad_epochs: list[dict] = []
    reports: list[dict] = []
    while time.perf_counter() - start < args.minutes * 60:
        seen = np.zeros(len(expected), np.int64)
        for (batch,) in loader:
            labels = batch["label"].view(-1).long()
            train(batch["data"].permute(0, 3, 1, 2), labels)
            seen += np.bincount(labels.cpu().numpy(), minlength=len(expected))
            steps += 1
            images += len(labels)
            now = time.perf_counter()
            if now - last >= args.report:
                torch.cuda.synchronize()
                last = now
                reports.append({"t_s": round(now - start), "steps": steps, "epochs": epochs,
                                "img_per_s": round(images / (now - start)), "gpu_mb": round(gpu_mb(), 1), **host_usage()})
                emit({"bench": "train_soak", **reports[-1]})
        epochs += 1
        if not np.array_equal(seen, expected):
            bad_epochs.append({"epoch": epochs, "missing_or_extra": int(np.abs(seen - expected).sum())})
    torch.cuda.synchronize()
    steady = reports[2:] or reports
    growth = {key: round(max(r[key] for r in steady) - steady[0][key], 1)
              for key in ("gpu_mb", "rss_mb", "fds", "os_threads")}
    flat = (growth["gpu_mb"] <= args.slack_mb and growth["rss_mb"] <= args.slack_mb and growth["fds"] <= 0
            and growth["os_threads"] <= 0)
    emit({"bench": "train_soak", "gpu": gpu_name(), "minutes": args.minutes, "steps": steps, "epochs": epochs,
          "img_per_s": round(images / (time.perf_counter() - start)), "growth_after_warmup": growth, "flat": flat,
          "epochs_with_wrong_labels": bad_epochs, "ok": flat and not bad_epochs})


if __name__ == "__main__":
    main()
