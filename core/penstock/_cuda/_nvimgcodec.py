"""nvImageCodec in the pipeline's process, for the mixed decoders.

The engine calls nvImageCodec's C API (``_engine.ImageCodecDecoder``, opened at run time) a whole
batch at a time without the GIL, so the decoder runs beside the pipeline's Python threads with no
process or CUDA context of its own. Measured on an H200 (256 ImageNet-like JPEGs per call, hardware
backend): one decoder 24.8k img/s with 207 MB of device memory, output included; two 22.7k.

A ``DeviceDecoder`` decodes on a stream of its own. Each sample decodes to its window only, a
region of its code stream, as DALI's mixed decoders have it (nvImageCodec gives a region to nvJPEG's
hardware engines where nvJPEG says they support it, else to its CUDA decoder where that is among the
backends, ``jpeg_backends``; a sample no backend decodes is left to the host). A uint8 RGB window is
its output sample as it stands: a batch of them decodes straight into the output batch, in one call.
Float or BGR windows decode into scratch memory (a run of samples at a time), from which one kernel
converts each window into the output. Either way the first write into the output waits (on the GPU)
for the pipeline's stream to have allocated the output batch, and the pipeline's stream then waits
for an event recorded after the last. The native call queues those waits, the kernel and the event
itself, with the decoder's turn held, so the next batch's decoding starts as soon as one ends,
without Python code in between.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
import time
import weakref
from typing import Any

import numpy as np

from .. import _engine
from .._batch import zero_rows
from ._context import DeviceContext
from ._pools import grown, own_device_memory, pinned, settings
from ._stream_queue import pinned_view, record_event, wait_event
from .kernels import budget_runs

CPU_ONLY = -99999  # nvImageCodec's device id for its CPU backends (host buffers)
BACKENDS = {"cpu": 1, "gpu": 2, "hybrid": 3, "hw": 4}
FIXED, ADAPTIVE = 2, 3  # load hint policies
# Windows that need converting decode through scratch memory this large at most, in runs, each run
# one call to nvImageCodec: a call has a start-up and a tail in which the hardware engines idle, and
# calls cannot overlap. Measured on an H200 (ResNet-50 train pipeline, whole ImageNet-sized images
# through scratch then): runs of 96 MB (two calls) 21.6k and 22.1k img/s, peak 733 MB; one call
# 23.5k and 24.1k img/s, 789 MB.
SCRATCH_BYTES = 256 << 20
# Scratch grows to a batch's need with this much to spare (a growth waits for the stream), and at
# least by the device growth factor (backend.SetDeviceBufferGrowthFactor).
_SCRATCH_SPARE = 1 / 32


def writes_directly(dtype: Any, reverse: bool) -> bool:
    """Whether nvImageCodec's decoding of a window is its output sample as it stands (uint8 RGB,
    an h x w x 3 image at its offset): it then writes into the output batch; other outputs go
    through scratch memory and a kernel that converts them."""
    return np.dtype(dtype) == np.uint8 and not reverse


def library_dir() -> str | None:
    """The folder of nvImageCodec's library (the ``nvidia-nvimgcodec-cu12/13`` wheel), or None."""
    try:
        spec = importlib.util.find_spec("nvidia.nvimgcodec")
    except ImportError:  # no nvidia namespace at all
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if os.path.exists(os.path.join(folder, "libnvimgcodec.so.0")):
            return folder
    return None


def library_version() -> int:
    """nvImageCodec's version as its header encodes it (major * 1000 + minor * 100 + patch: 0.9.0 is
    900), from the installed wheel's metadata (importing its Python module would load its codecs);
    -1 when it is not installed."""
    for distribution in ("nvidia-nvimgcodec-cu13", "nvidia-nvimgcodec-cu12"):
        try:
            parts = importlib.metadata.version(distribution).split(".")
        except importlib.metadata.PackageNotFoundError:
            continue
        major, minor, patch = (int(p) if p.isdigit() else 0 for p in (parts + ["0", "0"])[:3])
        return major * 1000 + minor * 100 + patch
    return -1


def decoder_options(fancy_upsampling: bool, batch_size: int, width_hint: int = 0, height_hint: int = 0,
                    hybrid_huffman_threshold: int = 1000000) -> str:
    """nvImageCodec's options for the mixed decoders' JPEGs. Chroma is upsampled as asked, in both
    of its JPEG decoders: nvImageCodec's own default interpolates, and DALI's mixed decoders do not.
    The hardware decoder's state is sized for a batch of ``batch_size`` images of the hinted size
    when it is created, as DALI asks. The CUDA decoder decodes the Huffman codes of JPEGs of more
    than ``hybrid_huffman_threshold`` pixels with nvJPEG's hybrid (GPU-assisted) decoder."""
    fancy = int(bool(fancy_upsampling))
    return " ".join([f"nvjpeg_hw_decoder:fancy_upsampling={fancy}", f"nvjpeg_cuda_decoder:fancy_upsampling={fancy}",
                     f"nvjpeg_cuda_decoder:hybrid_huffman_threshold={int(hybrid_huffman_threshold) % 2 ** 32}",
                     f"nvjpeg_hw_decoder:preallocate_batch_size={max(1, int(batch_size))}",
                     f"nvjpeg_hw_decoder:preallocate_width_hint={max(1, int(width_hint))}",
                     f"nvjpeg_hw_decoder:preallocate_height_hint={max(1, int(height_hint))}"])


def open_decoder(device_id: int, cpu_threads: int, backends: list, options: str = "") -> Any:
    """A native decoder: ``backends`` = [(name, load_hint, policy)] in order of preference."""
    folder = library_dir()
    if folder is None:
        raise RuntimeError("nvImageCodec is not installed")
    return _engine.ImageCodecDecoder(os.path.join(folder, "libnvimgcodec.so.0"), os.path.join(folder, "extensions"),
                                     int(device_id), int(cpu_threads),
                                     [(BACKENDS[name], float(hint), int(policy)) for name, hint, policy in backends],
                                     options)


CUDA_DECODER = ("hybrid", 1.0, FIXED)  # nvJPEG's CUDA decoder, as nvImageCodec declares it


def jpeg_backends(hw_load: float, adaptive: bool) -> list:
    """The nvImageCodec backends a mixed decoder's JPEGs go to, in order. nvImageCodec declares
    nvJPEG's CUDA decoder a hybrid (CPU + GPU) backend; its GPU-only kind has no JPEG decoder (opened
    alone on an H200 it fails with ARCH_MISMATCH). A load given by the user is DALI's split: that
    share for the hardware engines, the rest for the CUDA decoder. The default keeps the SMs for the
    model: the hardware engines alone, adapting, beside the host's share of the JPEGs (the CUDA
    decoder taking the engines' overflow cost a ResNet-18 training beside the pipeline 17% of its
    rate on an H200: 11,231 img/s against 13,604, one round each). A load of 0 is the CUDA decoder
    alone."""
    if adaptive:
        return [("hw", hw_load, ADAPTIVE)]
    if hw_load <= 0:
        return [CUDA_DECODER]
    return [("hw", hw_load, FIXED), CUDA_DECODER]


def open_jpeg_decoder(device_id: int, cpu_threads: int, hw_load: float, adaptive: bool, options: str) -> Any:
    """A native decoder over ``jpeg_backends``; on a GPU without hardware JPEG engines (no backend
    of the default opens), over the CUDA decoder alone."""
    try:
        return open_decoder(device_id, cpu_threads, jpeg_backends(hw_load, adaptive), options)
    except RuntimeError as without_engines:
        if not adaptive:  # the CUDA decoder was in the list
            raise
        try:
            return open_decoder(device_id, cpu_threads, [CUDA_DECODER], options)
        except RuntimeError:
            raise without_engines from None


_open_decoders: weakref.WeakSet = weakref.WeakSet()  # for codec_memory()


def codec_memory() -> dict[str, int]:
    """The memory nvImageCodec's codecs hold for reuse in this process's open GPU decoders, summed:
    device and pinned blocks and bytes, and the allocations a block given back before served; and
    how many decoders are open."""
    total = dict.fromkeys(("decoders", "device_blocks", "device_bytes", "pinned_blocks", "pinned_bytes", "reused"), 0)
    for decoder in list(_open_decoders):
        native = decoder.native
        if native is None:
            continue
        total["decoders"] += 1
        for kind, counts in native.memory().items():
            total[f"{kind}_blocks"] += counts["blocks"]
            total[f"{kind}_bytes"] += counts["bytes"]
            total["reused"] += counts["reused"]
    return total


class IdleClock:
    """The time a decoder went without a call's turn: from the end of one call's turn to the start of
    the next one's (the engines without work from this process, a wait for the stream included); and
    of that, the time before the next call had come at all (unfed: its batch was not there yet, not
    in its preparation: the code streams' staging, the parse, the wait for the turn)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_end: float | None = None
        self._idle = self._unfed = 0.0

    def turn(self, ended: float, seconds: float, arrived: float | None = None) -> None:
        """A call's turn ended at ``ended`` (``time.perf_counter()``) after ``seconds``; the call came
        to the decoder at ``arrived`` (None: a later turn of a call already there)."""
        with self._lock:
            if self._last_end is not None:
                began = ended - seconds
                self._idle += max(0.0, began - self._last_end)
                if arrived is not None:
                    self._unfed += max(0.0, min(arrived, began) - self._last_end)
            self._last_end = ended

    def take(self) -> tuple[float, float]:
        """The seconds idle since the last ``take``, and of them the seconds unfed."""
        with self._lock:
            taken = (self._idle, self._unfed)
            self._idle = self._unfed = 0.0
        return taken


class DeviceDecoder:
    """One nvImageCodec decoder on the pipeline's device, with a stream and scratch memory of its own."""

    usable = True  # as a decoder process once it started (_decode_process.DecoderProcess)

    def __init__(self, ctx: Any, options: str, cpu_threads: int, hw_load: float, adaptive: bool):
        """``hw_load``: the share of JPEGs for the hardware engines, the rest for the CUDA decoder;
        ``adaptive``: the hardware engines alone, nvImageCodec adapting their share (``jpeg_backends``)."""
        self.ctx = ctx
        self.own = DeviceContext(ctx.device_id)  # the decoder's stream, kernels and staging
        with ctx.device:
            self.native = open_jpeg_decoder(ctx.device_id, cpu_threads, hw_load, adaptive, options)
        # copies the code streams into pinned memory
        self._staging = _engine.ThreadPool(max(1, cpu_threads), "penstock-staged")
        self._scratch: Any = None  # the windows being decoded (cupy.cuda.Memory); reused in stream order
        self._scratch_users = 0  # batches that may still queue work on the scratch
        self._scratch_change = threading.Condition()
        self.idle = IdleClock()
        _open_decoders.add(self)

    def decode(self, encoded: np.ndarray, starts: np.ndarray, lengths: np.ndarray, shapes: np.ndarray,
               windows: np.ndarray, reverse: bool, out: Any, out_offsets: np.ndarray, ready: Any,
               orient: bool) -> tuple[np.ndarray, float]:
        """Decodes JPEG k (``encoded[starts[k]:starts[k] + lengths[k]]``, an image of ``shapes[k]``
        (H, W, 3)) and writes its window ``windows[k]`` (y, x, h, w; channels reversed if
        ``reverse``) to ``out`` (uint8 or float32 device array) at element ``out_offsets[k]``,
        once the event ``ready`` has passed (None: at once). Returns which samples were written
        (the pipeline's stream waits for them before anything it queues afterwards), and the
        seconds the decoder spent on them, not counting the waits for another batch's turn and
        for the work queued on its stream before (the hardware engines' host wait).

        Everything is prepared before the native calls, which take the decoder's turn themselves
        and queue, with it held, the wait for ``ready``, the decoding, the gather of the windows
        and the event that ends the batch: two batches take turns there without the GIL."""
        arrived = time.perf_counter()
        staged, encoded, starts = self._staged(encoded, starts, lengths)
        done = None
        try:
            decoded, seconds, done = self._decode(encoded, starts, lengths, shapes, windows, reverse, out,
                                                  out_offsets, ready, orient, arrived)
        except BaseException:
            done = self.own.record()  # after what was queued, which may read the code streams
            raise
        finally:
            pinned.give_back(staged, done)
        return decoded, seconds

    def _staged(self, encoded: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[Any, np.ndarray,
                                                                                             np.ndarray]:
        """The code streams packed into a pinned staging block (its block, the packed view and its
        starts). nvImageCodec copies each code stream to the GPU, and a copy from pageable memory
        holds the calling thread until it is done: on an H200 (ResNet-18 training fed by the
        mixed decoder) 215 such copies a batch held nvImageCodec's threads 5.4 ms and the GPU 1.1 ms.
        From pinned memory they are queued, and the GPU reads while the threads go on."""
        lengths = np.ascontiguousarray(lengths, np.int64)
        packed = _engine.packed_offsets(lengths.reshape(-1, 1))  # numpy's zeros would give the GIL away (calloc)
        block = pinned.take(max(int(lengths.sum()), 1))
        view = pinned_view(block)
        try:
            _engine.copy_ranges(self._staging, encoded, np.asarray(starts, np.int64), view, packed, lengths)
        except BaseException:
            pinned.give_back(block, None)  # nothing was queued from it
            raise
        return block, view, packed

    def _decode(self, encoded: np.ndarray, starts: np.ndarray, lengths: np.ndarray, shapes: np.ndarray,
                windows: np.ndarray, reverse: bool, out: Any, out_offsets: np.ndarray, ready: Any,
                orient: bool, arrived: float) -> tuple[np.ndarray, float, Any]:
        """``decode`` of code streams in pinned memory (the call came at ``arrived``); also returns the
        event after the last work that reads them."""
        # each sample decodes to its window only (a region of its code stream), an h x w image
        parsed = self.native.parse(encoded, starts, lengths, shapes, orient, windows)
        try:
            return self._decode_parsed(parsed, starts, shapes, windows, reverse, out, out_offsets, ready, arrived)
        finally:
            # the code streams freed without the GIL: freed with the batch's Python object, a batch's
            # ~280 held a decoding job's GIL ~0.1 ms on an H100's host (py-spy's samples, 2026-12-07)
            parsed.close()

    def _decode_parsed(self, parsed: Any, starts: np.ndarray, shapes: np.ndarray, windows: np.ndarray,
                       reverse: bool, out: Any, out_offsets: np.ndarray, ready: Any,
                       arrived: float) -> tuple[np.ndarray, float, Any]:
        """``_decode`` of the batch's parsed code streams."""
        n = len(starts)
        own = self.own
        pitches = windows[:, 3] * 3
        direct = writes_directly(out.dtype, reverse)
        if direct:  # each window is its output sample as it stands: one call, no scratch, no gather
            sizes = zero_rows(n, 1).reshape(n)
            runs = [(0, n)]
            dst = np.uint64(out.data.ptr) + out_offsets.astype(np.uint64) * np.uint64(out.itemsize)
        else:
            # the windows go through the scratch memory in runs of at most SCRATCH_BYTES, each run
            # gathered out (converted, channels reversed) before any other call decodes into the
            # same memory (stream order)
            sizes = windows[:, 2] * pitches
            runs = budget_runs(sizes, SCRATCH_BYTES)
        decoded = np.zeros(n, bool)
        seconds = 0.0
        with own.device:
            own.cp.cuda.runtime.setDevice(own.device_id)  # the driver calls need the context current here
            done = own.cp.cuda.Event(block=False, disable_timing=True)
            base = self._use_scratch(max(int(sizes[a:b].sum()) for a, b in runs))
            try:
                for k, (a, b) in enumerate(runs):
                    wait = ready.ptr if k == 0 and ready is not None else 0
                    if direct:
                        # what the pipeline's stream did before ``ready`` may still use the output's
                        # memory: the decoding waits for it
                        done_now, took = self.native.decode(parsed, dst, pitches, own.stream.ptr, wait_event=wait,
                                                            then=None, then_wait_event=0, done_event=done.ptr)
                    else:
                        offsets = np.empty(n, np.int64)  # read only in the run: [a, b)
                        offsets[a] = 0
                        np.cumsum(sizes[a:b - 1], out=offsets[a + 1:b])
                        in_run = np.zeros(n, bool)
                        in_run[a:b] = True
                        dst = np.where(in_run, np.uint64(base) + offsets.astype(np.uint64), np.uint64(0))
                        # every window of the run is gathered: those that failed to decode are the
                        # host's, written over them later on the pipeline's stream; only the gather
                        # waits for ``ready`` (the decoding into scratch does not wait for the
                        # pipeline's kernels queued before, the hardware engines idling meanwhile)
                        gather = own.kernels.gather_images_launch(
                            dst[a:b], pitches[a:b], _engine.with_columns(zero_rows(b - a, 4), 2, windows[a:b],
                                                                         values_first=2),  # (0, 0, h, w)
                            shapes[a:b, 2], np.full(b - a, int(reverse), np.int64), out, out_offsets[a:b])
                        done_now, took = self.native.decode(
                            parsed, dst, pitches, own.stream.ptr, wait_event=0, then=gather.native(),
                            then_wait_event=wait, done_event=done.ptr if k == len(runs) - 1 else 0)
                    self.idle.turn(time.perf_counter(), took, arrived if k == 0 else None)
                    decoded |= done_now
                    seconds += took
            except BaseException:
                # runs queued before the failure still write into the output: the pipeline's stream
                # waits for them, or the output's memory, freed with the failed iteration, could be
                # handed out again (stream-ordered, on that stream) while they write
                record_event(done, own.stream)
                wait_event(self.ctx.stream, done)
                raise
            finally:
                self._release_scratch()
        wait_event(self.ctx.stream, done)
        return decoded, seconds, done

    def _use_scratch(self, nbytes: int) -> int:
        """The scratch memory's address, ``nbytes`` at least, for one more batch until it calls
        ``_release_scratch``. It is an allocation of its own, not the pool's (the pool would keep
        every outgrown block beside the larger one); it grows once the batches before are done."""
        with self._scratch_change:
            if nbytes and (self._scratch is None or self._scratch.size < nbytes):
                while self._scratch_users:
                    self._scratch_change.wait()
                if self._scratch is not None:
                    self.own.stream.synchronize()  # the last gathers from the old scratch are done
                old = self._scratch.size if self._scratch is not None else 0
                self._scratch = None
                with self.own.device:
                    self._scratch = own_device_memory(
                        self.own.cp, grown(old, int(nbytes * (1 + _SCRATCH_SPARE)), settings.device_growth))
            self._scratch_users += 1
            return self._scratch.ptr if self._scratch is not None else 0

    def _release_scratch(self) -> None:
        with self._scratch_change:
            self._scratch_users -= 1
            self._scratch_change.notify_all()

    def close(self) -> None:
        """After the pipeline's stream finished and no batch decodes any more: the decoder, then the
        scratch memory."""
        with self._scratch_change:
            self.own.stream.synchronize()
            self.native = None
            self._scratch = None
