"""The DataLoader baseline of the benchmarks: the same train/val transforms in PyTorch.

Uses torchvision (decode_jpeg + transforms v2) when it imports; otherwise the same steps with
PIL's libjpeg-turbo decode and torch's antialiased resize.
"""
from __future__ import annotations

import math
import os
import random

import numpy as np
import torch
import torch.nn.functional as F

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1) * 255


def _decode(path: str) -> torch.Tensor:
    try:
        from torchvision.io import decode_jpeg, read_file
        return decode_jpeg(read_file(path))  # CHW uint8
    except ImportError:
        from PIL import Image
        with Image.open(path) as im:
            return torch.from_numpy(np.asarray(im.convert("RGB"))).permute(2, 0, 1)


def _random_window(h: int, w: int, rng: random.Random) -> tuple[int, int, int, int]:
    area = h * w
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, h - ch), rng.randint(0, w - cw), ch, cw
    return 0, 0, h, w


def _resize(img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    return F.interpolate(img[None].float(), size=size, mode="bilinear", antialias=True, align_corners=False)[0]


class ImageFolderFiles(torch.utils.data.Dataset):
    def __init__(self, root: str, kind: str):
        classes = sorted(os.listdir(root))
        self.items = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                      for f in sorted(os.listdir(os.path.join(root, c)))]
        self.kind = kind
        self.rng = random.Random(0)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        path, label = self.items[i]
        img = _decode(path)
        if self.kind == "train":
            y, x, h, w = _random_window(img.shape[1], img.shape[2], self.rng)
            img = _resize(img[:, y:y + h, x:x + w], (224, 224))
            if self.rng.random() < 0.5:
                img = img.flip(-1)
        else:
            h, w = img.shape[1:]
            s = 256 / min(h, w)
            img = _resize(img, (round(h * s), round(w * s)))
            top, left = (img.shape[1] - 224) // 2, (img.shape[2] - 224) // 2
            img = img[:, top:top + 224, left:left + 224]
        return (img - MEAN) / STD, label


def make_loader(kind: str, root: str, batch: int, workers: int) -> torch.utils.data.DataLoader:
    torch.set_num_threads(1)
    return torch.utils.data.DataLoader(ImageFolderFiles(root, kind), batch_size=batch, shuffle=(kind == "train"),
                                       num_workers=workers, drop_last=True, persistent_workers=True)
