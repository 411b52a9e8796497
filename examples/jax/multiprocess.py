"""JAX multi-process data loading: one process per GPU under ``jax.distributed``, each reading its own
shard with its own pipeline; the per-process batches form one global ``jax.Array`` over all GPUs.

    python examples/jax/multiprocess.py --processes 4 [--data DIR]     # one process per GPU of this host
    python examples/jax/multiprocess.py --processes 2 --cpu            # no GPU: one host device per process

This command starts the processes itself on one host. On many hosts, start one process per GPU
with the launcher's rank and the coordinator's address instead:

    python examples/jax/multiprocess.py --coordinator HOST:PORT --num-processes N --process-id I --local-device K

Process i builds ``readers.file(shard_id=jax.process_index(), num_shards=jax.process_count())`` on
its GPU and a ``DALIGenericIterator``; each batch becomes the process's shard of a global array
through ``jax.make_array_from_single_device_arrays`` (no copy: the shard is the pipeline's buffer),
and a jitted step reduces over the global batch across processes. The reader's label is the
sample's index in the file list, so process 0 can check that every epoch held every sample on one
process only. Process 0 prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

SIZE = 224


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="ImageFolder root (default: a small generated one)")
    ap.add_argument("--processes", type=int, help="start this many processes on this host (one per GPU)")
    ap.add_argument("--cpu", action="store_true", help="host devices instead of GPUs (one per process)")
    ap.add_argument("--batch", type=int, default=64, help="per process")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--coordinator", help="HOST:PORT of process 0 (a process of a job started elsewhere)")
    ap.add_argument("--num-processes", type=int)
    ap.add_argument("--process-id", type=int)
    ap.add_argument("--local-device", type=int, default=0, help="this process's GPU on its host")
    return ap.parse_args(argv)


def sample_folder() -> str:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from make_sample_data import make_dataset
    return make_dataset(os.path.join(tempfile.gettempdir(), "penstock_jax_multiprocess"), classes=4, per_class=40,
                        size=(120, 160))


def launch(args: argparse.Namespace) -> int:
    """Starts ``args.processes`` processes of this script on this host, process i on GPU i."""
    data = args.data or sample_folder()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    if args.cpu:
        env.update(JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    common = ["--data", data, "--batch", str(args.batch), "--threads", str(args.threads), "--epochs",
              str(args.epochs), "--coordinator", f"127.0.0.1:{port}", "--num-processes", str(args.processes)]
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *common, "--process-id", str(i),
                               "--local-device", str(i), *(["--cpu"] if args.cpu else [])], env=env)
             for i in range(args.processes)]
    return max(p.wait() for p in procs)


def worker(args: argparse.Namespace) -> None:
    import jax
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if args.cpu:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(args.coordinator, num_processes=args.num_processes, process_id=args.process_id,
                               local_device_ids=None if args.cpu else [args.local_device])
    from penstock import fn, pipeline_def, types
    from penstock.plugin.jax import DALIGenericIterator, LastBatchPolicy

    devices = jax.devices()  # every process's, in process order: shard k of the batch on device k
    (local,) = jax.local_devices()
    sharding = NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch"))
    root = args.data
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    files = [os.path.join(root, c, f) for c in classes for f in sorted(os.listdir(os.path.join(root, c)))]

    @pipeline_def(batch_size=args.batch, num_threads=args.threads,
                  device_id=None if args.cpu else local.local_hardware_id, seed=jax.process_index())
    def pipe():
        # without labels=, a file's label is its index in `files`
        jpegs, index = fn.readers.file(files=files, shard_id=jax.process_index(), num_shards=jax.process_count(),
                                       random_shuffle=True, pad_last_batch=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu" if args.cpu else "mixed", output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        return images, index if args.cpu else index.gpu()

    iterator = DALIGenericIterator(pipe(), ["images", "index"], reader_name="Reader",
                                   last_batch_policy=LastBatchPolicy.FILL)
    global_batch = args.batch * jax.process_count()
    step = jax.jit(lambda images: images.astype(np.float32).mean())  # a reduction over every process's shard
    zero_copy, checks, steps, mean = True, [], 0, None
    start = time.perf_counter()
    for epoch in range(args.epochs):
        seen = []
        for batch in iterator:
            images = jax.make_array_from_single_device_arrays((global_batch, SIZE, SIZE, 3), sharding,
                                                               [batch["images"]])
            zero_copy &= images.addressable_shards[0].data.unsafe_buffer_pointer() == \
                batch["images"].unsafe_buffer_pointer()
            mean = step(images)
            seen.append(batch["index"])
            steps += 1
        # what every process read this epoch, gathered once at its end: [process][sample]
        mine = np.concatenate([np.asarray(a).reshape(-1) for a in seen])
        per_process = [set(p.tolist()) for p in multihost_utils.process_allgather(mine)]
        union = set().union(*per_process)
        checks.append({"epoch": epoch, "batches": len(seen), "distinct": len(union),
                       "shared_between_processes": sum(map(len, per_process)) - len(union),
                       "ok": union == set(range(len(files))) and sum(map(len, per_process)) == len(union)})
    if mean is not None:
        mean.block_until_ready()
    seconds = time.perf_counter() - start
    everyone_zero_copy = bool(multihost_utils.process_allgather(np.array(zero_copy)).all())
    if jax.process_index() == 0:
        print(json.dumps({"example": "jax_multiprocess", "processes": jax.process_count(), "devices": len(devices),
                          "platform": local.platform, "global_batch": global_batch, "steps": steps,
                          "img_per_s": round(steps * global_batch / seconds, 1), "zero_copy": everyone_zero_copy,
                          "epochs": checks}), flush=True)
    jax.distributed.shutdown()
    if not (everyone_zero_copy and all(c["ok"] for c in checks)):
        raise SystemExit("jax_multiprocess: a shard was copied, or an epoch did not hold every sample on one process")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.processes:
        sys.exit(launch(args))
    if args.coordinator is None or args.num_processes is None or args.process_id is None:
        raise SystemExit("give --processes, or --coordinator, --num-processes and --process-id")
    args.data = args.data or sample_folder()
    worker(args)


if __name__ == "__main__":
    main()
