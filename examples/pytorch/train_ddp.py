"""Data-parallel ResNet training with one process per GPU (torchrun, DistributedDataParallel), fed by
penstock, NVIDIA DALI 2.4 or a torch DataLoader.

    torchrun --nproc_per_node=4 examples/pytorch/train_ddp.py --data DIR                    # ResNet-50, 224 px
    torchrun --nproc_per_node=4 examples/pytorch/train_ddp.py --data DIR --arch resnet18 --size 176
    torchrun --nproc_per_node=4 examples/pytorch/train_ddp.py --data DIR --loader dali      # NVIDIA DALI 2.4
    torchrun --nproc_per_node=4 examples/pytorch/train_ddp.py --data DIR --loader dataloader
    torchrun --nproc_per_node=4 examples/pytorch/train_ddp.py --synthetic                    # the model's ceiling
    torchrun --nproc_per_node=2 examples/pytorch/train_ddp.py --device cpu --arch tiny --size 32   # CPU, gloo

Many hosts: the same command on every host, with torchrun's --nnodes, --node_rank and rendezvous
options. DIR is an ImageFolder (one sub-folder per class); without --data a small one is made.

Every rank reads its own shard: one pipeline per process, ``readers.file(shard_id=RANK,
num_shards=WORLD_SIZE, pad_last_batch=True)`` on GPU ``LOCAL_RANK`` (mixed decoders: random-crop
decoding, resize, crop-mirror-normalize to HWC float, which as NCHW is channels_last without a
copy), through ``DALIClassificationIterator(reader_name="Reader", last_batch_policy=...)``. The
shards, the epoch's length and checkpoints follow the global rank and world size only; the local
rank only picks the GPU. The DataLoader reads the same files with torchvision's transforms and a
``DistributedSampler``. Training: bf16 autocast, channels_last, SGD with momentum; the loss is
summed over the batch's samples and divided by the full batch size, so a short last batch weighs
what its samples weigh.

The reader's label is the sample's index in the file list (``files=`` without ``labels=``); the
loop looks its class up. At the end of every epoch the ranks gather the indices they trained on
and check that the shards were disjoint, that every rank had the same len() and ran that many
batches (so none waits at the all-reduce for a batch that never comes) and, with the PARTIAL
policy, that the epoch held every sample exactly once.

Checkpoints (penstock): ``--checkpoint-dir D --save-at S`` saves the model, the optimizer and every
rank's pipeline checkpoint after S steps, then stops (an interruption); ``--resume D`` continues on
any number of ranks: on the same number each pipeline takes its own checkpoint, on another each
takes the list of all of them, and the interrupted epoch's remaining samples are split over the
new ranks, each seen once.

Output, from rank 0: JSON lines, one per epoch's check, one per rank and one aggregate (img/s
over the timed steps, after --warmup steps).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import tempfile
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
# Before any process group exists: this module's functions take the world group as their default
# group= argument when first imported (DistributedDataParallel imports it), and would hold it past
# destroy_process_group() (main() says why that matters).
import torch.distributed.nn  # noqa: F401
import torch.nn.functional as F

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
SIZES = {"resnet50": 224, "resnet18": 176, "tiny": 32}
POLICIES = ("partial", "drop", "fill")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="ImageFolder root (default: a small generated one)")
    ap.add_argument("--loader", choices=("penstock", "dali", "dataloader"), default="penstock")
    ap.add_argument("--synthetic", action="store_true", help="one fixed batch on the device: the model's ceiling")
    ap.add_argument("--arch", choices=tuple(SIZES), default="resnet50", help="tiny: a small CNN (CPU runs)")
    ap.add_argument("--size", type=int, help="training resolution (default: 224, 176 for resnet18, 32 for tiny)")
    ap.add_argument("--batch", type=int, default=256, help="per rank")
    ap.add_argument("--threads", type=int, default=None,
                    help="pipeline threads or DataLoader workers per rank (default: this rank's share of the "
                         "host's cores, the cores over LOCAL_WORLD_SIZE)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps in all (0: run the epochs)")
    ap.add_argument("--warmup", type=int, default=5, help="steps before the clock starts")
    ap.add_argument("--last-batch", choices=POLICIES, default="partial")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoint-dir", help="where --save-at saves")
    ap.add_argument("--save-at", type=int, default=0, help="save after this many steps, then stop")
    ap.add_argument("--resume", help="a --checkpoint-dir to continue from")
    args = ap.parse_args(argv)
    args.size = args.size or SIZES[args.arch]
    if args.threads is None:
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        args.threads = max(1, len(os.sched_getaffinity(0)) // local_ranks)
    if (args.save_at or args.resume) and (args.loader != "penstock" or args.synthetic):
        ap.error("--save-at and --resume need --loader penstock (pipeline checkpoints)")
    if args.save_at and not args.checkpoint_dir:
        ap.error("--save-at needs --checkpoint-dir")
    return args


# ---- the data ------------------------------------------------------------------------------------
def image_folder(root: str) -> tuple[list[str], list[int]]:
    """Every file of an ImageFolder, in a fixed order, with its class (sub-folders in sorted order)."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    pairs = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
             for f in sorted(os.listdir(os.path.join(root, c)))]
    return [p for p, _ in pairs], [k for _, k in pairs]


def sample_folder(local_rank: int) -> str:
    """A small generated ImageFolder, written by each host's first rank while the others wait."""
    root = os.path.join(tempfile.gettempdir(), "penstock_train_ddp")
    if local_rank == 0:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        from make_sample_data import make_dataset
        make_dataset(root, classes=4, per_class=32, size=(120, 160))
    dist.barrier()
    return root


class PipelineFeed:
    """penstock's or DALI's pipeline of this rank, through its DALIClassificationIterator."""

    def __init__(self, lib_name: str, files: list[str], args: argparse.Namespace, rank: int, world: int,
                 local_rank: int, checkpoint=None):
        lib = importlib.import_module("penstock" if lib_name == "penstock" else "nvidia.dali")
        plugin = importlib.import_module(lib.__name__ + ".plugin.pytorch")
        fn, types = lib.fn, lib.types
        gpu = args.device == "cuda"
        checkpointing = {"enable_checkpointing": True, "checkpoint": checkpoint} \
            if args.checkpoint_dir or args.resume else {}

        @lib.pipeline_def(batch_size=args.batch, num_threads=args.threads, device_id=local_rank if gpu else None,
                          seed=args.seed + rank, **checkpointing)
        def pipe():
            # without labels=, a file's label is its index in `files`
            jpegs, index = fn.readers.file(files=files, shard_id=rank, num_shards=world, random_shuffle=True,
                                           pad_last_batch=True, name="Reader")
            images = fn.decoders.image_random_crop(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB,
                                                   random_area=[0.08, 1.0], random_aspect_ratio=[0.75, 4 / 3],
                                                   num_attempts=10)
            images = fn.resize(images, resize_x=args.size, resize_y=args.size)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", mean=MEAN, std=STD,
                                              mirror=fn.random.coin_flip())
            return images, index.gpu() if gpu else index

        policy = getattr(plugin.LastBatchPolicy, args.last_batch.upper())
        self.iterator = plugin.DALIClassificationIterator(pipe(), reader_name="Reader", last_batch_policy=policy,
                                                          auto_reset=True)

    def __len__(self) -> int:
        return len(self.iterator)

    def epoch(self, epoch: int):
        for out in self.iterator:
            yield out[0]["data"].permute(0, 3, 1, 2), out[0]["label"].view(-1).long()

    def checkpoint(self) -> str:
        return self.iterator.checkpoints()[0].decode()


class DataLoaderFeed:
    """torchvision's ImageNet training transforms in a DataLoader over a DistributedSampler."""

    def __init__(self, files: list[str], args: argparse.Namespace, rank: int, world: int):
        drop = args.last_batch == "drop"
        dataset = IndexedImages(files, args.size)
        self.sampler = torch.utils.data.distributed.DistributedSampler(dataset, world, rank, shuffle=True,
                                                                       seed=args.seed, drop_last=drop)
        self.loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, sampler=self.sampler,
                                                  num_workers=args.threads, pin_memory=args.device == "cuda",
                                                  drop_last=drop, persistent_workers=args.threads > 0)
        self.device = args.device

    def __len__(self) -> int:
        return len(self.loader)

    def epoch(self, epoch: int):
        self.sampler.set_epoch(epoch)
        for images, index in self.loader:
            images = images.to(self.device, non_blocking=True).contiguous(memory_format=torch.channels_last)
            yield images, index.to(self.device, non_blocking=True)


class IndexedImages(torch.utils.data.Dataset):
    """The files through RandomResizedCrop, RandomHorizontalFlip, ToTensor and Normalize; the target is
    the sample's index, as the pipelines give it."""

    def __init__(self, files: list[str], size: int):
        import torchvision.transforms as T
        self.files = files
        self.transform = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(),
                                    T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])])

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        from PIL import Image
        with Image.open(self.files[i]) as im:
            return self.transform(im.convert("RGB")), i


class SyntheticFeed:
    """One fixed batch already on the device, ``steps`` times."""

    def __init__(self, args: argparse.Namespace, num_samples: int):
        self.images = torch.randn(args.batch, 3, args.size, args.size, device=args.device) \
            .contiguous(memory_format=torch.channels_last)
        self.index = torch.randint(0, num_samples, (args.batch,), device=args.device)
        self.steps = args.steps or 100

    def __len__(self) -> int:
        return self.steps

    def epoch(self, epoch: int):
        for _ in range(self.steps):
            yield self.images, self.index


# ---- the model -----------------------------------------------------------------------------------
def make_model(arch: str, num_classes: int, device: str) -> torch.nn.Module:
    if arch == "tiny":
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.BatchNorm2d(16),
                                    torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                    torch.nn.Linear(16, num_classes))
    else:
        import torchvision
        model = getattr(torchvision.models, arch)(num_classes=num_classes)
    return model.to(device, memory_format=torch.channels_last)


# ---- checks over the ranks -----------------------------------------------------------------------
def check_epoch(epoch: int, gathered: list[dict], num_samples: int, complete: bool, partial: bool,
                padding_may_repeat: int, seen_before: set[int]) -> dict:
    """What every rank trained on in one epoch against the data-parallel contract; raises
    SystemExit naming what broke."""
    lens = sorted({g["len"] for g in gathered})
    batches = [g["batches"] for g in gathered]
    per_rank = [set(g["indices"]) for g in gathered]
    union = set().union(*per_rank)
    shared = sum(len(s) for s in per_rank) - len(union)  # samples that more than one rank trained on
    result = {"check": "epoch", "epoch": epoch, "complete": complete, "len": lens, "batches": batches,
              # per rank: which samples it trained on (CRC-32 of their sorted indices as int64) and how many
              "rank_samples": [[samples_digest(s), len(g["indices"])] for s, g in zip(per_rank, gathered)],
              "samples": sum(len(g["indices"]) for g in gathered), "distinct": len(union),
              "shared_between_ranks": shared, "seen_before_resume": len(seen_before)}
    failures = []
    if len(lens) != 1:
        failures.append("ranks disagree on len()")
    if len(set(batches)) != 1 or (complete and batches[0] != lens[0]):
        failures.append("ranks ran different numbers of batches, or not len() of them")
    if shared > padding_may_repeat:
        failures.append(f"{shared} samples were trained on by more than one rank")
    if union & seen_before:
        failures.append("samples trained on before the checkpoint came again in the resumed epoch")
    if complete and partial:
        if result["samples"] != len(union) or union | seen_before != set(range(num_samples)):
            failures.append("the epoch did not hold every sample exactly once")
    result["ok"] = not failures
    if failures:
        print(json.dumps({**result, "failures": failures}), flush=True)
        raise SystemExit("train_ddp: " + "; ".join(failures))
    return result


def samples_digest(indices: set[int]) -> int:
    return zlib.crc32(np.array(sorted(indices), np.int64).tobytes())


def gather(value):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


# ---- training ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    train(args, rank, world, local_rank)
    # The group goes while Python still runs: the model that train() wrapped held it, and once nothing
    # does, destroying it joins gloo's worker threads. A worker left running drops its last
    # collective's tensors whenever it gets to it, and doing that during the interpreter's exit takes
    # the GIL there and aborts the process (pytorch/pytorch#190489).
    dist.destroy_process_group()


def train(args: argparse.Namespace, rank: int, world: int, local_rank: int) -> None:
    """This rank's model, feed and epochs; the epochs' checks and the img/s printed from rank 0."""
    cuda = args.device == "cuda"
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    files, classes = image_folder(args.data or sample_folder(local_rank))
    class_of = torch.tensor(classes, device=args.device)
    num_classes = max(classes) + 1

    model = make_model(args.arch, num_classes, args.device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    start_epoch, step, checkpoint, seen_before = 0, 0, None, set()
    if args.resume:
        with open(os.path.join(args.resume, "loader.json")) as f:
            saved = json.load(f)
        state = torch.load(os.path.join(args.resume, "model.pt"), map_location=args.device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch, step, seen_before = saved["epoch"], saved["step"], set(saved["seen"])
        # the same ranks: each its own checkpoint; another number: all of them (elastic restore)
        checkpoint = saved["checkpoints"][rank] if saved["world_size"] == world else saved["checkpoints"]

    if args.synthetic:
        feed = SyntheticFeed(args, len(files))
    elif args.loader == "dataloader":
        feed = DataLoaderFeed(files, args, rank, world)
    else:
        feed = PipelineFeed(args.loader, files, args, rank, world, local_rank, checkpoint)
    # DistributedSampler pads its shards by repeating samples of other ranks
    padding_may_repeat = (-len(files)) % world if args.loader == "dataloader" else 0

    def train_step(images: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        with torch.autocast(args.device, dtype=torch.bfloat16):
            logits = ddp(images)
        loss = F.cross_entropy(logits.float(), target, reduction="sum") / args.batch
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    steps_run, timed_samples, started, loss, stop = 0, 0, None, None, False
    for epoch in range(start_epoch, args.epochs):
        indices, batches, length = [], 0, len(feed)  # len() before the epoch: the iterator resets at its end
        for images, index in feed.epoch(epoch):
            if steps_run == args.warmup:
                sync()
                started, timed_samples = time.perf_counter(), 0
            loss = train_step(images, class_of[index]).detach()
            indices.append(index)
            batches, steps_run, step = batches + 1, steps_run + 1, step + 1
            timed_samples += len(index)
            if args.save_at and step == args.save_at:
                save(args.checkpoint_dir, feed, model, optimizer, world, epoch, step, indices, seen_before, rank)
                stop = True
                break
            if args.steps and steps_run == args.steps:
                stop = True
                break
        if not args.synthetic:
            mine = torch.cat(indices).tolist() if indices else []
            gathered = gather({"len": length, "batches": batches, "indices": mine})
            result = check_epoch(epoch, gathered, len(files), not stop, args.last_batch == "partial",
                                 padding_may_repeat, seen_before)
            if rank == 0:
                print(json.dumps(result), flush=True)
        seen_before = set()
        if stop:
            break
    sync()
    seconds = time.perf_counter() - started if started is not None else 0.0
    report(args, rank, world, local_rank, steps_run, timed_samples, seconds, loss)


def save(directory: str, feed: PipelineFeed, model, optimizer, world: int, epoch: int, step: int,
         indices: list, seen_before: set[int], rank: int) -> None:
    """Every rank's pipeline checkpoint, with the samples the interrupted epoch already gave."""
    mine = torch.cat(indices).tolist() if indices else []
    gathered = gather({"checkpoint": feed.checkpoint(), "seen": mine})
    if rank == 0:
        os.makedirs(directory, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   os.path.join(directory, "model.pt"))
        seen = sorted(seen_before.union(*(g["seen"] for g in gathered)))
        with open(os.path.join(directory, "loader.json"), "w") as f:
            json.dump({"world_size": world, "epoch": epoch, "step": step, "seen": seen,
                       "checkpoints": [g["checkpoint"] for g in gathered]}, f)
    dist.barrier()


def report(args: argparse.Namespace, rank: int, world: int, local_rank: int, steps: int, samples: int,
           seconds: float, loss) -> None:
    """Per rank and aggregate training img/s over the timed steps, from rank 0."""
    mine = {"rank": rank, "local_rank": local_rank, "host": socket.gethostname(), "steps": steps,
            "timed_samples": samples, "seconds": round(seconds, 3),
            "img_per_s": round(samples / seconds, 1) if seconds else None}
    ranks = gather(mine)
    if rank != 0:
        return
    for r in ranks:
        print(json.dumps({"example": "train_ddp", **r}), flush=True)
    slowest = max(r["seconds"] for r in ranks)
    gpu = torch.cuda.get_device_name(local_rank) if args.device == "cuda" else None
    print(json.dumps({"example": "train_ddp", "aggregate": True, "loader": "synthetic" if args.synthetic else
                      args.loader, "arch": args.arch, "size": args.size, "batch": args.batch, "world_size": world,
                      "hosts": len({r["host"] for r in ranks}), "threads": args.threads, "device": args.device,
                      "gpu": gpu, "last_batch": args.last_batch, "steps": steps,
                      "img_per_s": round(sum(r["timed_samples"] for r in ranks) / slowest, 1) if slowest else None,
                      "loss": None if loss is None else round(loss.item(), 4)}), flush=True)


if __name__ == "__main__":
    main()
