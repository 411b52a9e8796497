"""Checkpoint size of the ResNet-50 training pipeline over a 1,000-file dataset.

readers.file (shuffle, default initial_fill 1024) -> decoders.image_random_crop -> resize 224×224
-> crop_mirror_normalize (random mirror from random.coin_flip), batch 64, over 1,000 small
generated JPEGs in 10 class directories. The checkpoint is taken mid-epoch (after 7 batches) and
again after the first epoch; restoring it is timed too. One JSON line per system (NVIDIA DALI 2.4
side by side when it is installed).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import zlib

import numpy as np
from PIL import Image

BATCH, FILES = 64, 1000
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def make_dataset(root: str) -> None:
    rng = np.random.default_rng(0)
    for i in range(FILES):
        d = os.path.join(root, f"class{i % 10}")
        os.makedirs(d, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(
            os.path.join(d, f"{i:04d}.jpg"), quality=80)


def rn50_pipeline(lib, root: str, checkpoint=None):
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=7, enable_checkpointing=True,
                      checkpoint=checkpoint)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()
    return p


def measure(name: str, lib, root: str) -> dict:
    pipe = rn50_pipeline(lib, root)
    for _ in range(7):
        pipe.run()
    start = time.perf_counter()
    mid = pipe.checkpoint()
    capture_ms = 1e3 * (time.perf_counter() - start)
    for _ in range(FILES // BATCH - 7 + 1):  # into the second epoch
        pipe.run()
    later = pipe.checkpoint()
    start = time.perf_counter()
    restored = rn50_pipeline(lib, root, checkpoint=mid)
    restore_ms = 1e3 * (time.perf_counter() - start)
    restored.run()
    as_bytes = mid.encode() if isinstance(mid, str) else bytes(mid)
    return {"system": name, "pipeline": "rn50_train", "files": FILES, "batch": BATCH,
            "checkpoint_bytes": len(as_bytes), "checkpoint_bytes_zlib": len(zlib.compress(as_bytes, 9)),
            "checkpoint_bytes_epoch2": len(later), "capture_ms": round(capture_ms, 2),
            "restore_build_ms": round(restore_ms, 1)}


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    with tempfile.TemporaryDirectory() as root:
        make_dataset(root)
        import penstock
        print(json.dumps(measure("penstock", penstock, root)), flush=True)
        try:
            import nvidia.dali as dali
        except ImportError:
            return
        print(json.dumps(measure("dali", dali, root)), flush=True)


if __name__ == "__main__":
    main()
