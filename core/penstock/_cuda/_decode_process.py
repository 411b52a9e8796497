"""nvImageCodec in a process of its own, for the mixed decoders.

nvImageCodec's Python binding takes the GIL back several times per image while it decodes, so in a
process whose other threads run Python (the pipeline's stages, the training loop) a decode call
waits on the interpreter: measured on an H200, one thread spinning in Python took a 256-image call
from 16 ms to seconds. Here the decoder runs in a child process (started with ``python -m``, so the
user's script is not imported again) and writes each sample's window straight into device memory
the pipeline owns, shared with CUDA IPC:

* encoded bytes go through a memfd (one host copy), requests and replies through a
  ``SOCK_SEQPACKET`` socket pair (the memfd travels with the slot's first request);
* a *slot* is one batch's worth of device memory (``cudaMalloc``, IPC handle) plus an
  interprocess event the pipeline records once its gather has read the slot; the child's stream
  waits for that event before writing the slot again, so neither side blocks the other's GPU work;
* the child finishes a batch on its own stream (a host wait there costs the pipeline nothing) and
  replies with the samples it could not decode, which the pipeline decodes on the host, and the time
  it took (the mixed decoder balances its host share by it).
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import itertools
import mmap
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

_EVENT_FLAGS = 0x2 | 0x4  # cudaEventDisableTiming | cudaEventInterprocess
_MAX_MESSAGE = 1 << 16
_LIMIT_STACK_SIZE = 0x00  # cudaLimitStackSize
_TABLE_COLUMNS = 10  # per sample: start, length, window (y, x, h, w), shape (H, W, C), slot offset


def _send(sock: socket.socket, obj: Any, fds: tuple = ()) -> None:
    socket.send_fds(sock, [pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)], list(fds))


def _recv(sock: socket.socket) -> tuple[Any, list]:
    data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 4)
    if not data:
        raise EOFError("the decoder process closed its socket")
    return pickle.loads(data), fds


def _room(nbytes: int) -> int:
    return 1 << max(16, int(nbytes - 1).bit_length())


class Slot:
    """Device memory for one batch's decoded windows, and the host memory for its encoded bytes."""

    def __init__(self, cp: Any, index: int, capacity: int, encoded_capacity: int):
        rt = cp.cuda.runtime
        self.index = index
        self.capacity = capacity
        self.ptr = rt.malloc(capacity)
        self.mem_handle = rt.ipcGetMemHandle(self.ptr)
        self.event = rt.eventCreateWithFlags(_EVENT_FLAGS)  # recorded after the pipeline's gather
        self.event_handle = rt.ipcGetEventHandle(self.event)
        self.encoded_capacity = encoded_capacity
        self.memfd = os.memfd_create(f"penstock-decode-{index}", os.MFD_CLOEXEC)
        os.ftruncate(self.memfd, encoded_capacity)
        self.encoded = mmap.mmap(self.memfd, encoded_capacity)
        self.encoded_address = np.frombuffer(self.encoded, np.uint8).ctypes.data
        self.announced = False
        self.busy = False

    def free(self, cp: Any) -> None:
        rt = cp.cuda.runtime
        rt.eventDestroy(self.event)
        rt.free(self.ptr)
        self.encoded.close()
        os.close(self.memfd)


class DecodeProcess:
    """The pipeline's side: slots, requests, and a thread that hands replies to their futures."""

    def __init__(self, ctx: Any, options: str, cpu_threads: int, hw_load: float, adaptive: bool):
        """``hw_load``: the share of JPEGs for the hardware decoder (the rest: the CUDA decoder);
        ``adaptive``: nvImageCodec moves the split from there to keep both busy."""
        self.ctx = ctx
        self.cp = ctx.cp
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # the child finds penstock (and CuPy, nvImageCodec) where this process found them
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "penstock._cuda._decode_process", str(child.fileno()), str(ctx.device_id),
             options, str(cpu_threads), repr(float(hw_load)), str(int(adaptive))], pass_fds=(child.fileno(),), env=env, stdin=subprocess.DEVNULL)
        child.close()
        self.sock = parent
        try:
            hello, _ = _recv(self.sock)
        except (EOFError, OSError):
            hello = {"error": f"it exited with code {self.proc.wait()}"}
        if "error" in hello:
            self.proc.wait()
            self.sock.close()
            raise RuntimeError(f"the GPU decoder process could not start: {hello['error']}")
        self._slots: list[Slot] = []
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._ids = itertools.count()
        self._closed = False
        self._receiver = threading.Thread(target=self._receive, name="penstock-decode-replies", daemon=True)
        self._receiver.start()

    def _receive(self) -> None:
        try:
            while True:
                reply, _ = _recv(self.sock)
                with self._lock:
                    future = self._pending.pop(reply["id"])
                if "error" in reply:
                    future.set_exception(RuntimeError(reply["error"]))
                else:
                    future.set_result((reply["failed"], reply["seconds"]))
        except (EOFError, OSError) as exc:
            with self._lock:
                pending, self._pending = self._pending, {}
            for future in pending.values():
                if not self._closed:
                    future.set_exception(RuntimeError(f"the GPU decoder process stopped ({exc}); "
                                                      f"exit code {self.proc.poll()}"))
                else:
                    future.cancel()

    def _take_slot(self, nbytes: int, encoded_bytes: int) -> Slot:
        with self._lock:
            for slot in self._slots:
                if not slot.busy and slot.capacity >= nbytes and slot.encoded_capacity >= encoded_bytes:
                    slot.busy = True
                    return slot
            # a new slot, sized to the next power of two so that few batches ever need another
            with self.ctx.device:
                slot = Slot(self.cp, len(self._slots), _room(nbytes), _room(encoded_bytes))
            slot.busy = True
            self._slots.append(slot)
            return slot

    def submit(self, packed: np.ndarray, starts: np.ndarray, lengths: np.ndarray, windows: np.ndarray,
               shapes: np.ndarray, out_offsets: np.ndarray, nbytes: int,
               orient: bool) -> tuple[Slot, concurrent.futures.Future]:
        """Decodes the encoded samples ``packed[starts[k]:starts[k] + lengths[k]]``; sample k's
        window ``windows[k]`` (y, x, h, w) of an image expected to be ``shapes[k]`` (H, W, 3)
        lands at byte ``out_offsets[k]`` of the slot. The future gives the positions that could
        not be decoded there, and the seconds the process spent decoding. ``packed``: contiguous
        uint8 (copied from by address)."""
        if packed.dtype != np.uint8 or not packed.flags.c_contiguous:
            raise ValueError("the encoded batch must be a contiguous uint8 buffer")
        # the per-sample table goes first in the shared host memory (a socket message has a small
        # size limit), then the bytes from the first sample's start to the last one's end
        first = int(starts.min(initial=0))
        used = int((starts + lengths).max(initial=0)) - first
        table = np.column_stack([starts - first, lengths, windows, shapes, out_offsets]).astype(np.int64)
        at = (table.nbytes + 63) // 64 * 64
        slot = self._take_slot(nbytes, at + used)
        np.frombuffer(slot.encoded, np.uint8, table.nbytes)[...] = table.reshape(-1).view(np.uint8)
        # the one copy, without the GIL: several requests copy at once while the pipeline runs Python
        ctypes.memmove(slot.encoded_address + at, packed.ctypes.data + first, used)
        future: concurrent.futures.Future = concurrent.futures.Future()
        request = {"op": "decode", "id": next(self._ids), "slot": slot.index, "orient": bool(orient),
                   "samples": len(table), "encoded_at": at}
        fds: tuple = ()
        if not slot.announced:
            request.update(mem=slot.mem_handle, event=slot.event_handle, capacity=slot.capacity,
                           encoded_capacity=slot.encoded_capacity)
            fds = (slot.memfd,)
            slot.announced = True
        with self._lock:
            self._pending[request["id"]] = future
        with self._send_lock:
            _send(self.sock, request, fds)
        return slot, future

    def release(self, slot: Slot) -> None:
        """The pipeline's stream has queued its reads of ``slot``: the slot may be reused, and the
        child's next write into it waits (on the GPU) for those reads."""
        with self.ctx.device:
            self.cp.cuda.runtime.eventRecord(slot.event, self.ctx.stream.ptr)
        with self._lock:
            slot.busy = False

    def close(self) -> None:
        """Stops the child (after the pipeline's stream finished with the slots) and frees them."""
        if self._closed:
            return
        self._closed = True
        try:
            with self._send_lock:
                _send(self.sock, {"op": "quit"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.ctx.stream.synchronize()
        with self.ctx.device:
            for slot in self._slots:
                slot.free(self.cp)
        self._slots = []


# -- the child ----------------------------------------------------------------------------------
def _serve(sock: socket.socket, device_id: int, options: str, cpu_threads: int, hw_load: float,
           adaptive: bool) -> None:
    try:
        import cupy as cp
        from nvidia import nvimgcodec as nv
        from ._runtime import DeviceContext
        ctx = DeviceContext(device_id)
        with ctx.device:
            # each process holds a context: reserve no per-thread stack up front (the driver grows it
            # for the kernels that need it) instead of the default 1 KiB for every resident thread
            cp.cuda.runtime.deviceSetLimit(_LIMIT_STACK_SIZE, 0)
        policy = nv.LoadHintPolicy.ADAPTIVE_MINIMIZE_IDLE_TIME if adaptive else nv.LoadHintPolicy.FIXED
        backends = [nv.Backend(nv.BackendKind.HW_GPU_ONLY, load_hint=hw_load, load_hint_policy=policy),
                    nv.Backend(nv.BackendKind.GPU_ONLY)]
        with ctx.device:
            decoder = nv.Decoder(device_id=device_id, max_num_cpu_threads=cpu_threads, backends=backends,
                                 options=options)
        params = {orient: nv.DecodeParams(apply_exif_orientation=orient, color_spec=nv.ColorSpec.SRGB,
                                          allow_any_depth=False) for orient in (False, True)}
    except Exception as exc:  # noqa: BLE001 - reported to the pipeline, which falls back to the host
        _send(sock, {"error": f"{type(exc).__name__}: {exc}"})
        return
    _send(sock, {"ready": True})
    rt = cp.cuda.runtime
    slots: dict[int, dict] = {}
    images: list = []
    with ctx.device:
        while True:
            try:
                request, fds = _recv(sock)
            except (EOFError, OSError):
                break
            if request["op"] == "quit":
                break
            try:
                k = request["slot"]
                if "mem" in request:
                    if k in slots:
                        rt.ipcCloseMemHandle(slots[k]["ptr"])
                    ptr = rt.ipcOpenMemHandle(request["mem"])
                    mem = cp.cuda.UnownedMemory(ptr, request["capacity"], None, device_id)
                    slots[k] = {"ptr": ptr, "out": cp.ndarray((request["capacity"],), np.uint8,
                                                              cp.cuda.MemoryPointer(mem, 0)),
                                "event": rt.ipcOpenEventHandle(request["event"]),
                                "encoded": mmap.mmap(fds[0], request["encoded_capacity"])}
                    os.close(fds[0])
                slot = slots[k]
                start = time.perf_counter()
                failed = _decode_into(ctx, nv, decoder, params[request.get("orient", True)], slot, request, images)
                _send(sock, {"id": request["id"], "failed": failed, "seconds": time.perf_counter() - start})
            except Exception as exc:  # noqa: BLE001 - this batch fails in the pipeline, with the reason
                _send(sock, {"id": request["id"], "error": f"GPU decoder process: {type(exc).__name__}: {exc}"})
        ctx.stream.synchronize()
        for slot in slots.values():
            rt.ipcCloseMemHandle(slot["ptr"])


def _decode_into(ctx: Any, nv: Any, decoder: Any, params: Any, slot: dict, request: dict, images: list) -> list:
    m = request["samples"]
    table = np.frombuffer(slot["encoded"], np.int64, m * _TABLE_COLUMNS).reshape(m, _TABLE_COLUMNS).copy()
    starts, lengths, windows, shapes, out = table[:, 0], table[:, 1], table[:, 2:6], table[:, 6:9], table[:, 9]
    encoded = np.frombuffer(slot["encoded"], np.uint8, offset=request["encoded_at"])
    streams = [nv.CodeStream(encoded[s:s + n]) for s, n in zip(starts, lengths)]
    stream = ctx.stream
    # images of the previous batch are free: that batch finished on this stream before its reply
    reuse = images[:len(streams)] if len(images) >= len(streams) else None
    decoded = (decoder.decode(streams, images=reuse, params=params, cuda_stream=stream.ptr) if reuse is not None
               else decoder.decode(streams, params=params, cuda_stream=stream.ptr))
    decoded = list(decoded)
    ok = [k for k, img in enumerate(decoded)
          if img is not None and tuple(int(v) for v in img.shape) == tuple(shapes[k])]
    failed = sorted(set(range(len(decoded))) - set(ok))
    if ok:
        pointers = np.zeros(len(ok), np.uint64)
        pitches = np.zeros(len(ok), np.int64)
        for j, k in enumerate(ok):
            iface = decoded[k].__cuda_array_interface__
            pointers[j] = iface["data"][0]
            pitches[j] = iface["strides"][0] if iface.get("strides") else iface["shape"][1] * iface["shape"][2]
        ok = np.array(ok)
        # the pipeline's gather from this slot's previous batch comes first
        ctx.cp.cuda.runtime.streamWaitEvent(stream.ptr, slot["event"], 0)
        ctx.kernels.gather_images(pointers, pitches, windows[ok], shapes[ok, 2], np.zeros(len(ok), np.int64),
                                  slot["out"], out[ok])
    stream.synchronize()
    images[:] = [img for img in decoded if img is not None]
    return failed


if __name__ == "__main__":
    _sock = socket.socket(fileno=int(sys.argv[1]))
    _serve(_sock, int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1")
