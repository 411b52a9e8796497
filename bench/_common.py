"""What the benchmarks share: systems in separate processes, alternating rounds, timing with CPU
accounting, medians, one JSON line per result, GPU memory and the card's name.

The method (design §4): every system runs in a process of its own (its memory and threads are its
own), the systems take turns round after round (drift of clocks and of other load on the machine
hits all of them alike), and a result is the median over rounds.
"""
from __future__ import annotations

import argparse
import ast
import functools
import importlib
import importlib.util
import json
import numbers
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")

IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]

# The library behind each system name that follows DALI's API.
LIBRARIES = {"penstock": "penstock", "dali": "nvidia.dali"}

K = TypeVar("K", bound=Hashable)


# ---- output -----------------------------------------------------------------------------------

def emit(record: dict) -> None:
    """One result: a JSON object on a line of its own, flushed (a long sweep shows its progress)."""
    print(json.dumps(record), flush=True)


def median(runs: Sequence[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def ratios(medians: dict[str, float], subject: str = "penstock") -> dict[str, float]:
    """``subject``'s value over each other system's: {"penstock_vs_dali": 1.23, ...}."""
    return {f"{subject}_vs_{s}": round(medians[subject] / v, 2) for s, v in medians.items() if s != subject and v}


def summary(results: Sequence[dict]) -> dict:
    """The rounds of one system and case in one record: the median of every number, the maximum
    of peaks (``peak_*``), each round's rate (``<rate>_rounds``, for ``*_per_s``: the spread between
    rounds says which differences a run can tell apart), each round's value of what is not a number
    (as it is, with one round), and how many rounds."""
    out: dict[str, Any] = {}
    for key in results[0]:
        values = [r.get(key) for r in results]
        if None in values:  # not measured here (GPU memory on a CPU run), or not in every round
            out[key] = None
            continue
        if not all(isinstance(v, numbers.Real) for v in values):  # a table (where a thread's GIL time went)
            out[key] = values if len(values) > 1 else values[0]
            continue
        value = max(values) if key.startswith("peak_") else statistics.median(values)
        out[key] = round(value, 1 if key.endswith("_per_s") else 3)
        if key.endswith("_per_s") and len(values) > 1:
            out[f"{key}_rounds"] = [round(v, 1) for v in values]
    out["rounds"] = len(results)
    return out


def report(bench: str, runs: dict[str, list[dict]], target: float | dict | None = None,
           rate_key: str = "img_per_s", **labels: Any) -> dict[str, float]:
    """One line per system (the medians over its rounds of every measured number; the maximum of
    peaks, ``peak_*``), then the ratios of penstock's rate (``rate_key``) over the others' with
    ``target`` (when there are others); returns the median rate per system."""
    rates = {}
    for system, results in runs.items():
        emit({"bench": bench, **labels, "system": system, **summary(results)})
        rates[system] = statistics.median(r[rate_key] for r in results)
    if "penstock" in rates and len(rates) > 1:
        line = {"bench": bench, **labels, "ratios": ratios(rates)}
        competitors = [v for s, v in rates.items() if not s.startswith("penstock")]
        if len(competitors) > 1:
            line["penstock_vs_best"] = round(rates["penstock"] / max(competitors), 2)
        emit(line if target is None else {**line, "target": target})
    return rates


# ---- systems ----------------------------------------------------------------------------------

def module_exists(name: str) -> bool:
    """Whether ``name`` (dotted) can be imported here, without importing it (only its parents)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package is missing
        return False


def dali_available(plugin: str | None = None) -> bool:
    """Whether real NVIDIA DALI (and its framework plugin, when named) imports in this Python."""
    try:
        importlib.import_module("nvidia.dali" + (f".plugin.{plugin}" if plugin else ""))
        return True
    except ImportError:
        return False


def with_dali(systems: list[str], plugin: str | None = None, at: int | None = None) -> list[str]:
    """``systems`` with "dali" inserted (at index ``at``, else last) when DALI imports here."""
    if not dali_available(plugin):
        return list(systems)
    out = list(systems)
    out.insert(len(out) if at is None else at, "dali")
    return out


def library(system: str, plugin: str | None = None) -> Any:
    """The module of a DALI-API system ("penstock", "dali"), or its framework plugin when named."""
    base = LIBRARIES[system]
    return importlib.import_module(f"{base}.plugin.{plugin}" if plugin else base)


def own_path(system: str, env: dict) -> dict | None:
    """The environment of a worker running ``system`` (``env`` on top of this process's): a system other
    than DALI's runs without the folders of ``PYTHONPATH`` that hold DALI (a site folder staged for it,
    as ``dali-on-device.sh`` does, holds its dependencies too: optree, nvtx, gast, six ...), unless
    nvImageCodec, which imports here, would not import there. A user of one library has none of the
    other's folder on the path; with DALI's on it, penstock's ResNet-18 trained 4-9% slower in both calls
    that measured it (an H100, 2026-12-06; the cause not found: penstock imports nothing from there). A
    ``PYTHONPATH`` that ``env`` sets stays as it is. None: this process's environment."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    own = [e for e in entries if not (e and os.path.isdir(os.path.join(e, "nvidia", "dali")))]
    if system.partition(":")[0].startswith("dali") or "PYTHONPATH" in env or len(own) == len(entries):
        return env or None
    path = {**env, "PYTHONPATH": os.pathsep.join(own)}
    # penstock's GPU decoding must not go with DALI's folder
    if module_exists("nvidia.nvimgcodec") and not _nvimgcodec_imports(path["PYTHONPATH"]):
        return env or None
    return path


@functools.lru_cache(maxsize=None)
def _nvimgcodec_imports(python_path: str) -> bool:
    """Whether nvImageCodec imports in a Python with ``python_path`` (asked once per path: a sweep
    starts hundreds of workers)."""
    found = subprocess.run([sys.executable, "-c", "import importlib.util as u, sys; "
                            "sys.exit(u.find_spec('nvidia.nvimgcodec') is None)"],
                           env={**os.environ, "PYTHONPATH": python_path}, capture_output=True)
    return found.returncode == 0


def thread_stats() -> dict[str, tuple[float, int]]:
    """Per group of this process's threads (Linux: /proc), a group being the threads named alike but
    for a trailing ``_<n>`` (a pool's workers): the CPU seconds they used, and how many times they
    went off the CPU to wait (voluntary context switches: for a lock, the GIL, the GPU, I/O). Python's
    threads by their names; native threads by the names the OS knows them by: the engine's
    (``penstock-*``), torch's autograd engine (``pt_autograd``), and the libraries' unnamed ones
    under the process's own name."""
    groups: dict[str, tuple[float, int]] = {}

    def add(name: str, task: int) -> None:
        stats = _task_stats(task)
        if stats is not None:
            name = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
            cpu, switches = groups.get(name, (0.0, 0))
            groups[name] = (cpu + stats[0], switches + stats[1])
    python_ids = set()
    for t in threading.enumerate():
        python_ids.add(t.native_id)
        add(t.name, t.native_id)
    try:
        tasks = [int(task) for task in os.listdir("/proc/self/task")]
    except OSError:  # not Linux
        return groups
    for task in set(tasks) - python_ids:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                name = f.read().strip()
        except OSError:  # the thread just ended
            continue
        add(name, task)
    return groups


def thread_stats_per_batch(before: dict[str, tuple[float, int]], batches: int) -> dict[str, float]:
    """Since ``before`` (a ``thread_stats()``), per batch and by thread group: CPU ms
    (``thread_ms_per_batch:NAME``) and waits (``thread_waits_per_batch:NAME``), groups that used
    none left out. A loader's threads take CPU from a training loop's threads or keep them waiting
    (the GIL, the CUDA driver's locks)."""
    out = {}
    for name, (cpu, switches) in thread_stats().items():
        cpu_before, switches_before = before.get(name, (0.0, 0))
        if cpu > cpu_before:
            out[f"thread_ms_per_batch:{name}"] = round(1e3 * (cpu - cpu_before) / batches, 3)
        if switches > switches_before:
            out[f"thread_waits_per_batch:{name}"] = round((switches - switches_before) / batches, 2)
    return out


def _task_stats(task: int | None) -> tuple[float, int] | None:
    """A thread's user and system CPU seconds and its voluntary context switches (None: not Linux,
    or the thread ended)."""
    try:
        with open(f"/proc/self/task/{task}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/self/task/{task}/status") as f:
            switches = next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
    except (OSError, TypeError, StopIteration):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), switches


# ---- processes and rounds ---------------------------------------------------------------------

def bench_parser(doc: str, *, batches: int | None = None, rounds: int | None = 3, worker: Sequence[str] = (),
                 dataset: dict | None = None) -> argparse.ArgumentParser:
    """A benchmark's argument parser with the options they share: --batches (timed per process,
    when given a default), --rounds, the hidden --worker by which a benchmark starts itself in a
    process of its own (``worker`` names its arguments), and, given ``dataset`` (the arguments of
    photos.add_arguments), the photo set's options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if dataset is not None:
        import photos
        photos.add_arguments(ap, **dataset)
    if batches is not None:
        ap.add_argument("--batches", type=int, default=batches, help="timed batches per process")
    ap.add_argument("--rounds", type=int, default=rounds, help="alternating rounds; medians are reported")
    if worker:
        ap.add_argument("--worker", nargs=len(worker), metavar=tuple(worker), help=argparse.SUPPRESS)
    return ap


def parsed(ap: argparse.ArgumentParser, worker: Callable[..., dict]) -> argparse.Namespace | None:
    """The arguments; or, in a benchmark's worker process (--worker given), None after running
    ``worker(*worker_arguments, args)`` and printing its result."""
    args = ap.parse_args()
    if getattr(args, "worker", None):
        emit(worker(*args.worker, args))
        return None
    return args


def run_worker(script: str, args: Sequence[str], env: dict | None = None) -> dict:
    """Runs ``python script *args`` in a fresh process; returns the JSON object of its last line."""
    return run_workers(script, [args], env)[0]


def run_workers(script: str, arg_lists: Sequence[Sequence[str]], env: dict | None = None) -> list[dict]:
    """``run_worker`` for several processes running at once (one per GPU): their JSON objects, in order."""
    procs = [subprocess.Popen([sys.executable, script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=None if env is None else {**os.environ, **env})
             for args in arg_lists]
    outputs = [p.communicate() for p in procs]  # read while they run: a full pipe would stall them
    for p, args, (_, err) in zip(procs, arg_lists, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(script)} {' '.join(args)} failed (exit code {p.returncode}):\n"
                               f"{_stderr_excerpt(err)}")
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def _stderr_excerpt(err: str, head: int = 4000, tail: int = 3000) -> str:
    """A failed worker's standard error: its first traceback (where an asynchronous error such as a
    GPU fault first surfaced; what follows is often the same error repeated by every later call)
    and its end."""
    first = err.find("Traceback (most recent call last)")
    start = max(first, 0)
    if len(err) - start <= head + tail:
        return err[start:]
    return f"{err[start:start + head]}\n[... {len(err) - start - head - tail} characters ...]\n{err[-tail:]}"


def alternating_rounds(rounds: int, jobs: Sequence[K], run: Callable[[K], dict]) -> dict[K, list[dict]]:
    """``run(job)`` for every job, round after round (each round runs every job once, in order)."""
    results: dict[K, list[dict]] = {job: [] for job in jobs}
    for _ in range(rounds):
        for job in jobs:
            results[job].append(run(job))
    return results


# ---- variants: penstock with settings, a system of its own in the alternating rounds -----------

def add_variant_option(ap: argparse.ArgumentParser, what: str) -> None:
    """--variant NAME SETTING...: one more ``what`` (feed, system), penstock:NAME, penstock with
    SETTINGs, each an environment variable (ENV=VALUE) or an argument of the mixed decoder
    (decoder.ARG=VALUE, VALUE a Python literal); and the hidden option that hands the decoder's
    arguments to the worker."""
    ap.add_argument("--variant", nargs="+", action="append", default=[], metavar="NAME SETTING",
                    help=f"one more {what}, penstock:NAME, with SETTINGs: ENV=VALUE or decoder.ARG=VALUE (repeatable)")
    ap.add_argument("--decoder-args", default=None, help=argparse.SUPPRESS)


def variant(spec: Sequence[str]) -> tuple[str, tuple[dict, dict]]:
    """A --variant's NAME and its settings: (environment, mixed decoder arguments)."""
    name, *settings = spec
    if not settings or not name or ":" in name or "," in name:
        raise SystemExit(f"--variant {' '.join(spec)}: expected a NAME (no ':' or ',') and settings")
    env, decoder_args = {}, {}
    for setting in settings:
        key, eq, value = setting.partition("=")
        if not eq or not key:
            raise SystemExit(f"--variant {name}: {setting!r} is not KEY=VALUE")
        if key.startswith("decoder."):
            try:
                decoder_args[key[len("decoder."):]] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise SystemExit(f"--variant {name}: {setting!r}: the value is not a Python literal") from None
        else:
            env[key] = value
    return name, (env, decoder_args)


def parsed_variants(args: argparse.Namespace) -> dict[str, tuple[dict, dict]]:
    """The --variants by NAME; a NAME given twice is refused."""
    variants: dict[str, tuple[dict, dict]] = {}
    for spec in args.variant:
        name, settings = variant(spec)
        if name in variants:
            raise SystemExit(f"--variant {name}: given twice")
        variants[name] = settings
    return variants


def variant_of(variants: dict[str, tuple[dict, dict]], system: str) -> tuple[dict, dict]:
    """A system's (environment, mixed decoder arguments): a variant's, penstock:NAME; none otherwise."""
    return variants[system.partition(":")[2]] if ":" in system else ({}, {})


def decoder_args_option(decoder_args: dict) -> list[str]:
    """The worker's arguments that hand a variant's decoder arguments over."""
    return ["--decoder-args", json.dumps(decoder_args)] if decoder_args else []


def variant_decoder_args(args: argparse.Namespace) -> dict | None:
    """In a worker: the mixed decoder's arguments its variant gives (None: the defaults)."""
    return json.loads(args.decoder_args) if args.decoder_args else None


# ---- timing and CPU accounting ----------------------------------------------------------------

def cpu_seconds() -> float:
    """CPU time of this process and of its live child processes (DataLoader workers, decoder or
    source workers): what the system costs the host. Children that have exited count through
    RUSAGE_CHILDREN only once waited for, so live ones are read from /proc."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                children = f.read().split()
        except OSError:
            continue
        for pid in children:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
    return total


def peak_rss_mb() -> float:
    """Peak resident memory of this process plus the largest of its waited-for children (MB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + children) / 1024, 1)


@dataclass
class Timing:
    steps: int
    seconds: float
    cpu_seconds: float  # this process and its children, over the same steps
    items_per_step: int

    @property
    def items_per_s(self) -> float:
        return self.steps * self.items_per_step / self.seconds

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / self.steps

    @property
    def cpu_ms_per_item(self) -> float:
        return 1000 * self.cpu_seconds / (self.steps * self.items_per_step)

    @property
    def cores_busy(self) -> float:
        """Host cores this process and its children kept busy on average."""
        return self.cpu_seconds / self.seconds

    def rates(self) -> dict:
        """What a worker reports of it: images per second and host CPU milliseconds per image."""
        return {"img_per_s": round(self.items_per_s, 1), "host_cpu_ms_per_img": round(self.cpu_ms_per_item, 3)}


def timed(step: Callable[[], Any], items_per_step: int, *, steps: int | None = None, seconds: float | None = None,
          warmup_steps: int = 3, warmup_seconds: float = 0.0, sync: Callable[[], Any] = lambda: None,
          ready: Callable[[], Any] = lambda: None) -> Timing:
    """Times ``step()`` after a warm-up of ``warmup_steps`` calls and at least ``warmup_seconds``:
    ``steps`` calls, or as many as fill ``seconds`` (at least 3). ``sync`` waits for queued device
    work, before the clock starts and before it stops; ``ready()`` is called once warm, before the
    clock starts (processes timed together meet there)."""
    if (steps is None) == (seconds is None):
        raise ValueError("timed: give steps or seconds")
    warm_until = time.perf_counter() + warmup_seconds
    done = 0
    while done < warmup_steps or time.perf_counter() < warm_until:
        step()
        done += 1

    def more(n: int, elapsed: float) -> bool:
        return n < steps if steps is not None else (n < 3 or elapsed < seconds)

    sync()
    ready()
    cpu0, start = cpu_seconds(), time.perf_counter()
    n = 0
    while more(n, time.perf_counter() - start):
        step()
        n += 1
    sync()
    return Timing(n, time.perf_counter() - start, cpu_seconds() - cpu0, items_per_step)


def turn_counts(feed: str) -> dict:
    """penstock's counts of its pipeline threads' waits for the training loop's Python so far (the
    consumer's turn, penstock._consumer); none for another system's feed."""
    if not feed.startswith("penstock"):
        return {}
    from penstock import _consumer
    return _consumer.counts()


def turn_per_batch(before: dict, after: dict, batches: int) -> dict:
    """``turn_counts`` between two points, per batch: waits, ms waited, the share of the waits that
    lasted to their bound, and how often the waits were turned off."""
    waits = after["waits"] - before["waits"]
    return {"waits_per_batch": round(waits / batches, 2),
            "waited_ms_per_batch": round((after["waited_us"] - before["waited_us"]) / 1e3 / batches, 3),
            "to_the_bound": round((after["to_the_bound"] - before["to_the_bound"]) / max(waits, 1), 3),
            "turned_off": after["turned_off"] - before["turned_off"]}


def split_counts(feed: str) -> dict:
    """How penstock's mixed decoders in this process split their batches between the host and the
    GPU so far (operators._image_decode_mixed.split_counts); none for another system's feed, or for a
    pipeline in a process of its own."""
    if not feed.startswith("penstock"):
        return {}
    from penstock._cuda import _nvimgcodec, _pools
    from penstock.operators import _image_decode_mixed
    memory = {f"codec_{key}": value for key, value in _nvimgcodec.codec_memory().items()}
    staging = {f"staging_{key}": value for key, value in _pools.pinned.pinning().items()}
    return {**_image_decode_mixed.split_counts(), **memory, **staging}


def split_per_batch(before: dict, after: dict) -> dict:
    """``split_counts`` between two points, per batch decoded: the JPEGs each side decoded and its
    ms (the GPU side's slowest decoder's part), the in-process GPU decoder's ms idle between its
    calls (gpu_idle_ms: beside a consumer that keeps up, the time it waits for the consumer; else
    what the pipeline left the engines without work) and of them the ms before the next batch had
    come to it at all (gpu_unfed_ms; the rest is that batch's preparation: its code streams staged,
    parsed, the wait for its turn), and the share of the batches split the lifted
    way (whole images on the host too) and, per batch of those, the same of each side (lifted); with
    nvJPEG's CUDA decoder beside the hardware engines, the JPEGs it took a batch (cuda_jpegs, of
    gpu_jpegs) and the share of the batches it took part in (cuda_share); and
    the memory nvImageCodec's codecs hold at the end (codec_memory: the GPU decoders open, MB, and the
    blocks taken from the driver in between: none once the decoders reuse theirs); the process's pinned
    staging (staging: the blocks pinned in between, their MB and the ms pinning took a batch, each
    stalling its copy, and the MB held at the end); empty when no batch was decoded here."""
    batches = after.get("batches", 0) - before.get("batches", 0)
    if batches <= 0:
        return {}
    change = {key: after[key] - before[key] for key in after}

    def sides(prefix: str, count: int) -> dict:
        return {"gpu_jpegs": round(change[f"{prefix}gpu_samples"] / count, 1),
                "host_jpegs": round(change[f"{prefix}host_samples"] / count, 1),
                "gpu_side_ms": round(1e3 * change[f"{prefix}gpu_seconds"] / count, 2),
                "host_side_ms": round(1e3 * change[f"{prefix}host_seconds"] / count, 2)}
    lifted = change["lifted_batches"]
    per_batch = {"batches": batches, **sides("", batches),
                 "gpu_idle_ms": round(1e3 * change["gpu_idle_seconds"] / batches, 2),
                 "gpu_unfed_ms": round(1e3 * change["gpu_unfed_seconds"] / batches, 2),
                 "lifted_share": round(lifted / batches, 2)}
    if change.get("cuda_batches"):  # nvJPEG's CUDA decoder beside the hardware engines: its JPEGs a batch
        per_batch["cuda_jpegs"] = round(change["cuda_samples"] / batches, 1)
        per_batch["cuda_share"] = round(change["cuda_batches"] / batches, 2)
    if lifted:
        per_batch["lifted"] = sides("lifted_", lifted)
    if "codec_device_blocks" in after:
        per_batch["codec_memory"] = {
            "decoders": after.get("codec_decoders", 0),
            "device_mb": round(after["codec_device_bytes"] / 2 ** 20, 1),
            "pinned_mb": round(after["codec_pinned_bytes"] / 2 ** 20, 1),
            "new_blocks": change.get("codec_device_blocks", 0) + change.get("codec_pinned_blocks", 0),
            "reused_per_batch": round(change.get("codec_reused", 0) / batches, 1)}
    if "staging_blocks" in after:
        per_batch["staging"] = {
            "new_blocks": change["staging_blocks"], "new_mb": round(change["staging_bytes"] / 2 ** 20, 1),
            "pinning_ms_per_batch": round(1e3 * change["staging_seconds"] / batches, 2),
            "held_mb": round(after["staging_held_bytes"] / 2 ** 20, 1)}
    return per_batch


def spin(count: int) -> None:
    """Pure Python that holds the GIL throughout: ``count`` turns of an empty loop."""
    for _ in range(count):
        pass


def spin_count(seconds: float) -> int:
    """The ``spin`` count that takes ``seconds`` here (the median of 7 timings of a known count)."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        spin(100_000)
        times.append(time.perf_counter() - start)
    return max(1, round(100_000 * seconds / sorted(times)[3]))


def cycling(iterable: Iterable) -> Callable[[], Any]:
    """A step that returns the iterable's next item, starting it over at its end (a DataLoader's
    epochs; DALI iterators with auto_reset start over on the call after StopIteration)."""
    it = iter(iterable)

    def step():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(iterable)
            return next(it)
    return step


# ---- the host ---------------------------------------------------------------------------------

def host_cpu() -> dict:
    """The host's processor, as a run that names its card names it too: its model, the logical cores
    this process may use, the hardware threads per physical core, and the load average of the last
    minute when the run began. Two machines with the same GPU gave a training loop beside the same
    pipeline 0.81 and 0.61 of the model alone (docs/benchmarks.md): the host's cores, whether a
    decoding thread shares a physical core with the training thread, and other jobs' load differ."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    per_core = None
    try:  # e.g. "0,8" or "0-1": the logical cores of cpu0's physical core
        with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
            per_core = sum(len(range(int(r.split("-")[0]), int(r.split("-")[-1]) + 1))
                           for r in f.read().strip().split(","))
    except (OSError, ValueError):
        pass
    return {"model": model, "logical_cores": len(os.sched_getaffinity(0)), "threads_per_core": per_core,
            "load_1min": round(os.getloadavg()[0], 2)}


# ---- the GPU ----------------------------------------------------------------------------------

def gpu_name() -> str | None:
    """The GPU's name as nvidia-smi gives it (else CuPy's, else torch's), or None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    for probe in (_cupy_gpu_name, _torch_gpu_name):
        try:
            name = probe()
            if name:
                return name
        except Exception:  # noqa: BLE001 - no such library, or no device: try the next
            continue
    return None


def _cupy_gpu_name() -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else name


def _torch_gpu_name() -> str | None:
    import torch
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def _device_memory_used() -> Callable[[], int]:
    """A function giving the bytes in use on device 0 (all processes'), through CuPy or torch."""
    try:
        import cupy
        runtime = cupy.cuda.runtime

        def used() -> int:
            free, total = runtime.memGetInfo()
            return total - free
    except ImportError:
        import torch

        def used() -> int:
            free, total = torch.cuda.mem_get_info(0)
            return total - free
    return used


def process_gpu_mb(device_id: int = 0) -> Callable[[], float]:
    """A function giving this process's device memory (MB) on GPU ``device_id``, from NVML: other
    processes on the GPU (a test suite or another soak beside this one) do not count."""
    import pynvml
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(device_id)
    pid = os.getpid()

    def used() -> float:
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if proc.pid == pid:
                return (proc.usedGpuMemory or 0) / 2**20
        return 0.0
    return used


class GpuMemorySampler:
    """Peak device memory in use above the level when sampling started, sampled every ``interval``
    seconds (other processes' included: run nothing else on the GPU meanwhile)."""

    def __init__(self, interval: float = 0.002) -> None:
        self._used = _device_memory_used()
        self._interval = interval
        self.base = self._used()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak = max(self.peak, self._used() - self.base)

    def stop_mb(self) -> float:
        self._stop.set()
        self._thread.join()
        return round(self.peak / 2**20, 1)
