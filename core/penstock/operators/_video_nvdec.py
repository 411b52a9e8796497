"""The GPU side of the video operators (``device="mixed"``/``"gpu"``): decoding on the GPU's video
engines (NVDEC) through NVIDIA's PyNvVideoCodec, and where that cannot be reached, the CPU's
decoding uploaded.

PyNvVideoCodec's ``SimpleDecoder`` opens a video (a path or bytes), seeks to the keyframe before
the frames asked for and hands them out as NV12 surfaces in device memory, on the pipeline's
stream. The frame numbers are the same as the CPU's index (presentation order; PyAV's demuxing
indexes the videos in both cases). One batched kernel (``csrc/cuda/video.cu``) converts every
frame of the batch to RGB straight into the output batch; padding frames take the fill colour
in the same launch. A decoder is kept per file (readers come back to the same files).
"""
from __future__ import annotations

import collections
import threading
import warnings
from typing import Any

import numpy as np

from ._video_codec import VideoIndex

# FFmpeg codec names NVDEC decodes (8-bit 4:2:0)
NVDEC_CODECS = {"h264": "H264", "hevc": "HEVC", "vp9": "VP9", "vp8": "VP8", "av1": "AV1", "mpeg4": "MPEG4",
                "mjpeg": "JPEG", "mpeg2video": "MPEG2"}
KEPT_DECODERS = 16

_load_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def load_pynvvideocodec() -> tuple[Any, str]:
    """PyNvVideoCodec, or None and why it cannot be used here."""
    with _load_lock:
        if "module" not in _loaded:
            try:
                import PyNvVideoCodec as nvc  # noqa: N813
                _loaded["module"], _loaded["why"] = nvc, ""
            except ImportError:
                _loaded["module"], _loaded["why"] = None, "PyNvVideoCodec is not installed (pip install PyNvVideoCodec)"
            except Exception as e:  # noqa: BLE001 - a driver without NVDEC (libnvcuvid) fails its import
                _loaded["module"], _loaded["why"] = None, f"PyNvVideoCodec cannot start: {e}"
        return _loaded["module"], _loaded["why"]


class VideoDevice:
    """Decodes the batches of one mixed/gpu video operator on NVDEC, or says it cannot."""

    def __init__(self, label: str):
        self.label = label
        self._warned = False
        self._decoders: collections.OrderedDict = collections.OrderedDict()
        self._in_flight: collections.deque = collections.deque()  # (event, frames the kernel still reads)

    def decodes(self, indices: list[VideoIndex]) -> bool:
        """Whether NVDEC takes these videos; warns once when it does not (they are decoded on the
        CPU and uploaded)."""
        nvc, why = load_pynvvideocodec()
        if nvc is not None:
            unsupported = sorted({ix.codec for ix in indices if ix.codec not in NVDEC_CODECS})
            if not unsupported:
                return True
            why = f"NVDEC does not decode {', '.join(unsupported)}"
        if not self._warned:
            warnings.warn(f"{self.label}: decoding on the CPU and uploading the frames: {why}", RuntimeWarning, 3)
            self._warned = True
        return False

    def _decoder(self, nvc: Any, ws: Any, source: Any) -> Any:
        key = source if isinstance(source, str) else None
        if key is not None and key in self._decoders:
            self._decoders.move_to_end(key)
            return self._decoders[key]
        data = source if isinstance(source, str) else np.ascontiguousarray(source).tobytes()
        decoder = nvc.SimpleDecoder(data, gpu_id=ws.gpu.device_id, cuda_stream=ws.stream.ptr,
                                    use_device_memory=True, need_scanned_stream_metadata=1,
                                    output_color_type=nvc.OutputColorType.NATIVE)
        if key is not None:
            self._decoders[key] = decoder
            while len(self._decoders) > KEPT_DECODERS:
                self._decoders.popitem(last=False)
        return decoder

    def decode_batch(self, ws: Any, sources: list, indices: list[VideoIndex], frames: list[np.ndarray],
                     shapes: np.ndarray, what: list[str], colour: np.ndarray) -> Any:
        """The FHWC uint8 batch on the device: ``frames[i]`` of video i (-1: ``colour``)."""
        import cupy
        nvc, _ = load_pynvvideocodec()
        while self._in_flight and self._in_flight[0][0].done:
            self._in_flight.popleft()
        out = ws.new_batch(shapes, np.uint8, "FHWC", None)
        src_addr, pitches, heights, widths, full, dst_addr, keep = [], [], [], [], [], [], []
        base = int(out._buf.data.ptr)
        for i, (source, index, wanted) in enumerate(zip(sources, indices, frames)):
            unique = sorted({int(f) for f in wanted if f >= 0})
            try:
                decoded = self._decoder(nvc, ws, source).get_batch_frames_by_index(unique) if unique else []
            except Exception as e:  # noqa: BLE001 - PyNvVideoCodec raises its own exception types
                from .._operator import SampleError
                raise SampleError(i, f"{self.label}: {what[i]}: NVDEC decoding failed: {e}") from None
            surfaces = {f: cupy.from_dlpack(frame) for f, frame in zip(unique, decoded)}
            keep.append(decoded)
            frame_bytes = index.height * index.width * 3
            for k, f in enumerate(wanted):
                surface = surfaces.get(int(f))
                src_addr.append(0 if surface is None else int(surface.data.ptr))
                pitches.append(0 if surface is None else int(surface.strides[0]))
                dst_addr.append(base + int(out._offsets[i]) + k * frame_bytes)
                heights.append(index.height)
                widths.append(index.width)
                full.append(int(index.full_range))
        if src_addr:
            ws.kernels.nv12_to_rgb(np.array(src_addr, np.uint64), np.array(pitches), np.array(heights),
                                   np.array(widths), np.array(full), np.array(dst_addr, np.uint64), colour)
        event = ws.gpu.record()
        self._in_flight.append((event, keep))  # the surfaces stay alive until the conversion has run
        return out
