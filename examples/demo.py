"""penstock demo: a real pipeline over generated JPEGs, with its throughput.

readers.file (shuffled, with labels) + external_source (per-sample Python data) + arithmetic +
JPEG decoding and resizing, run asynchronously by the native engine on the CPU.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_data import make_dataset  # noqa: E402

import penstock  # noqa: E402
from penstock import fn, pipeline_def, types  # noqa: E402

DATA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "demo_images"))
BATCH = 32


def weights(sample_info: types.SampleInfo) -> np.ndarray:
    """A per-sample value computed in Python: the sample's position in the epoch."""
    return np.array([sample_info.idx_in_epoch], dtype=np.float32)


@pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=42)
def demo_pipeline(data_dir: str):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
    position = fn.external_source(source=weights, batch=False)
    nbytes = fn.cast(jpegs.shape(), dtype=types.FLOAT)
    kilobytes = nbytes / 1024.0
    score = kilobytes * 0.5 + fn.cast(labels, dtype=types.FLOAT) - position * 0.01
    images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=224, resize_y=224)
    return jpegs, labels, kilobytes, score, images


def main() -> None:
    make_dataset(DATA)  # 4 classes of 16 (make demo makes them while the engine compiles)
    pipe = demo_pipeline(DATA)
    pipe.build()
    n = pipe.epoch_size("Reader")
    print(f"penstock {penstock.__version__}: {n} JPEGs in {DATA}")
    out = pipe.run()
    print("first batch: labels", out[1].as_array().ravel()[:8].tolist(),
          "sizes (KiB)", [round(float(kib), 1) for kib in out[2].as_array().ravel()[:4]])
    iterations = 40
    start = time.perf_counter()
    for _ in range(iterations):
        pipe.run()
    elapsed = time.perf_counter() - start
    print(f"throughput: {iterations * BATCH / elapsed:.0f} samples/s "
          f"({elapsed / iterations * 1e3:.2f} ms per batch of {BATCH})")
    slowest = sorted(pipe.executor_statistics().items(), key=lambda kv: -kv[1]["total_seconds"])[:3]
    print("slowest operators:", ", ".join(f"{name} {s['mean_ms']:.2f} ms" for name, s in slowest))


if __name__ == "__main__":
    main()
