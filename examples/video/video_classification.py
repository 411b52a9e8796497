"""A video-classification loader, written as for DALI (the same code runs on both), feeding PyTorch:
clips of 16 frames 2 apart read from a folder of videos (one sub-folder per class) by
experimental.readers.video, shuffled; each clip randomly cropped (the same window for all its
frames), flipped or not, resized to 112x112 and normalized into float32 CFHW ([3, 16, 112, 112]);
DALIGenericIterator hands out [batch, 3, 16, 112, 112] tensors and the labels. With --device gpu
the reader decodes on the GPU (NVDEC, through PyNvVideoCodec) and the rest runs there too.

    python examples/video/video_classification.py [--root DIR] [--batch-size 4] [--batches 4] [--device cpu|gpu]

Without --root it writes a few natural-motion H.264 clips into a temporary folder first
(examples/make_video_data.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import penstock
from penstock.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

FRAMES, STRIDE, SIZE = 16, 2, 112
MEAN = [0.43216 * 255, 0.394666 * 255, 0.37645 * 255]   # the Kinetics statistics video models use
STD = [0.22803 * 255, 0.22145 * 255, 0.216989 * 255]


def clip_pipeline(lib, root: str, batch_size: int, threads: int = 2, device: str = "cpu", seed: int = 1,
                  shard_id: int = 0, num_shards: int = 1):
    """The loader as a pipeline of ``lib``: ``penstock`` or ``nvidia.dali``."""
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=batch_size, num_threads=threads, device_id=0 if device == "gpu" else None,
                      seed=seed)
    def pipe():
        video, label = fn.experimental.readers.video(device=device, file_root=root, sequence_length=FRAMES,
                                                     stride=STRIDE, random_shuffle=True, initial_fill=32,
                                                     shard_id=shard_id, num_shards=num_shards, name="Reader")
        video = fn.resize(video, resize_shorter=128)
        video = fn.crop_mirror_normalize(video, crop=(SIZE, SIZE), crop_pos_x=fn.random.uniform(range=(0, 1)),
                                         crop_pos_y=fn.random.uniform(range=(0, 1)),
                                         mirror=fn.random.coin_flip(), mean=MEAN, std=STD, dtype=types.FLOAT,
                                         output_layout="FCHW")
        return fn.transpose(video, perm=[1, 0, 2, 3]), label   # CFHW, as 3-D convolutions take clips
    return pipe()


def loader(root: str, batch_size: int, device: str = "cpu") -> DALIGenericIterator:
    pipe = clip_pipeline(penstock, root, batch_size, device=device)
    return DALIGenericIterator([pipe], ["clips", "labels"], reader_name="Reader",
                               last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    args = ap.parse_args()
    root = args.root
    if root is None:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        from make_video_data import write_clips
        root = tempfile.mkdtemp(prefix="penstock-clips-")
        write_clips(root, count=6, frames=48, height=144, width=192, classes=3)
    for k, batch in zip(range(args.batches), loader(root, args.batch_size, args.device)):
        clips, labels = batch[0]["clips"], batch[0]["labels"]
        print(f"batch {k}: clips {tuple(clips.shape)} {clips.dtype} on {clips.device}, labels "
              f"{labels.view(-1).tolist()}")


if __name__ == "__main__":
    main()
