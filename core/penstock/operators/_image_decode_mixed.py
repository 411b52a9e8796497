"""Mixed (host + GPU) image decoding for the ``device="mixed"`` decoders.

JPEGs go to nvImageCodec, each decoding only a sample's window (region-of-interest decoding). With
a ``hw_decoder_load`` given, nvImageCodec splits them as DALI does: that share for the GPU's hardware
JPEG engines, the rest for its CUDA decoder. With the default, the hardware engines take them alone,
nvImageCodec adapting their share, and the SMs are left to the model (a GPU without the engines
gets the CUDA decoder). Other formats, and anything nvImageCodec cannot decode, go to penstock's host
decoder (region-of-interest decoding too) on threads of its own, at the same time. With the default
``hw_decoder_load`` the host also takes a share of the JPEGs whose windows it decodes at a fraction
of a whole image's work (random crops), sized from both sides' measured rates so that they finish
together, and of whole images too while that was measured to decode batches sooner
(``_image_decode_split``): beside a training model the GPU side is slowed down, and the host has
cores to spare.

nvImageCodec runs in this process through its C API, without the GIL (``_cuda._nvimgcodec``), on a
stream of its own, and writes each sample's window into the output batch. With
``PENSTOCK_CUDA_DECODER`` set, nvJPEG's CUDA decoder, a second decoder beside the hardware engines,
takes a part of the large JPEGs, sized by the two decoders' measured rates (``_cuda_way_engaged``). With
``PENSTOCK_DECODER_PROCESSES`` set, once a pipeline has run a few batches, decoder processes
(``_cuda._decode_process``) take parts of each batch too, sized by each decoder's measured rate:
one process leaves the hardware engines partly idle. On an H100 (ImageNet-like photographs,
ResNet-50 pipelines alone, medians of 3 rounds) one decoder process took train from 19.9k to 22.2k
img/s at 16 host threads, for about 830 MB more device memory (the child's CUDA context and decoder
state); beside a training loop it slows the pipeline down (``process_count`` says why), so it is
off by default. The host
decodes its part straight into pinned staging (blocks of one size, ``_image_decode_staging``), and
each sample is copied from there into its place in the output batch (a float batch: uploaded, and
one kernel converts it into the batch). Two batches decode at once on background workers. Without
nvImageCodec the host decodes everything.

nvImageCodec decodes a JPEG whose scan corruption put out of step without a word; libjpeg-turbo
notices at the end marker. Unless ``accept_corrupt_jpeg``, the host reads the files the GPU decoded
through once (no pixels made; the engine remembers their bytes), so a corrupt one is its sample's
error on both backends.
"""
from __future__ import annotations

import contextlib
import functools
import statistics
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from .. import _engine
from .._batch import sample_positions, zero_rows
from .._environment import non_negative, one_of
from .._operator import SampleError, sample_error_from_engine
from .._workers import Workers, host_cores
from ._image_decode_split import HostShare, host_cost
from ._image_decode_staging import HostStaging
from ..types import DALIDataType, DALIImageType
from ..tensors import TensorListCPU

DEFAULT_HW_LOAD = 0.65
PROCESSES_AFTER_BATCHES = 16  # decoder processes start after this many batches (_start_processes)
# First guesses of the two sides' rates (encoded bytes per second) for the host share, until
# measurements replace them: a host thread decodes ~95 KB JPEGs in ~3 ms; the hardware engines
# ~20k of them per second.
_HOST_RATE_PER_THREAD = 30e6
_GPU_RATE_PER_DECODER = 2e9
NICENESS_ENV = "PENSTOCK_HOST_DECODE_NICENESS"
# "on": a batch during which the pinned staging pool grew is left out of the split's measurements
# (MixedDecoder._decode_sides says why)
SKIP_PINNING_ENV = "PENSTOCK_SPLIT_SKIP_PINNING"
# beside the hardware engines (the default hw_decoder_load), nvJPEG's CUDA decoder takes a share of the
# GPU's JPEGs, sized by its measured rate: "on" always, "starved" while the pipeline's consumer spends
# more than STARVED_ABOVE of its time waiting for batches (MixedDecoder._cuda_way_engaged says why)
CUDA_WAY_ENV = "PENSTOCK_CUDA_DECODER"
STARVED_ABOVE = 0.25
_GPU_OUTPUT_TYPES = (DALIImageType.RGB, DALIImageType.BGR)
_warned = threading.Event()
# every mixed decoder's batches in this process so far (split_counts)
_split_lock = threading.Lock()
_SIDES = ("gpu_samples", "host_samples", "gpu_seconds", "host_seconds")
_split = {"batches": 0, **dict.fromkeys(_SIDES, 0), "lifted_batches": 0, "gpu_idle_seconds": 0.0,
          "gpu_unfed_seconds": 0.0, **{f"lifted_{key}": 0 for key in _SIDES}, "cuda_samples": 0, "cuda_batches": 0}


def split_counts() -> dict[str, float]:
    """How every mixed decoder of this process split its batches so far: the batches, the samples each
    side decoded (the host's retries of samples the GPU failed on not counted), each side's seconds
    (a batch's GPU side: its slowest decoder's part), the in-process GPU decoder's seconds idle between
    its calls and of them those before the next call had come (``IdleClock``: unfed), and the
    batches split the lifted way (the host's share past the cap: whole images too; a trial's
    included) with their samples and seconds again (``lifted_...``): what each way gave each side;
    and of the GPU's samples those nvJPEG's CUDA decoder took beside the hardware engines
    (``cuda_samples``, in ``cuda_batches``; PENSTOCK_CUDA_DECODER). Benchmarks read the change over a
    window."""
    with _split_lock:
        return dict(_split)


def _count_split(gpu_samples: int, host_samples: int, gpu_seconds: float, host_seconds: float, lifted: bool,
                 gpu_idle_seconds: float, gpu_unfed_seconds: float) -> None:
    sides = dict(zip(_SIDES, (gpu_samples, host_samples, gpu_seconds, host_seconds)))
    with _split_lock:
        _split["batches"] += 1
        _split["lifted_batches"] += lifted
        _split["gpu_idle_seconds"] += gpu_idle_seconds
        _split["gpu_unfed_seconds"] += gpu_unfed_seconds
        for key, value in sides.items():
            _split[key] += value
            if lifted:
                _split[f"lifted_{key}"] += value


def _count_cuda_part(samples: int) -> None:
    if samples:
        with _split_lock:
            _split["cuda_samples"] += samples
            _split["cuda_batches"] += 1


def _has_nvimgcodec() -> bool:
    from .._cuda._nvimgcodec import library_dir
    found = library_dir() is not None
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
    infos = src._source_info  # (indexed by Python ints: numpy's cost a list index several times more)
    return TensorListCPU._from_packed(src._buf, _engine.take_rows(src._shapes, idx), src._offsets[idx], "",
                                      [infos[i] for i in idx.tolist()])


@contextlib.contextmanager
def _samples_of_the_batch(idx: np.ndarray) -> Iterator[None]:
    """Work on the batch's samples ``idx``: a complaint about its sample k is one about the
    batch's sample ``idx[k]``."""
    try:
        yield
    except Exception as exc:
        err = exc if isinstance(exc, SampleError) else sample_error_from_engine(exc)
        if err is None:
            raise
        raise SampleError(int(idx[err.sample]), err.args[0]) from exc


class _HostDecoding:
    """A host part's decoding, running on the host's thread: ``collect()`` gives its (pixels, shapes,
    offsets), seconds (the decoding's, and ``set_up``: getting its staging) and the staging it decoded
    into (``HostStaging``; the pixels are then an empty array, the offsets those of the samples
    packed, as ``HostStaging.upload`` packs them), or None (the pixels are then in the array);
    ``discard()`` waits it out and returns the staging unused, for a batch that failed before
    collecting it."""

    def __init__(self, op: Any, pending: Any, sub: TensorListCPU, idx: np.ndarray, rows: np.ndarray | None,
                 staging: Any, set_up: float):
        self._op, self._pending, self._sub, self._idx, self._rows = op, pending, sub, idx, rows
        self._staging, self._set_up = staging, set_up

    def collect(self) -> tuple[tuple, float, Any]:
        try:
            with _samples_of_the_batch(self._idx):
                buf, shapes, offsets, fallback = self._pending.result()
                placed = self._staging is not None and not buf.size  # written into the staging
                if placed:
                    offsets = _engine.packed_offsets(shapes)
                if fallback.any():  # formats the engine does not decode (Pillow's, in Python)
                    if placed:
                        buf, placed = self._staging.packed(), False
                    buf, shapes, offsets = self._op._with_fallbacks(self._sub, buf, shapes, offsets, fallback,
                                                                    self._rows)
        except BaseException:
            self._give_back()
            raise
        if not placed:
            self._give_back()
        return (buf, shapes, offsets), self._pending.seconds + self._set_up, self._staging

    def discard(self) -> None:
        try:
            self._pending.result()
        except Exception:  # the batch's own error, raised by the caller, is the one that counts
            pass
        self._give_back()

    def _give_back(self) -> None:
        if self._staging is not None:
            self._staging.give_back()
            self._staging = None


class MixedDecoder:
    """The mixed backend of one decoder operator."""

    def __init__(self, op: Any):
        if op.args.get("cache_size", 0) > 0:  # only decoders.image declares the cache
            raise NotImplementedError(f"{op.label}: cache_size (the decoded-image cache) is not supported on "
                                      "the mixed backend")
        self.op = weakref.proxy(op)  # the operator owns this object
        self.decoders: list = []  # the nvImageCodec decoders (_cuda._nvimgcodec.DeviceDecoder)
        self._opened = False
        self._share: HostShare | None = None  # the host's share of the JPEGs (default hw_decoder_load)
        self._host_pool: Any = None  # the host side's threads beside the GPU decoders
        # the host's side of a batch on native threads (no Python thread wakes up for them): its share
        # of the decoding, and beside it the read-through of the GPU's JPEGs (_check_jpegs), at the
        # priority host_niceness says
        self._niceness = host_niceness()
        self._skip_pinning = one_of(SKIP_PINNING_ENV, "off", ("off", "on")) == "on"
        self._cuda_mode = one_of(CUDA_WAY_ENV, "off", ("off", "on", "starved"))
        self._cuda_way: Any = None  # the CUDA decoder beside the hardware engines, when opened
        self._host = _engine.Background("penstock-host", self._niceness)
        self._checks = _engine.Background("penstock-check", self._niceness)
        self._reserved = False
        self._jobs = Workers(2, "penstock-mixed-decode")
        self._parts: Workers | None = None  # the parts of a batch for the decoder processes
        self._seconds_per_byte: dict[int, float] = {}  # per decoder, measured: how a batch is split
        self._process_args: tuple | None = None  # the decoder processes' settings, once the GPU decodes
        self._batches = 0
        # the output batches' memory: batches of windows vary in size, by GBs on large photographs
        self._arena: Any = None

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
        workers = [w for w in (self._jobs, self._parts) if w is not None]
        for w in workers:
            w.close()
        for w in workers:
            w.join()  # no batch uses the decoders any more
        self._host.close()
        self._checks.close()
        self._opened = False
        for decoder in self.decoders:
            decoder.close()
        self.decoders = []
        self._host_pool = None
        self._cuda_way = None
        self._arena = None  # its free blocks go with it

    def _out_dtype(self) -> type:
        """The output batches' element type: float32 (0-1) or uint8, as ``dtype`` says."""
        return np.float32 if self.op.args["dtype"] == DALIDataType.FLOAT else np.uint8

    def _device_decoders(self, ws) -> list:
        """The GPU decoders, opened on first use (none: decode on the host)."""
        if not self._opened:
            self._opened = True
            if not _has_nvimgcodec():
                return []
            from .._cuda._nvimgcodec import DeviceDecoder, decoder_options
            a = self.op.args
            options = decoder_options(a["jpeg_fancy_upsampling"], ws.batch_size, a["preallocate_width_hint"],
                                      a["preallocate_height_hint"], a["hybrid_huffman_threshold"])
            hw_load = float(a["hw_decoder_load"])
            threads = _decoder_thread_budget(ws.pool.num_threads)
            adaptive = hw_load == DEFAULT_HW_LOAD
            codec_threads = _codec_threads(threads, adaptive)
            try:
                self.decoders = [DeviceDecoder(ws.gpu, options, codec_threads, hw_load, adaptive)]
            except RuntimeError as exc:
                warnings.warn(f"{self.op.label}: nvImageCodec could not start ({exc}); decoding on the host",
                              RuntimeWarning, 3)
                self.decoders = []
            if self.decoders:
                self._process_args = (codec_threads, hw_load, adaptive)
                ws.kernels.load_gather(self._out_dtype())
                # the host side's own threads: it decodes beside the CPU stage, not queued behind it
                host_threads = _host_threads(threads)
                self._host_pool = _engine.ThreadPool(host_threads, "penstock-hdec", self._niceness)
                if adaptive and self._cuda_mode != "off":
                    self._open_cuda_way(ws, options, threads)
                if hw_load == DEFAULT_HW_LOAD:
                    self._share = HostShare(_HOST_RATE_PER_THREAD * host_threads,
                                            _GPU_RATE_PER_DECODER * len(self.decoders), probe=host_threads)
        return self.decoders

    def _open_cuda_way(self, ws, options: str, threads: int) -> None:
        """nvJPEG's CUDA decoder beside the hardware engines (PENSTOCK_CUDA_DECODER), a decoder of its
        own whose part of a batch runs on a thread that waits for it (``_parts``)."""
        from .._cuda._decode_process import process_count
        from .._cuda._nvimgcodec import DeviceDecoder
        try:
            self._cuda_way = DeviceDecoder(ws.gpu, options, _codec_threads(threads, False), 0.0, False)
        except RuntimeError as exc:
            warnings.warn(f"{self.op.label}: nvJPEG's CUDA decoder could not start beside the hardware engines "
                          f"({exc}); {CUDA_WAY_ENV} has no effect", RuntimeWarning, 4)
            return
        self.decoders.append(self._cuda_way)
        self._parts = Workers(2 * (1 + process_count()), "penstock-decode-part")  # both batches in flight

    def _cuda_way_engaged(self, ws) -> bool:
        """Whether the CUDA decoder takes a part of this batch. Its decoding runs on the SMs, which a
        training model beside the pipeline needs (taking the hardware engines' overflow it cost a
        ResNet-18 on an H200 17% of its rate); while the consumer waits for its batches, though, the
        GPU idles between them, and on high-resolution photographs the hardware engines alone are
        slower than DALI's engines and CUDA decoder together."""
        return self._cuda_mode == "on" or ws.starved() > STARVED_ABOVE

    def _start_processes(self, ws) -> None:
        """Decoders in processes of their own beside the in-process one: nvImageCodec feeds the
        hardware engines one submission at a time per process, and more processes keep more of them
        busy. Started once a pipeline has run a few batches (a short-lived one does not pay for
        them); they join the split as they come up, in the background."""
        from .._cuda._decode_process import DecoderProcess, process_count
        from .._cuda._nvimgcodec import decoder_options
        count = process_count()
        if count and self._process_args is not None:
            a = self.op.args
            # each child's hardware decoder state is sized for its part of a batch, not all of it
            options = decoder_options(a["jpeg_fancy_upsampling"], -(-ws.batch_size // (count + 1)),
                                      a["preallocate_width_hint"], a["preallocate_height_hint"])
            if self._parts is None:  # (else sized for them with the CUDA decoder's)
                self._parts = Workers(2 * count, "penstock-decode-part")  # both batches in flight: a part at each
            self.decoders += [DecoderProcess(ws.gpu, options, *self._process_args, label=self.op.label)
                              for _ in range(count)]

    # -- the two sides ---------------------------------------------------------------------------
    def _host_pool_for(self, ws) -> Any:
        return ws.pool if self._host_pool is None else self._host_pool

    def _decode_host(self, ws, src: TensorListCPU, idx: np.ndarray, crop: np.ndarray | None, windows: np.ndarray,
                     shapes: np.ndarray, upload: Any) -> _HostDecoding:
        """Starts decoding samples ``idx`` on the host's thread, into pinned staging when they are
        uploaded (``_staging``). Getting the staging counts as the part's time and in the host's rate
        (``_host_part``): a part of whole high-resolution images needs hundreds of MB of it, pinned as
        the part first grows."""
        start = time.perf_counter()
        staging = self._staging(ws, upload, windows, shapes, idx)
        set_up = time.perf_counter() - start
        sub = _subset(src, idx)
        args = self.op.args
        rows = None if crop is None else _engine.take_rows(crop, idx)
        pending = _engine.decode_images_later(
            self._host, self._host_pool_for(ws), sub._buf, sub._shapes, sub._offsets, int(args["output_type"]),
            args["adjust_orientation"], rows, args["use_fast_idct"], args["jpeg_fancy_upsampling"],
            self.op.max_pixels, args["accept_corrupt_jpeg"], None if staging is None else staging.views,
            None if staging is None else staging.places)
        return _HostDecoding(self.op, pending, sub, idx, rows, staging, set_up)

    def _staging(self, ws, upload: Any, windows: np.ndarray, shapes: np.ndarray, idx: np.ndarray) -> Any:
        """Pinned memory for the host's pixels of samples ``idx`` (their windows) when they are
        uploaded: decoded there, they reach the device without a copy on the host (on an H100 beside
        ResNet-18 that copy took the mixed decoder's thread 4.9 ms a batch). In blocks of one size
        (``HostStaging``), so the pool stops pinning whatever the parts' sizes."""
        if upload is None or not len(idx):
            return None
        window_shapes = _engine.with_columns(_engine.take_rows(shapes, idx), 0, _engine.take_rows(windows, idx),
                                             values_first=2)  # (h, w) of the window, C
        return HostStaging(ws.gpu, window_shapes)

    # -- one batch --------------------------------------------------------------------------------
    def decode(self, ws, src: TensorListCPU, shapes: np.ndarray, crop: np.ndarray | None) -> Any:
        """The output batch, allocated now and filled once its decoding finished: decoding runs on
        background workers (two batches in flight, so the GPU decoder always has the next one
        queued); the GPU decoders write into the batch on their own streams, and what the host
        decoded is copied in from its staging as the job collects it (``_deliver``; into a float
        batch, gathered in when the GPU stage first uses the batch, ``_deferred``)."""
        if crop is not None:
            check_windows(crop, shapes)  # before the GPU's gather reads around a window outside the image
        args = self.op.args
        if not self._reserved:
            self._reserved = True
            self._reserve(ws)
            ws.gpu.on_close(self._release)  # the workers (and the GPU decoders) go with the pipeline
        n = len(src)
        output_type = int(args["output_type"])
        gpu_ok = _is_jpeg(src) if output_type in _GPU_OUTPUT_TYPES else np.zeros(n, bool)
        if gpu_ok.any() and not self._device_decoders(ws):
            gpu_ok[:] = False
        self._batches += 1
        if self._batches == PROCESSES_AFTER_BATCHES + 1:
            self._start_processes(ws)
        if crop is None:  # the whole images: (0, 0, H, W), made by the engine (numpy gives the GIL away)
            windows = _engine.with_columns(zero_rows(n, 4), 2, shapes, count=2)
        else:  # this batch's windows (y, x, h, w), read only from here on
            windows = np.ascontiguousarray(crop, np.int64)
        lifting = None  # the way the host's share was split, if it was
        if self._share is not None and gpu_ok.any():
            lifting = self._give_host_its_share(src, windows, shapes, gpu_ok)
        gpu_idx = np.nonzero(gpu_ok)[0]
        host_idx = np.nonzero(~gpu_ok)[0]
        out_shapes = _engine.with_columns(shapes, 0, windows, values_first=2)  # (h, w) of the window, C
        dtype = self._out_dtype()
        if self._arena is None:
            self._arena = ws.gpu.batch_arena()
        out, ready = self._arena.new_batch(out_shapes, dtype, "HWC", src._source_info)  # written after `ready`
        job = self._jobs.submit(self._decode_batch, ws, src, shapes, crop, windows, gpu_idx, host_idx, out, ready,
                                lifting)
        out._deferred = lambda: self._fill(ws, out, job)
        return out

    def _give_host_its_share(self, src: TensorListCPU, windows: np.ndarray, shapes: np.ndarray,
                             gpu_ok: np.ndarray) -> bool:
        """Clears ``gpu_ok`` for the JPEGs the host decodes this time; returns the way the share was
        split (``HostShare.choose``'s ``lifting``)."""
        lengths = src._volumes()
        costs = host_cost(lengths, windows, shapes)
        chosen, lifting = self._share.choose(lengths[gpu_ok], costs[gpu_ok], float(costs[~gpu_ok].sum()))
        gpu_ok[np.nonzero(gpu_ok)[0][chosen]] = False
        return lifting

    def _decode_batch(self, ws, src, shapes, crop, windows, gpu_idx, host_idx, out, ready, lifting) -> tuple:
        """``_decode_sides``, each host part put on the device by this job's thread as it collects it
        (off the GPU stage's path, ``_deliver``). The job hands its JPEGs to the decoders at once and
        defers to the consumer's Python (``ws.defer``) only after: what comes before is a few engine
        calls, and the hardware engines idle while a job waits. Beside a training ResNet-18 on an H100
        (2026-12-07, 16 threads) the engines idled 7.9 ms a batch with the turn first and 5.8-7.0 with
        the decoders fed at once, the model training at 12,401 and 12,528 img/s against 13,669 and
        12,963; on another H100 the two were even (14,797 img/s fed at once, 14,740 with the turn first,
        3 rounds each)."""
        return self._decode_sides(ws, src, shapes, crop, windows, gpu_idx, host_idx, out, ready,
                                  functools.partial(self._deliver, ws.gpu, out, ready), lifting)

    def _deliver(self, gpu: Any, out: Any, ready: Any, idx: np.ndarray, buf: np.ndarray, shapes: np.ndarray,
                 offsets: np.ndarray, staged: Any) -> Any:
        """A host part's pixels (samples ``idx`` of the batch ``out``: ``shapes`` at ``offsets`` of
        ``buf``) on the device. Decoded into pinned staging (``staged``) for a uint8 batch, each sample
        is copied from there into its place in ``out`` after ``ready``, one engine call a staging
        block, and None is returned: no device memory beside the batch, and no gather. Else the pixels are uploaded
        (``upload_host_part``) for ``_fill``'s gather into the batch, and their device array is
        returned. A sample decoded to another shape than its place in ``out`` is its error, before
        anything is written there. (On an H200, 2026-12-07, with every part uploaded whole, CuPy's pool
        held 1.4-1.9 GB in the high-resolution train pipeline, whose host parts are dozens of random
        crops, against 0.2 GB in validation windows without host parts; peak GPU memory 7.2 GB against
        DALI's 6.4.)"""
        expected = _engine.take_rows(out._shapes, idx)
        bad = _engine.first_differing_row(shapes, expected)
        if bad >= 0:
            if staged is not None:
                staged.give_back()
            raise SampleError(int(idx[bad]), f"{self.op.label}: decoded to shape {tuple(shapes[bad])}, "
                                             f"expected {tuple(expected[bad])}")
        if staged is not None and out._buf.dtype == np.uint8:
            staged.copy_into(np.uint64(out._buf.data.ptr) + out._offsets[idx].astype(np.uint64), after=ready)
            return None
        return upload_host_part(gpu, buf, shapes, staged)

    def _decode_sides(self, ws, src, shapes, crop, windows, gpu_idx, host_idx, out, ready, upload=None,
                      lifting=None) -> tuple:
        """Both sides at once; what the GPU could not decode goes to the host afterwards. The GPU
        decoders write their samples (``gpu_idx``, split between them by bytes) into ``out``.
        Returns the samples the GPU failed on, and ``host``: per host part, its samples and their
        pixels, shapes and offsets; with ``upload``, the pixels are ``upload(idx, buf, shapes, offsets,
        staged)``'s: on the device, or None when it put them into ``out`` itself. Each side's time
        goes to the host share's rates, and the slower side's, for a batch split the way
        ``lifting``, to its choice of way; with PENSTOCK_SPLIT_SKIP_PINNING=on, not for a batch during
        which the pinned staging pool grew. It grows once, to the blocks of the parts in flight
        (hundreds of MB for whole high-resolution images, 0.4-1.2 ms a MB, the CUDA driver held
        meanwhile): counted, that growth makes the split's first trial of whole images on the host
        several times slower than its later batches, and the split keeps them on the hardware engines
        (high-resolution validation on an H100: 1-2 of 256 JPEGs a batch on the host). In a
        simulation of the split, leaving it out of the host's time alone ran away (the GPU side's
        time still held the driver's wait, so the host got ever more, the pool growing by GBs in
        seconds), as did leaving out only the batch whose own part pinned (its pinning holds the
        other batch in flight). Off by default until measured on a GPU."""
        lengths = src._volumes()
        # the host reads the GPU's JPEGs through while the GPU decodes them (a file's first epoch costs
        # about half a host decode, a later one a hash), beside its own share; a corrupt one is the
        # batch's error
        pins = ws.gpu.pinned_blocks() if self._skip_pinning else 0
        host_part = None
        if len(host_idx):
            host_part = self._decode_host(ws, src, host_idx, crop, windows, shapes, upload)
        check = len(gpu_idx) and not self.op.args["accept_corrupt_jpeg"]
        reading = self._check_jpegs(ws, src, gpu_idx) if check else None
        try:
            failed, gpu_seconds = self._decode_gpu_parts(ws, src, shapes, windows, gpu_idx, out, ready, lengths)
        except BaseException:
            if host_part is not None:
                host_part.discard()
            raise
        ws.defer()  # the decoders are done: what follows (the host's part, its upload, the check) is Python again
        host, host_seconds = [], 0.0
        if host_part is not None:
            part, host_seconds = self._host_part(host_idx, host_part, upload)
            host.append(part)
        idle = self.decoders[0].idle.take() if len(gpu_idx) else (0.0, 0.0)
        _count_split(len(gpu_idx), len(host_idx), gpu_seconds, host_seconds, bool(lifting), *idle)
        if self._share is not None and not (self._skip_pinning and ws.gpu.pinned_blocks() != pins):
            if len(gpu_idx):
                self._share.measured("gpu", float(lengths[gpu_idx].sum()), gpu_seconds)
            if host_part is not None:
                self._share.measured("host", float(host_cost(lengths[host_idx], _engine.take_rows(windows, host_idx),
                                                             _engine.take_rows(shapes, host_idx)).sum()), host_seconds)
            if lifting is not None:
                self._share.finished(lifting, float(lengths.sum()), max(gpu_seconds, host_seconds))
        if reading is not None:
            reading()
        if len(failed):
            retry = self._decode_host(ws, src, failed, crop, windows, shapes, upload)
            host.append(self._host_part(failed, retry, upload)[0])
        return failed, host

    def _decode_gpu_parts(self, ws, src, shapes, windows, gpu_idx, out, ready, lengths) -> tuple[np.ndarray, float]:
        """The GPU decoders' parts of samples ``gpu_idx``: the samples they failed on, and the
        slowest part's seconds (its own time, not its wait for the other batch's turn)."""
        orient = bool(self.op.args["adjust_orientation"])
        reverse = int(self.op.args["output_type"]) == DALIImageType.BGR

        def part(decoder: Any, positions: np.ndarray) -> tuple[np.ndarray, float]:
            i = gpu_idx[positions]
            decoded, seconds = decoder.decode(src._buf, src._offsets[i], lengths[i], _engine.take_rows(shapes, i),
                                              _engine.take_rows(windows, i), reverse, out._buf, out._offsets[i], ready,
                                              orient)
            return i[~decoded], seconds

        decoders = [d for d in self.decoders if d.usable and d is not self._cuda_way] if len(gpu_idx) else []
        large = self._for_the_cuda_decoder(ws, shapes, gpu_idx)
        if large is not None:
            decoders.append(self._cuda_way)
        part_bytes = lengths[gpu_idx]
        split = _split_by_bytes(part_bytes, self._speeds(decoders))
        if large is not None:  # its run keeps the large images; the others go to the engines'
            run = split[-1]
            split[0], split[-1] = np.sort(np.concatenate([split[0], run[~large[run]]])), run[large[run]]
            _count_cuda_part(len(split[-1]))
        # the in-process decoder's part on this thread (its parse overlaps the other batch's
        # decoding), the processes' parts on threads that wait for them
        nothing = (np.zeros(0, np.int64), 0.0)
        elsewhere = [self._parts.submit(part, decoder, positions) if len(positions) else None
                     for decoder, positions in zip(decoders[1:], split[1:])]
        parts = [part(decoders[0], split[0]) if len(split[0]) else nothing] if split else []
        parts += [nothing if f is None else f.result() for f in elsewhere]
        for decoder, positions, (_, seconds) in zip(decoders, split, parts):
            self._measured(decoder, float(part_bytes[positions].sum()), seconds)
        failed = np.concatenate([np.zeros(0, np.int64)] + [f for f, _ in parts])
        return failed, max((s for _, s in parts), default=0.0)

    def _for_the_cuda_decoder(self, ws, shapes: np.ndarray, gpu_idx: np.ndarray) -> np.ndarray | None:
        """Which of the GPU's samples ``gpu_idx`` the CUDA decoder may take this batch: the images of
        more pixels than ``hybrid_huffman_threshold``, whose Huffman decoding nvJPEG runs on the GPU;
        None when it takes none (not opened, not engaged, or no image that large). A smaller image's
        Huffman decoding runs on nvImageCodec's host threads: on an H100 (ImageNet-like photographs, 16
        threads, the pipelines alone) the CUDA decoder taking a quarter to a third of those cost train
        33% and validation 22% of their rate, and 0.25 ms more of host CPU an image."""
        if self._cuda_way is None or not len(gpu_idx) or not self._cuda_way_engaged(ws):
            return None
        sizes = _engine.take_rows(shapes, gpu_idx)
        large = sizes[:, 0] * sizes[:, 1] > int(self.op.args["hybrid_huffman_threshold"])
        return large if large.any() else None

    def _speeds(self, decoders: list) -> np.ndarray:
        """Each decoder's share of a batch's bytes: equal until its rate was measured."""
        known = [self._seconds_per_byte[id(d)] for d in decoders if id(d) in self._seconds_per_byte]
        typical = statistics.median(known) if known else 1.0  # a few numbers: numpy's median costs 30 us
        return np.array([1.0 / self._seconds_per_byte.get(id(d), typical) for d in decoders])

    def _measured(self, decoder: Any, nbytes: float, seconds: float) -> None:
        if nbytes > 0 and seconds > 0:
            now = seconds / nbytes
            before = self._seconds_per_byte.get(id(decoder), now)
            self._seconds_per_byte[id(decoder)] = 0.8 * before + 0.2 * now  # smoothed over batches

    def _host_part(self, idx: np.ndarray, decoding: _HostDecoding, upload: Any) -> tuple[tuple, float]:
        """The host's decoding of samples ``idx`` (``_decode_host``'s), its pixels put on the device when
        ``upload`` is given (``_decode_sides``), and its seconds, the upload's included (the device memory
        of an upload comes from the pool, which may grow, and freeing a block to grow waits for the
        device) and getting its staging's: a share of whole high-resolution images pins hundreds of MB a
        batch while the pool grows, and with that left out of the host's rate (tried on an H100,
        2026-12-07) validation's staging grew by 2-3 GB, 300 ms of pinning a batch, and its rate fell
        from 1,880-1,916 img/s to 607-1,619."""
        (buf, hshapes, offsets), seconds, staged = decoding.collect()
        if upload is not None:
            start = time.perf_counter()
            buf = upload(idx, buf, hshapes, offsets, staged)
            seconds += time.perf_counter() - start
        return (idx, buf, hshapes, offsets), seconds

    def _check_jpegs(self, ws, src: TensorListCPU, idx: np.ndarray) -> Callable[[], None]:
        """Starts reading the JPEGs ``idx`` (those the GPU decoded) through as the CPU decoders do,
        without making pixels; returns what raises a corrupt one's error. nvImageCodec's decoders
        decode a scan that corruption put out of step without a word, the pixels partly made up. A
        file read through once is not read again (the engine remembers its bytes): its first epoch
        costs about half a host decode (0.64 ms of 1.41 for an 87 KB photograph on one core; 0.50 of
        1.21 on another), a later one a hash of its bytes (0.01-0.04 ms). In a first epoch it is the
        host's largest work: the ~220 JPEGs of a batch of 256 the GPU decodes are 110-140 ms of a core.
        So it runs on a native thread of its own over the pipeline's threads (``num_threads``, idle in
        a GPU pipeline but for the reader's batches and the header parse), not on the host side's
        threads behind its share of the decoding, where each batch waited for both in turn."""
        sub = _subset(src, idx)
        pending = _engine.verify_jpegs_later(self._checks, ws.pool, sub._buf, sub._shapes, sub._offsets)

        def result() -> None:
            with _samples_of_the_batch(idx):
                pending.result()
        return result

    def _fill(self, ws, out: Any, job: Any) -> None:
        """On the GPU stage: waits for the decoders, then queues the gather of the host's uploaded
        parts into ``out`` (the GPU decoders' samples, and the host's copied from its staging, are there
        already, ordered on the pipeline's stream; ``_deliver`` checked every part's shapes)."""
        _, host = job.result()
        for idx, buf, hshapes, hoffsets in host:  # each uploaded part holds its windows packed
            if buf is None:  # copied into the batch already
                continue
            n = len(idx)
            windows = _engine.with_columns(zero_rows(n, 4), 2, hshapes, count=2)  # each whole part: (0, 0, h, w)
            ws.kernels.gather_images(np.uint64(buf.data.ptr) + hoffsets.astype(np.uint64),
                                     hshapes[:, 1] * hshapes[:, 2], windows, hshapes[:, 2],
                                     zero_rows(n, 1).reshape(n), out._buf, out._offsets[idx])


def upload_host_part(gpu: Any, buf: np.ndarray, shapes: np.ndarray, staged: Any) -> Any:
    """A host part's pixels (of samples ``shapes``) on the device, packed: from the pinned staging they
    were decoded into (``staged``), else from ``buf`` through ``gpu.upload``'s. Pool memory of the
    pipeline's stream, reused only after the copy that reads it."""
    if staged is not None:
        return staged.upload()
    return gpu.upload(buf[:int(_engine.shape_volumes(shapes).sum())])  # numpy's prod gives the GIL away


def check_windows(windows: np.ndarray, shapes: np.ndarray) -> None:
    """Each sample's (y, x, h, w) window lies in its (H, W, C) image, else that sample's error in the
    host decoder's words, raised before any decoding starts: a window past an edge
    (decoders.image_crop with a crop larger than the image) is an error on both backends."""
    i = _engine.first_window_outside_image(np.ascontiguousarray(windows, np.int64),
                                           np.ascontiguousarray(shapes, np.int64))
    if i >= 0:
        y, x, h, w = windows[i]
        raise SampleError(i, f"crop window (y={y}, x={x}, h={h}, w={w}) lies outside the "
                             f"{shapes[i, 0]}x{shapes[i, 1]} image")


def _decoder_thread_budget(num_threads: int) -> int:
    """What the decoder's own threads are sized from: the pipeline's ``num_threads``, but no more
    than the host cores this process may count on. With one pipeline per GPU, a rank given every
    core of the host (num_threads=64 on each of 4 GPUs) would otherwise add 48 host-decoding threads
    per rank (and, beside nvJPEG's CUDA decoder, 64 of nvImageCodec's), 448 over 64 cores beside the
    pipelines' own; the single-GPU measurements below were made with 16 cores."""
    return min(num_threads, host_cores())


def host_niceness() -> int:
    """How many steps of the OS's nice scale (Linux's, 0-19) the host side's decoding threads run below
    the process's others: ``PENSTOCK_HOST_DECODE_NICENESS``, 0 (the process's priority) unless set.
    Beside a model training on the GPU, the training loop's thread launches the model's kernels, and
    every millisecond it waits for a core the GPU may idle; the host side decodes in bursts on most of
    the host's cores. Lowered, those threads take the cores the loop leaves and still every core while
    it waits. Not the default until measured: on an H200 (2026-12-03) the training thread of a
    ResNet-18 beside the pipeline waited 0.14-0.43 ms a step for a core, and lowered pipeline threads
    changed nothing under a busy Python consumer."""
    return non_negative(NICENESS_ENV, 0, "a niceness of 0-19 (0: the process's priority)")


def _codec_threads(num_threads: int, engines_alone: bool) -> int:
    """nvImageCodec's host threads. Beside nvJPEG's CUDA decoder (a ``hw_decoder_load`` given) they
    run its Huffman decoding: the pipeline's, as DALI gives it, at least 2. The hardware engines
    alone (the default) need only the 2 that keep them fed: their threads parse and submit, and
    each one more is one more stream and thread in the CUDA driver beside the training loop's. On an
    H100 (16 host cores, ImageNet-like photographs, 16 pipeline threads) 2 instead of 16 took a
    ResNet-18 training beside the pipeline from 0.803 to 0.827 of the model alone (3 alternating
    rounds; 4 threads 0.817 and 0.819 in two calls) and left the train pipeline alone at 1.00x and
    validation at 1.04x (2 rounds), with 170 MB less device memory for train; high-res validation
    took 129-133 ms a batch with 2, 4, 8 or 16. (An H200 run of 2026-12-04, before the hardware
    engines were the default's only backend, had 16 instead of 4 at 1.04x and 1.07x on high-res,
    one pair of rounds.)"""
    return 2 if engines_alone else max(2, num_threads)


def _host_threads(num_threads: int) -> int:
    """The host side's threads beside the GPU decoder: three quarters of the pipeline's. They decode
    only the share the split gives them, sized by their measured rate, so more threads cost little
    while the GPU decoder keeps up and give the host room to take most of the batch when it does not
    (beside a training model that slows the GPU decoder down, see _image_decode_split). On an H100
    with 16 host cores and 16 pipeline threads, ResNet-18 at 176 px trained beside the pipeline at
    0.824, 0.831 and 0.828 of the model alone with 12 host threads against 0.785, 0.811 and 0.827
    with 8 (half, the count before; three calls of 2 alternating rounds, every round with 12 at
    14.6k img/s or more), 0.828 with 10 and 0.739 with 16, which leave the training loop no core;
    ResNet-50 at 224 px 0.972 against 0.968, waiting 3.8 ms a step for its batch against 7.7. The
    pipelines alone (2 rounds) ran train at 0.98x and validation at 0.93x, with 0.337 and 0.42 ms of
    host CPU an image against 0.284 and 0.309. Earlier, on an H200 (ResNet-50 train pipeline alone,
    the share capped): 2 threads 14.2k img/s, 4 22.0k, 6 23.5k; 4, 6, 8 and 10 threads 22.5k,
    22.3k, 22.0k and 22.5k in another run. Counts below 16 pipeline threads are not measured beside
    a model."""
    return max(1, num_threads * 3 // 4)


def _split_by_bytes(lengths: np.ndarray, parts: int | np.ndarray) -> list[np.ndarray]:
    """Positions 0..len-1 in consecutive runs, one per part, of encoded bytes in proportion to the
    parts' ``speeds`` (``parts`` of them, or an int: equal speeds): the decoding time follows the
    bytes more than the count. Runs may be empty."""
    speeds = np.ones(parts) if np.isscalar(parts) else np.asarray(parts, float)
    if not len(lengths) or not len(speeds):
        return []
    if len(speeds) == 1:  # one decoder takes all (numpy's split would give the GIL away)
        return [sample_positions(len(lengths))]
    ends = np.cumsum(lengths)
    fractions = np.cumsum(speeds)[:-1] / speeds.sum()
    # a sample goes to the run its middle byte falls in
    cuts = np.searchsorted(ends - lengths / 2, ends[-1] * fractions, side="right")
    return np.split(sample_positions(len(lengths)), cuts)
