"""SSD-style detection input pipeline on COCO, feeding a tiny PyTorch detector for a few steps.

    readers.coco (relative ltrb boxes) -> random_bbox_crop (SSD IoU thresholds)
    -> decoders.image_slice (decode only the window) -> resize 300x300
    -> random horizontal flip of image (crop_mirror_normalize) and boxes (bb_flip)
    -> box_encoder (8732 SSD300 anchors, normalized offsets) -> PyTorch

    python examples/detection_coco.py [--root DIR --annotations FILE] [--steps 5] [--batch 8]

Without --root/--annotations a small COCO-like dataset is generated first (random photos with
random boxes). The pipeline code is what a DALI SSD training script contains, with `penstock`
in place of `nvidia.dali`.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time

import numpy as np

SIZE = 300
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
NUM_CLASSES = 81  # 80 COCO categories + background (label 0)


def ssd300_anchors() -> np.ndarray:
    """The 8732 SSD300 default boxes as relative ltrb rows (feature maps 38..1, two scales at ratio 1
    plus ratios 2 and 3 and their inverses), clipped to the image."""
    feats, steps = [38, 19, 10, 5, 3, 1], [8, 16, 32, 64, 100, 300]
    scales = [21, 45, 99, 153, 207, 261, 315]
    ratios = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    rows = []
    for k, f in enumerate(feats):
        s, s_next = scales[k] / SIZE, scales[k + 1] / SIZE
        sizes = [(s, s), (np.sqrt(s * s_next),) * 2]
        for r in ratios[k]:
            sizes += [(s * np.sqrt(r), s / np.sqrt(r)), (s / np.sqrt(r), s * np.sqrt(r))]
        unit = SIZE / steps[k]
        for w, h in sizes:
            for i, j in itertools.product(range(f), repeat=2):
                cx, cy = (j + 0.5) / unit, (i + 0.5) / unit
                rows.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return np.clip(np.array(rows, np.float32), 0, 1)


def make_coco_like(root: str, images: int = 64, size: tuple[int, int] = (375, 500), seed: int = 0) -> tuple[str, str]:
    """Writes photo-like JPEGs and an instances.json with 1-8 random boxes per image."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_sample_data import photo_like
    from PIL import Image
    img_dir = os.path.join(root, "images")
    ann_path = os.path.join(root, "instances.json")
    os.makedirs(img_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    h, w = size
    infos, anns = [], []
    for i in range(images):
        name = f"{i:06d}.jpg"
        path = os.path.join(img_dir, name)
        if not os.path.exists(path):
            Image.fromarray(photo_like(rng, h, w, 12.0)).save(path, quality=90)
        infos.append({"id": i + 1, "file_name": name, "width": w, "height": h})
        for _ in range(rng.integers(1, 9)):
            bw, bh = rng.uniform(0.05, 0.6) * w, rng.uniform(0.05, 0.6) * h
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": int(rng.integers(1, 81)),
                         "bbox": [x, y, bw, bh], "iscrowd": 0, "area": bw * bh})
    cats = [{"id": c, "name": f"cat{c}"} for c in range(1, 81)]
    with open(ann_path, "w") as f:
        json.dump({"images": infos, "annotations": anns, "categories": cats}, f)
    return img_dir, ann_path


def ssd_pipeline(lib, root: str, annotations: str, batch: int, threads: int, anchors: np.ndarray, seed: int = 0):
    """The SSD training input pipeline, for penstock or nvidia.dali (`lib`)."""
    fn, types = lib.fn, lib.types

    @lib.pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed)
    def pipe():
        jpegs, boxes, labels = fn.readers.coco(file_root=root, annotations_file=annotations, ltrb=True, ratio=True,
                                               skip_empty=True, random_shuffle=True, name="Reader")
        anchor, shape, boxes, labels = fn.random_bbox_crop(
            boxes, labels, thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
            aspect_ratio=[0.5, 2.0], allow_no_crop=True, num_attempts=1, bbox_layout="xyXY")
        images = fn.decoders.image_slice(jpegs, anchor, shape, output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        flip = fn.random.coin_flip(probability=0.5)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=flip)
        boxes, labels = fn.box_encoder(boxes, labels, anchors=anchors.ravel().tolist(), criteria=0.5, offset=True,
                                       stds=[0.1, 0.1, 0.2, 0.2])
        return images, boxes, labels

    return pipe()


def tiny_detector(num_anchors: int):
    import torch

    class TinySSD(torch.nn.Module):
        """Just enough of a detector to consume the batches: a strided conv stem whose pooled
        features shift a learned per-anchor prediction of [box offsets, class scores]."""

        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 5, stride=4, padding=2), torch.nn.ReLU(),
                                            torch.nn.Conv2d(16, 32, 3, stride=4, padding=1), torch.nn.ReLU(),
                                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
            self.head = torch.nn.Linear(32, 4 + NUM_CLASSES)
            self.per_anchor = torch.nn.Parameter(torch.zeros(num_anchors, 4 + NUM_CLASSES))

        def forward(self, x):
            return self.per_anchor[None] + self.head(self.stem(x))[:, None, :]

    return TinySSD()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root")
    ap.add_argument("--annotations")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import penstock
    from penstock.plugin.pytorch import DALIGenericIterator

    tmp = None
    if not (args.root and args.annotations):
        tmp = tempfile.TemporaryDirectory()
        args.root, args.annotations = make_coco_like(tmp.name, images=4 * args.batch)
    anchors = ssd300_anchors()
    pipe = ssd_pipeline(penstock, args.root, args.annotations, args.batch, args.threads, anchors)
    loader = DALIGenericIterator(pipe, ["images", "boxes", "labels"], reader_name="Reader", auto_reset=True)
    model = tiny_detector(len(anchors))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    def batches():
        while True:  # auto_reset starts the next epoch after each StopIteration
            yield from loader

    start = time.perf_counter()
    for step, data in enumerate(itertools.islice(batches(), args.steps), 1):
        images, boxes, labels = data[0]["images"], data[0]["boxes"], data[0]["labels"].long()
        out = model(images)
        positive = labels > 0
        loss = F.cross_entropy(out[..., 4:].reshape(-1, NUM_CLASSES), labels.reshape(-1))
        if positive.any():
            loss = loss + F.smooth_l1_loss(out[..., :4][positive], boxes[positive])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(json.dumps({"step": step, "images": list(images.shape), "boxes": list(boxes.shape),
                          "positive_anchors": int(positive.sum()), "loss": round(loss.item(), 4)}))
    rate = step * args.batch / (time.perf_counter() - start)
    print(json.dumps({"example": "detection_coco", "steps": step, "img_per_s": round(rate, 1)}))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
