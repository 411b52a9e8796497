"""Mixed (host + GPU) image decoding for the ``device="mixed"`` decoders.

JPEGs go to nvImageCodec, which splits them between the GPU's hardware JPEG engines
(``hw_decoder_load`` of them; with the default it adapts the split from there to keep both busy)
and its CUDA decoder, as DALI does; other formats, and anything nvImageCodec cannot decode, go to
penstock's host decoder (region-of-interest decoding for windows) on threads of its own, at the
same time. With the default ``hw_decoder_load`` the host also takes a share of the JPEGs whose
windows it decodes at a fraction of a whole image's work (random crops), sized from both sides'
measured rates so that they finish together (``_decode_split``): the GPU side decodes whole images
and is bound by its engines, and the host has cores to spare.

nvImageCodec runs in decoder processes of its own (``_cuda._decode_process``: its binding takes the
GIL per image, which the pipeline's other threads would hold), each batch's JPEGs split between
them, and each writes its samples' windows into device memory shared with the pipeline. The host
results are uploaded through pinned staging, and one kernel gathers every sample (from the shared
slots or from the upload) into the packed output batch. Two batches decode at once on background
workers. Without nvImageCodec the host decodes everything.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import threading
import time
import warnings
import weakref
from typing import Any

import numpy as np

from .. import _engine
from .._operator import SampleError
from .._workers import Workers
from ._decode_split import HostShare, host_cost
from ..types import DALIDataType, DALIImageType
from ..tensors import TensorListCPU

DEFAULT_HW_LOAD = 0.65
# Within one process nvImageCodec serializes its submissions to the hardware engines. Measured on an
# H100, decoding alone (256 ImageNet-like JPEGs per call): one process 14.1k img/s, two at once 22.5k,
# four 26.9k; the ResNet-50 train pipeline with 1, 2, 3, 4 processes: 9.9k, 13.1k, 15.1k, 15.8k.
# Each process holds a CUDA context of its own (device memory), so three.
DECODE_PROCESSES = 3
# First guesses of the two sides' rates (encoded bytes per second) for the host share, until
# measurements replace them: a host thread decodes ~95 KB JPEGs in ~3 ms; one decoder process,
# with the others busy too, ~6k of them per second.
_HOST_RATE_PER_THREAD = 30e6
_GPU_RATE_PER_PROCESS = 600e6
_GPU_OUTPUT_TYPES = (DALIImageType.RGB, DALIImageType.BGR)
_warned = threading.Event()


def _has_nvimgcodec() -> bool:
    try:
        found = importlib.util.find_spec("nvidia.nvimgcodec") is not None
    except ImportError:  # no nvidia namespace at all
        found = False
    if not found and not _warned.is_set():
        _warned.set()
        from .._cuda import INSTALL_HINT
        warnings.warn("nvImageCodec is not installed, so mixed decoders decode on the CPU and upload "
                      f"the images; for GPU decoding {INSTALL_HINT}", RuntimeWarning, 3)
    return found


def _is_jpeg(src: TensorListCPU) -> np.ndarray:
    sizes = src._volumes()
    ok = sizes >= 2
    first = np.where(ok, src._offsets, 0)
    return ok & (src._buf[first] == 0xFF) & (src._buf[first + 1] == 0xD8)


def _subset(src: TensorListCPU, idx: np.ndarray) -> TensorListCPU:
    """The samples ``idx`` of an encoded batch, viewing the same buffer."""
    return TensorListCPU._from_packed(src._buf, src._shapes[idx], src._offsets[idx], "",
                                      [src._source_info[i] for i in idx])


class MixedDecoder:
    """The mixed backend of one decoder operator."""

    def __init__(self, op: Any):
        if op.args.get("cache_size", 0) > 0:  # only decoders.image declares the cache
            raise NotImplementedError(f"{op.label}: cache_size (the decoded-image cache) is not supported on "
                                      "the mixed backend")
        self.op = weakref.proxy(op)  # the operator owns this object
        self.processes: list = []  # the nvImageCodec decoder processes
        self._opened = False
        self._share: HostShare | None = None  # the host's share of the JPEGs (default hw_decoder_load)
        self._host_pool: Any = None  # the host side's threads beside decoder processes
        self._host = Workers(1, "penstock-host-decode")
        self._reserved = False
        self._jobs = Workers(2, "penstock-mixed-decode")
        # a batch's requests go out at once: each copies its part of the encoded bytes (numpy copies
        # without the GIL), so the copies overlap instead of adding up before the last part starts
        self._requests = Workers(DECODE_PROCESSES, "penstock-decode-request")

    def _reserve(self, ws) -> None:
        """Takes the memory the padding and preallocation arguments ask for into the pools once."""
        a = self.op.args
        image = a["preallocate_width_hint"] * a["preallocate_height_hint"] * 3 * ws.batch_size
        device = a["device_memory_padding"] + a["device_memory_padding_jpeg2k"] + image
        host = a["host_memory_padding"] + a["host_memory_padding_jpeg2k"]
        if device > 0:
            with ws.gpu:
                ws.gpu.cp.empty(device, np.uint8)  # freed at once: the pool keeps the block
        if host > 0:
            ws.gpu.reserve_staging(host)

    def _release(self) -> None:
        for workers in (self._jobs, self._requests, self._host):
            workers.close()
        self._jobs.join()  # no batch uses the processes any more
        self._requests.join()
        self._opened = False
        for process in self.processes:
            process.close()
        self.processes = []
        self._host_pool = None

    def _decoder_processes(self, ws) -> list:
        """The decoder processes, started together on first use (none: decode on the host)."""
        if not self._opened:
            self._opened = True
            if not _has_nvimgcodec():
                return []
            from .._cuda._decode_process import DecodeProcess
            options = ":fancy_upsampling=1" if self.op.args["jpeg_fancy_upsampling"] else ""
            hw_load = float(self.op.args["hw_decoder_load"])
            threads = _process_threads(ws.pool.num_threads)

            def start(_: int) -> Any:
                try:
                    return DecodeProcess(ws.gpu, options, threads, hw_load, adaptive=hw_load == DEFAULT_HW_LOAD)
                except (RuntimeError, OSError) as exc:
                    return exc
            with concurrent.futures.ThreadPoolExecutor(DECODE_PROCESSES) as starter:
                started = list(starter.map(start, range(DECODE_PROCESSES)))
            self.processes = [p for p in started if not isinstance(p, BaseException)]
            errors = [p for p in started if isinstance(p, BaseException)]
            if errors:
                where = "the others" if self.processes else "the host"
                warnings.warn(f"{self.op.label}: {errors[0]}; decoding on {where}", RuntimeWarning, 3)
            if self.processes:
                # the host side's own threads: it decodes beside the CPU stage, not queued behind it
                host_threads = _host_threads(ws.pool.num_threads)
                self._host_pool = _engine.ThreadPool(host_threads)
                if hw_load == DEFAULT_HW_LOAD:
                    self._share = HostShare(_HOST_RATE_PER_THREAD * host_threads,
                                            _GPU_RATE_PER_PROCESS * len(self.processes))
        return self.processes

    # -- the two sides ---------------------------------------------------------------------------
    def _decode_host(self, ws, src: TensorListCPU, idx: np.ndarray, crop: np.ndarray | None):
        sub = _subset(src, idx)
        args = self.op.args
        pool = ws.pool if self._host_pool is None else self._host_pool
        buf, shapes, offsets, fallback = _engine.decode_images(
            pool, sub._buf, sub._shapes, sub._offsets, int(args["output_type"]), args["adjust_orientation"],
            None if crop is None else np.ascontiguousarray(crop[idx]), None, args["use_fast_idct"])[:4]
        if fallback.any():
            buf, shapes, offsets = self.op._with_fallbacks(sub, buf, shapes, offsets, fallback,
                                                           None if crop is None else crop[idx])
        return buf, shapes, offsets

    # -- one batch --------------------------------------------------------------------------------
    def decode(self, ws, src: TensorListCPU, shapes: np.ndarray, crop: np.ndarray | None) -> Any:
        """The output batch, allocated now and filled once its decoding finished: decoding runs on
        background workers (two batches in flight, so the decoder processes always have the next one
        queued), and the gather is queued when the GPU stage first uses the batch (``_deferred``)."""
        args = self.op.args
        if not self._reserved:
            self._reserved = True
            self._reserve(ws)
            ws.gpu.on_close(self._release)  # the workers (and the decoder process) go with the pipeline
        n = len(src)
        output_type = int(args["output_type"])
        gpu_ok = _is_jpeg(src) if output_type in _GPU_OUTPUT_TYPES else np.zeros(n, bool)
        if gpu_ok.any() and not self._decoder_processes(ws):
            gpu_ok[:] = False
        windows = np.zeros((n, 4), np.int64)
        windows[:, 2:] = shapes[:, :2] if crop is None else crop[:, 2:]
        if crop is not None:
            windows[:, :2] = crop[:, :2]
        if self._share is not None and gpu_ok.any():
            self._give_host_its_share(src, windows, shapes, gpu_ok)
        gpu_idx = np.nonzero(gpu_ok)[0]
        host_idx = np.nonzero(~gpu_ok)[0]
        out_shapes = np.column_stack([windows[:, 2:], shapes[:, 2]])
        dtype = np.float32 if args["dtype"] == DALIDataType.FLOAT else np.uint8
        out = ws.new_batch(out_shapes, dtype, "HWC", src._source_info)
        job = self._jobs.submit(self._decode_batch, ws, src, shapes, crop, windows, gpu_idx, host_idx)
        out._deferred = lambda: self._fill(ws, out, job, windows, output_type)
        return out

    def _give_host_its_share(self, src: TensorListCPU, windows: np.ndarray, shapes: np.ndarray,
                             gpu_ok: np.ndarray) -> None:
        """Clears ``gpu_ok`` for the JPEGs the host decodes this time."""
        lengths = src._volumes()
        costs = host_cost(lengths, windows, shapes)
        chosen = self._share.choose(lengths[gpu_ok], costs[gpu_ok], float(costs[~gpu_ok].sum()))
        gpu_ok[np.nonzero(gpu_ok)[0][chosen]] = False

    def _decode_batch(self, ws, src, shapes, crop, windows, gpu_idx, host_idx) -> tuple:
        """``_decode_sides``, each host part uploaded by the thread that decoded it (off the GPU
        stage's path, and the host's part while the decoder processes still work)."""
        def upload(buf: np.ndarray, hshapes: np.ndarray) -> Any:
            # pool memory of the pipeline's stream: reused only after the gather that reads it
            return ws.gpu.upload(buf[:int(hshapes.prod(axis=1).sum())])
        return self._decode_sides(ws, src, shapes, crop, windows, gpu_idx, host_idx, upload)

    def _decode_sides(self, ws, src, shapes, crop, windows, gpu_idx, host_idx, upload=None) -> tuple:
        """Both decoders at once; what the GPU could not decode goes to the host afterwards.
        Returns ``parts``: per decoder process, its slot, the positions in ``gpu_idx`` it decoded
        and where in the slot each landed; the positions that failed there; ``gpu_idx``; and
        ``host``: per host part, its samples and their pixels (``upload(buf, shapes)`` of them
        when given), shapes and offsets. Each side's time goes to the host share's rates."""
        lengths = src._volumes()
        host_job = self._host.submit(self._host_part, ws, src, host_idx, crop, windows, shapes, upload) \
            if len(host_idx) else None
        orient = bool(self.op.args["adjust_orientation"])

        def request(process: Any, positions: np.ndarray) -> tuple:
            i = gpu_idx[positions]
            sizes = windows[i, 2] * windows[i, 3] * shapes[i, 2]
            slot_offsets = np.zeros(len(i), np.int64)
            np.cumsum(sizes[:-1], out=slot_offsets[1:])
            slot, reply = process.submit(src._buf, src._offsets[i], lengths[i], windows[i], shapes[i], slot_offsets,
                                         int(sizes.sum()), orient)
            return (process, slot, positions, slot_offsets), reply

        split = _split_by_bytes(lengths[gpu_idx], len(self.processes))
        sent = [f.result() for f in [self._requests.submit(request, process, positions)
                                     for process, positions in zip(self.processes, split)]]
        parts = [part for part, _ in sent]
        replies = [reply.result() for _, reply in sent]
        failed = [int(positions[k]) for (_, _, positions, _), (fails, _) in zip(parts, replies) for k in fails]
        if self._share is not None and replies:  # the processes work side by side: the slowest one's time
            self._share.measured("gpu", float(lengths[gpu_idx].sum()), max(seconds for _, seconds in replies))
        host = [host_job.result()] if host_job is not None else []
        if failed:
            host.append(self._host_part(ws, src, gpu_idx[failed], crop, windows, shapes, upload, timed=False))
        return parts, set(failed), gpu_idx, host

    def _host_part(self, ws, src, idx, crop, windows, shapes, upload, timed: bool = True) -> tuple:
        """The host's decoding of samples ``idx``; ``timed``: its time feeds the host's rate."""
        start = time.perf_counter()
        buf, hshapes, offsets = self._decode_host(ws, src, idx, crop)
        if timed and self._share is not None:
            cost = float(host_cost(src._volumes()[idx], windows[idx], shapes[idx]).sum())
            self._share.measured("host", cost, time.perf_counter() - start)
        return idx, buf if upload is None else upload(buf, hshapes), hshapes, offsets

    def _fill(self, ws, out: Any, job: Any, windows: np.ndarray, output_type: int) -> None:
        """On the GPU stage: waits for the decoders, then queues the gather into ``out``."""
        parts, failed, gpu_idx, host = job.result()
        n = len(out)
        channels = out._shapes[:, 2].copy()
        pointers = np.zeros(n, np.uint64)
        pitches = np.zeros(n, np.int64)
        reverse = np.zeros(n, np.int64)
        windows = windows.copy()
        for _, slot, positions, slot_offsets in parts:  # each slot holds its windows packed
            done = np.array([k for k, pos in enumerate(positions) if pos not in failed], np.int64)
            i = gpu_idx[positions[done]]
            pointers[i] = np.uint64(slot.ptr) + slot_offsets[done].astype(np.uint64)
            pitches[i] = windows[i, 3] * channels[i]
            windows[i, :2] = 0
            reverse[i] = output_type == DALIImageType.BGR
        for idx, buf, hshapes, hoffsets in host:  # each uploaded part holds its windows packed
            expected = out._shapes[idx]
            bad = np.nonzero((hshapes != expected).any(axis=1))[0]
            if len(bad):
                i = int(idx[bad[0]])
                raise SampleError(i, f"{self.op.label}: decoded to shape {tuple(hshapes[bad[0]])}, "
                                     f"expected {tuple(expected[bad[0]])}")
            pointers[idx] = np.uint64(buf.data.ptr) + hoffsets.astype(np.uint64)
            pitches[idx] = hshapes[:, 1] * hshapes[:, 2]
            windows[idx, :2] = 0
        ws.kernels.gather_images(pointers, pitches, windows, channels, reverse, out._buf, out._offsets)
        for process, slot, _, _ in parts:
            process.release(slot)


def _process_threads(num_threads: int) -> int:
    """nvImageCodec's host threads in each decoder process."""
    return min(8, max(2, num_threads // (2 * DECODE_PROCESSES)))


def _host_threads(num_threads: int) -> int:
    """The host side's threads beside the decoder processes. Measured on an H200 with 16 host cores
    (ResNet-50 train pipeline), in one run: 6 threads 18.1k img/s, 10 17.3k, 14 14.9k, no host share
    17.4k (more threads take the cores the pipeline's own threads and the decoder processes need);
    in another, 2, 4 and 6 threads all 19.6k."""
    return max(1, num_threads // 4)


def _split_by_bytes(lengths: np.ndarray, parts: int) -> list[np.ndarray]:
    """Positions 0..len-1 in ``parts`` consecutive runs of about equal encoded bytes (empty runs
    dropped): the decoding time follows the bytes more than the count."""
    if not len(lengths):
        return []
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts, side="right")
    return [run for run in np.split(np.arange(len(lengths)), cuts) if len(run)]
