"""Mixed (host + GPU) image decoding for the ``device="mixed"`` decoders.

JPEGs go to nvImageCodec, which splits them between the GPU's hardware JPEG engines
(``hw_decoder_load`` of them; with the default it adapts the split from there to keep both busy)
and its CUDA decoder, as DALI does; other formats, and anything nvImageCodec cannot decode, go to
penstock's host decoder (region-of-interest decoding for windows) on the pipeline's threads, at
the same time. nvImageCodec runs in decoder processes of its own (``_cuda._decode_process``: its
binding takes the GIL per image, which the pipeline's other threads would hold), each batch's JPEGs
split between them, and each writes its samples' windows into device memory shared with the
pipeline. The host results are uploaded through pinned staging, and one kernel gathers every
sample (from the shared slots or from the upload) into the packed output batch. Two batches decode
at once on background workers. Without nvImageCodec the host decodes everything.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from .. import _engine
from .._operator import SampleError
from ..types import DALIDataType, DALIImageType
from ..tensors import TensorListCPU

DEFAULT_HW_LOAD = 0.65
# Within one process nvImageCodec serializes its submissions to the hardware engines. Measured on an
# H100, decoding alone (256 ImageNet-like JPEGs per call): one process 14.1k img/s, two at once 22.5k,
# four 26.9k; the ResNet-50 train pipeline with 1, 2, 3, 4 processes: 9.9k, 13.1k, 15.1k, 15.8k.
# Each process holds a CUDA context of its own (device memory), so three.
DECODE_PROCESSES = 3
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
        if op.args["cache_size"] > 0:
            raise NotImplementedError(f"{op.label}: cache_size (the decoded-image cache) is not supported on "
                                      "the mixed backend")
        self.op = weakref.proxy(op)  # the operator owns this object
        self.processes: list = []  # the nvImageCodec decoder processes
        self._opened = False
        self._host = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="penstock-host-decode")
        self._reserved = False
        self._jobs = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="penstock-mixed-decode")
        # a batch's requests go out at once: each copies its part of the encoded bytes (numpy copies
        # without the GIL), so the copies overlap instead of adding up before the last part starts
        self._requests = concurrent.futures.ThreadPoolExecutor(DECODE_PROCESSES,
                                                               thread_name_prefix="penstock-decode-request")

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
        self._jobs.shutdown(wait=True)
        self._requests.shutdown(wait=True)
        self._opened = False
        for process in self.processes:
            process.close()
        self.processes = []
        self._host.shutdown(wait=False)

    def _decoder_processes(self, ws) -> list:
        """The decoder processes, started together on first use (none: decode on the host)."""
        if not self._opened:
            self._opened = True
            if not _has_nvimgcodec():
                return []
            from .._cuda._decode_process import DecodeProcess
            options = ":fancy_upsampling=1" if self.op.args["jpeg_fancy_upsampling"] else ""
            hw_load = float(self.op.args["hw_decoder_load"])
            threads = min(8, max(2, ws.pool.num_threads // (2 * DECODE_PROCESSES)))

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
        return self.processes

    # -- the two sides ---------------------------------------------------------------------------
    def _decode_host(self, ws, src: TensorListCPU, idx: np.ndarray, crop: np.ndarray | None):
        sub = _subset(src, idx)
        args = self.op.args
        buf, shapes, offsets, fallback = _engine.decode_images(
            ws.pool, sub._buf, sub._shapes, sub._offsets, int(args["output_type"]), args["adjust_orientation"],
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
        gpu_idx = np.nonzero(gpu_ok)[0]
        host_idx = np.nonzero(~gpu_ok)[0]
        windows = np.zeros((n, 4), np.int64)
        windows[:, 2:] = shapes[:, :2] if crop is None else crop[:, 2:]
        if crop is not None:
            windows[:, :2] = crop[:, :2]
        out_shapes = np.column_stack([windows[:, 2:], shapes[:, 2]])
        dtype = np.float32 if args["dtype"] == DALIDataType.FLOAT else np.uint8
        out = ws.new_batch(out_shapes, dtype, "HWC", src._source_info)
        job = self._jobs.submit(self._decode_sides, ws, src, shapes, crop, windows, gpu_idx, host_idx)
        out._deferred = lambda: self._fill(ws, out, job, windows, output_type)
        return out

    def _decode_sides(self, ws, src, shapes, crop, windows, gpu_idx, host_idx) -> tuple:
        """Both decoders at once; what the GPU could not decode goes to the host afterwards.
        ``parts``: per decoder process, its slot, the positions in ``gpu_idx`` it decoded and where
        in the slot each landed."""
        host_job = self._host.submit(self._decode_host, ws, src, host_idx, crop) if len(host_idx) else None
        lengths = src._volumes()
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
        sent = list(self._requests.map(request, self.processes[:len(split)], split))
        parts = [part for part, _ in sent]
        failed = [int(positions[k]) for (_, _, positions, _), reply in sent for k in reply.result()]
        host = host_job.result() if host_job is not None else None
        if failed:
            redo = gpu_idx[failed]
            extra = self._decode_host(ws, src, redo, crop)
            host_idx = np.concatenate([host_idx, redo])
            host = extra if host is None else _concat_host(host, extra)
        return parts, set(failed), gpu_idx, host_idx, host

    def _fill(self, ws, out: Any, job: Any, windows: np.ndarray, output_type: int) -> None:
        """On the GPU stage: waits for the decoders, then queues the gather into ``out``."""
        parts, failed, gpu_idx, host_idx, host = job.result()
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
        if host is not None:
            buf, hshapes, hoffsets = host
            expected = out._shapes[host_idx]
            bad = np.nonzero((hshapes != expected).any(axis=1))[0]
            if len(bad):
                i = int(host_idx[bad[0]])
                raise SampleError(i, f"{self.op.label}: decoded to shape {tuple(hshapes[bad[0]])}, "
                                     f"expected {tuple(expected[bad[0]])}")
            upload = ws.gpu.upload(buf)  # pool memory of this stream: reused only after the gather
            pointers[host_idx] = np.uint64(upload.data.ptr) + hoffsets.astype(np.uint64)
            pitches[host_idx] = hshapes[:, 1] * hshapes[:, 2]
            windows[host_idx, :2] = 0
        ws.kernels.gather_images(pointers, pitches, windows, channels, reverse, out._buf, out._offsets)
        for process, slot, _, _ in parts:
            process.release(slot)


def _split_by_bytes(lengths: np.ndarray, parts: int) -> list[np.ndarray]:
    """Positions 0..len-1 in ``parts`` consecutive runs of about equal encoded bytes (empty runs
    dropped): the decoding time follows the bytes more than the count."""
    if not len(lengths):
        return []
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts, side="right")
    return [run for run in np.split(np.arange(len(lengths)), cuts) if len(run)]


def _concat_host(a: tuple, b: tuple) -> tuple:
    buf = np.concatenate([a[0][:int(a[1].prod(axis=1).sum())], b[0][:int(b[1].prod(axis=1).sum())]])
    shapes = np.concatenate([a[1], b[1]])
    offsets = np.zeros(len(shapes), np.int64)
    np.cumsum(shapes.prod(axis=1)[:-1], out=offsets[1:])
    return buf, shapes, offsets
