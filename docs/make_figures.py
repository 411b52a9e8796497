"""Draws the documentation's two pictures into docs/_static/ (committed; run again after a change
that alters them):

- batch_grid.png: a batch of a training pipeline (random crops, resized, mirrored) drawn by
  penstock.utils.save_grid, from photographs that scikit-image bundles;
- profiler_timeline.png: the timeline penstock.profiler records (its Chrome-trace JSON), drawn with
  matplotlib: each operator run on the thread that ran it, and the consumer's waits.

    python docs/make_figures.py
"""
from __future__ import annotations

import json
import os
import tempfile

import matplotlib
import numpy as np
from PIL import Image

from penstock import fn, pipeline_def, profiler, types, utils

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_static")
PHOTOS = {"animal": ("chelsea", "cat"), "object": ("coffee", "rocket", "astronaut")}


def photo_folder(root: str) -> str:
    """One subfolder per class of scikit-image's photographs, as JPEGs."""
    import skimage.data
    for label, names in PHOTOS.items():
        os.makedirs(os.path.join(root, label), exist_ok=True)
        for name in names:
            Image.fromarray(getattr(skimage.data, name)()).save(os.path.join(root, label, f"{name}.jpg"), quality=90)
    return root


@pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=5)
def train_pipeline(data_dir: str):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
    images = fn.resize(images, resize_x=96, resize_y=96)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels


def batch_grid(data_dir: str) -> str:
    images, _ = train_pipeline(data_dir).run()
    path = os.path.join(STATIC, "batch_grid.png")
    utils.save_grid(images, path, columns=4)
    return path


def timeline(data_dir: str) -> str:
    trace = os.path.join(tempfile.mkdtemp(), "timeline.json")
    profiler.profile(train_pipeline(data_dir, batch_size=32), batches=4, trace=trace)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    slices = [e for e in events if e["ph"] == "X"]
    names = sorted({e["name"] for e in slices})
    colours = dict(zip(names, plt.get_cmap("tab10").colors))
    rows = sorted(tracks, key=lambda tid: tracks[tid].startswith("consumer"))
    figure, ax = plt.subplots(figsize=(9, 1.6 + 0.45 * len(rows)))
    for row, tid in enumerate(rows):
        for name in names:
            bars = [(e["ts"] / 1e3, e["dur"] / 1e3) for e in slices if e["tid"] == tid and e["name"] == name]
            if bars:
                ax.broken_barh(bars, (row - 0.4, 0.8), color=colours[name])
    ax.set_yticks(np.arange(len(rows)), [tracks[tid] for tid in rows], fontsize=8)
    ax.set_xlabel("ms")
    figure.legend(handles=[matplotlib.patches.Patch(color=colours[n], label=n) for n in names], fontsize=7,
                  loc="lower center", ncol=4, frameon=False)
    figure.subplots_adjust(left=0.2, right=0.98, top=0.95, bottom=0.45)
    path = os.path.join(STATIC, "profiler_timeline.png")
    figure.savefig(path, dpi=90)
    return path


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        folder = photo_folder(root)
        for path in (batch_grid(folder), timeline(folder)):
            print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


if __name__ == "__main__":
    main()
