"""Trains a small CNN for a few steps on an ImageFolder of JPEGs, fed by torch's DataLoader or by penstock.

Both loaders give the same kind of batches (float32 CHW images, resized to SIZE x SIZE, randomly
mirrored and normalized with the ImageNet statistics; int64 labels) to the same training loop.
Switching a script from one to the other changes the loader's construction and one line
unpacking its batches:

    loader = torch_loader(root, batch_size, workers)        # images, labels = batch
    loader = penstock_loader(root, batch_size, workers)     # images, labels = batch[0]["data"], batch[0]["label"]...

    python examples/pytorch/train_classifier.py [--data DIR] [--steps 20] [--loader torch|penstock|both]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

SIZE = 64
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
IMAGE_OPS = ("decoders", "resize", "crop_mirror_normalize")


# ---- torch.utils.data.DataLoader with PIL + numpy transforms ------------------------------------
class JpegFolder(torch.utils.data.Dataset):
    """ImageFolder layout: one sub-directory per class, labels in sorted directory order."""

    def __init__(self, root: str):
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.items = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                      for f in sorted(os.listdir(os.path.join(root, c)))]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.items[i]
        with Image.open(path) as im:
            img = np.asarray(im.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR), np.float32)
        if np.random.random() < 0.5:
            img = img[:, ::-1]
        img = (img - np.float32(MEAN)) / np.float32(STD)
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), label


def torch_loader(root: str, batch_size: int, workers: int) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(JpegFolder(root), batch_size=batch_size, shuffle=True, num_workers=workers,
                                       persistent_workers=workers > 0)


# ---- penstock ------------------------------------------------------------------------------------
def penstock_loader(root: str, batch_size: int, workers: int, device: str = "cpu"):
    from penstock import fn, pipeline_def, types
    from penstock.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    on_gpu = device == "cuda"

    @pipeline_def(batch_size=batch_size, num_threads=max(1, workers), device_id=0 if on_gpu else None, seed=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        # on the GPU: decoded by the GPU and the host together, then resized and normalized on the GPU
        images = fn.decoders.image(jpegs, device="mixed" if on_gpu else "cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip())
        return images, labels.gpu() if on_gpu else labels

    return DALIClassificationIterator(pipe(), reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                                      auto_reset=True)


def make_loader(kind: str, root: str, batch_size: int, workers: int, device: str = "cpu"):
    if kind == "torch":
        return torch_loader(root, batch_size, workers)
    return penstock_loader(root, batch_size, workers, device)


def unpack(kind: str, batch, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(images, labels) of a batch on ``device``: DataLoader gives a host pair, penstock a dict per
    pipeline already on the pipeline's device."""
    if kind == "torch":
        images, labels = batch
        return images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
    return batch[0]["data"], batch[0]["label"].squeeze(-1).long()


# ---- the shared training loop --------------------------------------------------------------------
class SmallCNN(torch.nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.head = torch.nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


def train(kind: str, root: str, steps: int, batch_size: int, workers: int, device: str = "cpu") -> dict:
    torch.manual_seed(0)
    num_classes = sum(os.path.isdir(os.path.join(root, d)) for d in os.listdir(root))
    model = SmallCNN(num_classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses: list[float] = []
    start = time.perf_counter()
    loader = make_loader(kind, root, batch_size, workers, device)
    while len(losses) < steps:
        for batch in loader:
            images, labels = unpack(kind, batch, device)
            loss = F.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    return {"loader": kind, "device": device, "steps": steps, "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
            "seconds": round(time.perf_counter() - start, 2)}


def missing_image_ops() -> list[str]:
    from penstock import fn
    return [name for name in IMAGE_OPS if not hasattr(fn, name)]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="ImageFolder root (default: a generated one in a temporary directory)")
    ap.add_argument("--loader", choices=("torch", "penstock", "both"), default="both")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: penstock decodes and augments on the GPU; both train there")
    args = ap.parse_args(argv)
    kinds = ["torch", "penstock"] if args.loader == "both" else [args.loader]
    if "penstock" in kinds and missing_image_ops():
        sys.exit(f"penstock lacks the image operators fn.{', fn.'.join(missing_image_ops())}; "
                 "this example needs them")
    root = args.data
    if root is None:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        from make_sample_data import make_dataset
        root = make_dataset(os.path.join(tempfile.gettempdir(), "penstock_train_classifier"), classes=4,
                            per_class=12, size=(96, 128))
    results = [train(kind, root, args.steps, args.batch_size, args.workers, args.device) for kind in kinds]
    for r in results:
        print(json.dumps(r))
    return results


if __name__ == "__main__":
    main()
