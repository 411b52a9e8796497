"""A training loop fed by the dynamic mode: ``ndd.readers.File`` and operator calls, in plain Python.

A small CNN learns to tell the classes of an ImageFolder of JPEGs (generated if --data is not
given) apart. Every step reads a batch from the reader, decodes and augments it with dynamic-mode
calls, and hands it to PyTorch. The reader's state is saved with the model's, mid-epoch: the run
is stopped half way and resumed from the checkpoint, and the batches after the resume are the ones
an uninterrupted run reads. (A reader's state is its place in its sample stream; ``next_epoch``
counts an epoch from wherever the reader is, so the resumed loop takes only what was left of the
interrupted epoch.)

    python examples/dynamic/train_loop.py [--data DIR] [--epochs 2] [--batch 8]
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import penstock.experimental.dynamic as ndd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_sample_data import make_dataset  # noqa: E402

SIZE = 48
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def batches(reader: ndd.readers.File, batch_size: int):
    """One epoch of (images, labels) torch tensors."""
    for jpegs, labels in reader.next_epoch(batch_size=batch_size):
        n = jpegs.batch_size
        images = ndd.decoders.image_random_crop(jpegs, random_area=[0.5, 1.0])
        images = ndd.resize(images, size=(SIZE, SIZE))
        images = ndd.crop_mirror_normalize(images, mean=MEAN, std=STD, mirror=ndd.random.coin_flip(batch_size=n),
                                           dtype=ndd.float32, output_layout="CHW")
        yield images.torch(), torch.from_numpy(np.asarray(ndd.as_tensor(labels))).long().view(-1)


def model(classes: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, classes))


def train(root: str, epochs: int, batch_size: int, stop_after: int | None = None, resume: dict | None = None) -> dict:
    """Trains; with ``stop_after`` steps returns a checkpoint (model, optimizer and reader states)."""
    torch.manual_seed(0)
    classes = len([d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))])
    net = model(classes)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=7, enable_checkpointing=True)
    per_epoch = math.ceil(reader.get_metadata()["epoch_size"] / batch_size)
    ndd.random.set_seed(3)
    step, epoch, done, losses, seen = 0, 0, 0, [], []
    if resume is not None:
        net.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        reader.set_state(resume["reader"])
        ndd.random.get_default_rng().set_state(resume["rng"])
        step, epoch, done = resume["step"], resume["epoch"], resume["done"]
    for epoch in range(epoch, epochs):
        for images, labels in itertools.islice(batches(reader, batch_size), per_epoch - done):
            loss = F.cross_entropy(net(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            seen.append(labels.tolist())
            step, done = step + 1, done + 1
            if stop_after is not None and step == stop_after:
                return {"model": net.state_dict(), "optimizer": opt.state_dict(), "reader": str(reader.get_state()),
                        "rng": ndd.random.get_default_rng().get_state(), "step": step, "epoch": epoch,
                        "done": done, "losses": losses, "labels": seen}
        print(f"epoch {epoch}: loss {np.mean(losses[-3:]):.3f}")
        done = 0
    return {"losses": losses, "labels": seen, "steps": step}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="an ImageFolder of JPEGs (default: a generated one)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args(argv)
    root = args.data or make_dataset(os.path.join(tempfile.gettempdir(), "penstock_dynamic_train"),
                                     classes=2, per_class=12, size=(64, 80))
    full = train(root, args.epochs, args.batch)
    half = len(full["losses"]) // 2 + 1  # mid-epoch
    checkpoint = train(root, args.epochs, args.batch, stop_after=half)
    resumed = train(root, args.epochs, args.batch, resume=checkpoint)
    same = resumed["labels"] == full["labels"][half:]
    print(f"{full['steps']} steps; loss {full['losses'][0]:.3f} -> {full['losses'][-1]:.3f}; "
          f"resumed after step {half}: {'the same batches' if same else 'DIFFERENT batches'}")
    return {"steps": full["steps"], "first_loss": full["losses"][0], "last_loss": full["losses"][-1],
            "resumed_same_batches": same}


if __name__ == "__main__":
    main()
