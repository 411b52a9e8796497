"""Mixed (host + GPU) image decoding for the ``device="mixed"`` decoders.

A batch is split: JPEGs up to ``hw_decoder_load`` of them go to nvImageCodec (the GPU's hardware
JPEG engines, with its CUDA decoder for what they cannot take), everything else to penstock's own
host decoder (region-of-interest decoding for windows) on the pipeline's threads, both at once.
The host results are uploaded through pinned staging, and one kernel gathers every sample's window
(from nvImageCodec's images or from the upload) into the packed output batch. Two batches decode at
once on background workers. With the default ``hw_decoder_load`` the split hill-climbs on the
measured decoding time per image; any other value is used as given. Without nvImageCodec the host
decodes everything.
"""
from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
import warnings
import weakref
from typing import Any

import numpy as np

from .. import _engine
from .._operator import SampleError
from ..types import DALIDataType, DALIImageType
from ..tensors import TensorListCPU

DEFAULT_HW_LOAD = 0.65
_GPU_OUTPUT_TYPES = (DALIImageType.RGB, DALIImageType.BGR)
_warned = threading.Event()


def _nvimgcodec() -> Any:
    try:
        from nvidia import nvimgcodec  # noqa: PLC0415 - optional, from the cuda extras
        return nvimgcodec
    except ImportError:
        if not _warned.is_set():
            _warned.set()
            from .._cuda import INSTALL_HINT
            warnings.warn("nvImageCodec is not installed, so mixed decoders decode on the CPU and upload "
                          f"the images; for GPU decoding {INSTALL_HINT}", RuntimeWarning, 3)
        return None


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
        self.codec = None
        self._opened = False  # nvImageCodec decoders created
        self.adaptive = float(op.args["hw_decoder_load"]) == DEFAULT_HW_LOAD
        # adaptive: start with every JPEG on the GPU (measured fastest on H100/H200: a decode call
        # takes about as long for half a batch as for all of it) and move work to the host only
        # while that makes batches faster
        self.gpu_share = 1.0 if self.adaptive else float(op.args["hw_decoder_load"])
        self._host = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="penstock-host-decode")
        self._in_flight: list[tuple[Any, list]] = []  # (event, nvImageCodec images) until the gather ran
        self._reserved = False
        self._reuse = True
        self._lock = threading.Lock()
        self._last_cost: float | None = None
        self._step = -0.1
        self._jobs = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="penstock-mixed-decode")
        self._decoders: queue.Queue = queue.Queue()

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
        self._in_flight = []
        self._opened = False
        while not self._decoders.empty():
            self._decoders.get()
        self._host.shutdown(wait=False)

    def _codec(self, ws) -> Any:
        if not self._opened:
            self.codec = _nvimgcodec()
            if self.codec is None:
                return None
            ws.gpu.on_close(self._release)
            nv = self.codec
            options = ":fancy_upsampling=1" if self.op.args["jpeg_fancy_upsampling"] else ""
            backends = [nv.Backend(nv.BackendKind.HW_GPU_ONLY), nv.Backend(nv.BackendKind.GPU_ONLY)]
            # one decoder per batch in flight; the hardware engines need few host threads each
            for _ in range(2):
                self._decoders.put(nv.Decoder(device_id=ws.gpu.device_id, max_num_cpu_threads=2,
                                              backends=backends, options=options))
            self._opened = True
        return self.codec

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

    def _decode_gpu(self, ws, src: TensorListCPU, idx: np.ndarray) -> list:
        nv = self.codec
        params = nv.DecodeParams(apply_exif_orientation=bool(self.op.args["adjust_orientation"]),
                                 color_spec=nv.ColorSpec.SRGB, allow_any_depth=False)
        streams = [nv.CodeStream(src._sample_array(int(i))) for i in idx]
        stream = int(ws.gpu.stream.ptr)
        decoder = self._decoders.get()
        try:
            reuse = self._spare_images(len(streams))
            if reuse is not None:
                try:  # decoding into images of an earlier batch saves an allocation per image
                    return list(decoder.decode(streams, images=reuse, params=params, cuda_stream=stream))
                except TypeError:  # an nvImageCodec without image reuse
                    self._reuse = False
            return list(decoder.decode(streams, params=params, cuda_stream=stream))
        finally:
            self._decoders.put(decoder)

    def _spare_images(self, count: int) -> list | None:
        """``count`` images of a finished batch, to decode into again (None if there are none)."""
        if not self._reuse:
            return None
        with self._lock:
            for k, (event, objs) in enumerate(self._in_flight):
                images = objs[0]
                if event.done and len(images) >= count and all(img is not None for img in images):
                    del self._in_flight[k]
                    return images[:count]
        return None

    # -- one batch --------------------------------------------------------------------------------
    def decode(self, ws, src: TensorListCPU, shapes: np.ndarray, crop: np.ndarray | None) -> Any:
        """The output batch, allocated now and filled once its decoding finished: decoding runs on
        background workers (two batches in flight, which is what keeps the hardware decoders busy:
        a decode call's time hardly depends on how many images it gets), and the gather is queued
        when the GPU stage first uses the batch (``_deferred``)."""
        args = self.op.args
        if not self._reserved:
            self._reserved = True
            self._reserve(ws)
        n = len(src)
        output_type = int(args["output_type"])
        gpu_ok = _is_jpeg(src) if output_type in _GPU_OUTPUT_TYPES else np.zeros(n, bool)
        if gpu_ok.any() and self._codec(ws) is None:
            gpu_ok[:] = False
        jpegs = np.nonzero(gpu_ok)[0]
        gpu_idx = jpegs[:int(round(self.gpu_share * len(jpegs)))]
        host_idx = np.setdiff1d(np.arange(n), gpu_idx)
        windows = np.zeros((n, 4), np.int64)
        windows[:, 2:] = shapes[:, :2] if crop is None else crop[:, 2:]
        if crop is not None:
            windows[:, :2] = crop[:, :2]
        out_shapes = np.column_stack([windows[:, 2:], shapes[:, 2]])
        dtype = np.float32 if args["dtype"] == DALIDataType.FLOAT else np.uint8
        out = ws.new_batch(out_shapes, dtype, "HWC", src._source_info)
        job = self._jobs.submit(self._decode_sides, ws, src, shapes, crop, gpu_idx, host_idx)
        out._deferred = lambda: self._fill(ws, out, job, windows, output_type)
        return out

    def _decode_sides(self, ws, src, shapes, crop, gpu_idx, host_idx) -> tuple:
        """Both decoders at once; what nvImageCodec could not decode goes to the host afterwards."""
        start = time.perf_counter()
        host_job = self._host.submit(self._decode_host, ws, src, host_idx, crop) if len(host_idx) else None
        images = self._decode_gpu(ws, src, gpu_idx) if len(gpu_idx) else []
        host = host_job.result() if host_job is not None else None
        retry = [k for k, img in enumerate(images)
                 if img is None or tuple(img.shape[:2]) != tuple(shapes[gpu_idx[k], :2])]
        if retry:
            redo = gpu_idx[retry]
            extra = self._decode_host(ws, src, redo, crop)
            host_idx = np.concatenate([host_idx, redo])
            host = extra if host is None else _concat_host(host, extra)
        self._adapt((time.perf_counter() - start) / max(len(src), 1))
        return images, set(retry), gpu_idx, host_idx, host

    def _fill(self, ws, out: Any, job: Any, windows: np.ndarray, output_type: int) -> None:
        """On the GPU stage: waits for the decoders, then queues the gather into ``out``."""
        images, failed, gpu_idx, host_idx, host = job.result()
        n = len(out)
        channels = out._shapes[:, 2].copy()
        pointers = np.zeros(n, np.uint64)
        pitches = np.zeros(n, np.int64)
        reverse = np.zeros(n, np.int64)
        for k in (k for k in range(len(images)) if k not in failed):
            iface = images[k].__cuda_array_interface__
            i = gpu_idx[k]
            pointers[i] = iface["data"][0]
            pitches[i] = iface["strides"][0] if iface.get("strides") else iface["shape"][1] * iface["shape"][2]
            reverse[i] = output_type == DALIImageType.BGR
        upload = None
        if host is not None:
            buf, hshapes, hoffsets = host
            expected = out._shapes[host_idx]
            bad = np.nonzero((hshapes != expected).any(axis=1))[0]
            if len(bad):
                i = int(host_idx[bad[0]])
                raise SampleError(i, f"{self.op.label}: decoded to shape {tuple(hshapes[bad[0]])}, "
                                     f"expected {tuple(expected[bad[0]])}")
            upload = ws.gpu.upload(buf)
            pointers[host_idx] = np.uint64(upload.data.ptr) + hoffsets.astype(np.uint64)
            pitches[host_idx] = hshapes[:, 1] * hshapes[:, 2]
            windows = windows.copy()
            windows[host_idx, :2] = 0
        ws.kernels.gather_images(pointers, pitches, windows, channels, reverse, out._buf, out._offsets)
        self._keep_alive(ws, images, upload)

    def _adapt(self, seconds_per_image: float) -> None:
        """Hill-climbs the GPU's share on the measured decoding time per image (the default
        hw_decoder_load only): keeps moving while it gets faster, turns back and slows when not."""
        if not self.adaptive:
            return
        with self._lock:
            if self._last_cost is not None and seconds_per_image > self._last_cost:
                self._step = -self._step / 2 if abs(self._step) > 0.02 else -self._step
            self._last_cost = seconds_per_image
            self.gpu_share = float(np.clip(self.gpu_share + self._step, 0.0, 1.0))

    def _keep_alive(self, ws, images: list, upload: Any) -> None:
        """Sources of the gather stay alive until the stream has run it; then their images can be
        decoded into again (the few most recent sets are kept for that)."""
        with self._lock:
            finished = [entry for entry in self._in_flight if entry[0].done]
            pending = [entry for entry in self._in_flight if not entry[0].done]
            self._in_flight = finished[-2:] + pending + [(ws.gpu.record(), [images, upload])]


def _concat_host(a: tuple, b: tuple) -> tuple:
    buf = np.concatenate([a[0][:int(a[1].prod(axis=1).sum())], b[0][:int(b[1].prod(axis=1).sum())]])
    shapes = np.concatenate([a[1], b[1]])
    offsets = np.zeros(len(shapes), np.int64)
    np.cumsum(shapes.prod(axis=1)[:-1], out=offsets[1:])
    return buf, shapes, offsets
