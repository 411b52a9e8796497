"""The GPU side of the video operators (``device="mixed"``/``"gpu"``): decoding on the GPU's video
engines (NVDEC) through NVIDIA's PyNvVideoCodec (2.x), and where that cannot be reached, the CPU's
decoding uploaded.

PyNvVideoCodec's ``SimpleDecoder`` opens a video (a path or bytes), seeks to the keyframe before
the frames asked for and hands them out in device memory, decoded on the stream it was given
(the pipeline's). In its native output a 4:2:0 frame is NV12 (8-bit video) or P016 (10/12-bit:
16-bit samples): one buffer of luma rows and under them the interleaved chroma plane (half as
many rows), exported through DLPack; the frame shown is the buffer's top-left corner (a buffer
may have more rows or a wider pitch than the frame: the chroma plane starts after the buffer's
luma rows). Frame numbers are the CPU index's (presentation order); every frame PyNvVideoCodec
returns is checked by its timestamp, and where its indices count frames in decoding order (which
differs where a stream has B-frames) the frames are asked for by their places in decoding order.
One batched kernel (``csrc/cuda/video.cu``) converts every frame of the batch to RGB straight
into the output batch; padding frames take the fill colour in the same launch. A decoder is kept
per file (readers come back to the same files).

Which videos go to NVDEC is decided by the stream's codec (FFmpeg's codec name, whatever
software decoder PyAV chose for it) and by what this GPU's NVDEC says it decodes: PyNvVideoCodec's
``GetDecoderCaps`` (the driver's ``cuvidGetDecoderCaps``) for the codec in 4:2:0 at the stream's
bit depth, asked once per GPU, codec and depth: whether it decodes it at all and the smallest and
largest frames it takes.

A video NVDEC does not take (another codec, 4:2:2/4:4:4 samples, YCbCr output, a codec, depth or
size this GPU's NVDEC does not decode, or one PyNvVideoCodec refuses) is decoded on the CPU by
the caller and uploaded into its place in the batch; each reason is warned about once per operator.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
import warnings
from typing import Any, Callable

import numpy as np

from . import _object_store as objects
from ._video_codec import YUV420, VideoIndex

# FFmpeg's names of the codecs NVDEC may decode through PyNvVideoCodec's SimpleDecoder -> their
# members of PyNvVideoCodec's cudaVideoCodec (MPEG-4 part 2 and MJPEG, which NVDEC also has, stay
# on the CPU: PyNvVideoCodec's demuxing of AVI is not relied on)
NVDEC_CODECS = {"h264": "H264", "hevc": "HEVC", "vp8": "VP8", "vp9": "VP9", "av1": "AV1"}
KEPT_DECODERS = 16

_load_lock = threading.Lock()
_loaded: dict[str, Any] = {}


@dataclasses.dataclass(frozen=True)
class NvdecCaps:
    """What a GPU's NVDEC decodes of one codec in 4:2:0 at one bit depth (``cuvidGetDecoderCaps``)."""
    supported: bool
    min_width: int = 0
    min_height: int = 0
    max_width: int = 0
    max_height: int = 0
    max_macroblocks: int = 0   # (width / 16) * (height / 16), 0: no limit given
    why: str = ""              # where the capabilities could not be read


_caps_lock = threading.Lock()
_caps: dict[tuple[int, str, int], NvdecCaps] = {}


def nvdec_caps(nvc: Any, gpu_id: int, codec: str, bit_depth: int) -> NvdecCaps:
    """NVDEC's capabilities for ``codec`` (a key of NVDEC_CODECS) at ``bit_depth`` on GPU ``gpu_id``,
    asked of the driver once per process (GetDecoderCaps' chroma format defaults to 4:2:0)."""
    with _caps_lock:
        key = (gpu_id, codec, bit_depth)
        if key not in _caps:
            try:
                raw = nvc.GetDecoderCaps(gpuid=gpu_id, codec=getattr(nvc.cudaVideoCodec, NVDEC_CODECS[codec]),
                                         bitdepth=bit_depth)
                _caps[key] = NvdecCaps(
                    bool(raw.get("supported", raw.get("num_decoder_engines", 0))),
                    int(raw.get("width_min", 0)), int(raw.get("height_min", 0)), int(raw.get("width_max", 0)),
                    int(raw.get("height_max", 0)), int(raw.get("mb_num_max", 0)))
            except Exception as e:  # noqa: BLE001 - PyNvVideoCodec raises its own exception types
                _caps[key] = NvdecCaps(False, why=f"NVDEC's capabilities cannot be read: {type(e).__name__}: {e}")
        return _caps[key]


def load_pynvvideocodec() -> tuple[Any, str]:
    """PyNvVideoCodec, or None and why it cannot be used here."""
    with _load_lock:
        if "module" not in _loaded:
            try:
                import PyNvVideoCodec as nvc  # noqa: N813
                _loaded["module"], _loaded["why"] = nvc, ""
            except Exception as e:  # noqa: BLE001 - a driver without NVDEC (libnvcuvid) fails its import
                missing = isinstance(e, ModuleNotFoundError) and e.name == "PyNvVideoCodec"
                first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
                _loaded["module"] = None
                _loaded["why"] = ("PyNvVideoCodec is not installed (pip install PyNvVideoCodec)" if missing
                                  else f"PyNvVideoCodec cannot start: {type(e).__name__}: {first_line}")
        return _loaded["module"], _loaded["why"]


def nvdec_refusal(index: VideoIndex, pixel_format: str, channels: int,
                  caps_of: Callable[[str, int], NvdecCaps]) -> str:
    """Why this video is not for NVDEC ("" when it is); ``caps_of(codec, bit_depth)``: NVDEC's
    capabilities."""
    if pixel_format != "rgb24" or channels != 3:
        return "NVDEC's frames are converted to RGB only"
    if index.codec not in NVDEC_CODECS:
        return f"NVDEC does not decode {index.codec} here"
    if index.pix_fmt not in YUV420:
        return f"NVDEC's path takes 4:2:0 video, not {index.pix_fmt or 'an unknown pixel format'}"
    bit_depth = YUV420[index.pix_fmt][0]
    caps = caps_of(index.codec, bit_depth)
    if caps.why:
        return caps.why
    if not caps.supported:
        return f"this GPU's NVDEC does not decode {index.codec} ({bit_depth}-bit 4:2:0)"
    w, h = index.width, index.height
    if w < caps.min_width or h < caps.min_height or (caps.max_width and w > caps.max_width) or \
            (caps.max_height and h > caps.max_height):
        return (f"this GPU's NVDEC decodes {index.codec} from {caps.min_width}x{caps.min_height} to "
                f"{caps.max_width}x{caps.max_height}, not {w}x{h}")
    if caps.max_macroblocks and ((w + 15) // 16) * ((h + 15) // 16) > caps.max_macroblocks:
        return f"this GPU's NVDEC decodes {index.codec} up to {caps.max_macroblocks} macroblocks, not {w}x{h}"
    return ""


def presented_frames(decoder: Any, index: VideoIndex, unique: list[int], what: str) -> tuple[list | None, str]:
    """PyNvVideoCodec's decoded frames numbered ``unique`` (sorted, in presentation order), each
    checked by its timestamp against the demuxer's, or None and why not. PyNvVideoCodec's frame
    indices are taken as presentation order first; where the timestamps say they count frames in
    decoding order instead (the two differ where a stream has B-frames), the frames are asked for
    by their places in decoding order, and checked again."""
    wanted = index.pts[unique]
    asks = [list(unique)]
    in_decoding_order = [int(p) for p in index.decode_position[unique]]
    if in_decoding_order != asks[0]:
        asks.append(in_decoding_order)
    for ask in asks:
        decoded = decoder.get_batch_frames_by_index(ask)
        if len(decoded) != len(ask):
            return None, f"PyNvVideoCodec returned {len(decoded)} of {len(ask)} frames of {what}"
        got = np.array([int(frame.timestamp) for frame in decoded], np.int64)
        if np.array_equal(got, wanted):
            return decoded, ""
    k = int(np.flatnonzero(got != wanted)[0])
    return None, (f"PyNvVideoCodec's frame for frame {unique[k]} of {what} has the timestamp {got[k]}, not the "
                  f"demuxer's {wanted[k]}: its frame numbers do not agree with the demuxer's")


def surface_layout(plane: Any, height: int, width: int) -> tuple[int, int]:
    """(luma rows, bytes per sample) of an NV12 (1) or P016 (2) buffer of a frame of ``height`` x
    ``width`` at its top-left: luma rows, then half as many rows of interleaved chroma, each row of
    ``width`` samples, of bytes or 16-bit samples (P016 as uint16, or as bytes twice as many).
    (0, 0) where the buffer is none of these."""
    rows = plane.shape[0] * 2 // 3
    if plane.ndim != 2 or rows + (rows + 1) // 2 != plane.shape[0] or rows < height:
        return 0, 0
    samples = plane.shape[1] * plane.dtype.itemsize
    if plane.dtype.kind != "u" or plane.strides[1] != plane.dtype.itemsize or samples not in (width, 2 * width):
        return 0, 0
    return rows, samples // width


class VideoDevice:
    """Decodes the batches of one mixed/gpu video operator on NVDEC where it can."""

    def __init__(self, label: str):
        self.label = label
        self._warned: set[str] = set()
        self._decoders: collections.OrderedDict = collections.OrderedDict()
        self._refused: dict[str, str] = {}  # files PyNvVideoCodec failed on -> why
        self._in_flight: collections.deque = collections.deque()  # (event, what the kernel still reads)

    def _warn(self, why: str) -> None:
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn(f"{self.label}: decoding on the CPU and uploading the frames: {why}", RuntimeWarning, 4)

    def takes(self, gpu_id: int, sources: list, indices: list[VideoIndex], pixel_format: str,
              channels: int) -> list[bool]:
        """Per video, whether NVDEC (of GPU ``gpu_id``) is to decode it; warns once per reason it is not."""
        nvc, why = load_pynvvideocodec()
        if nvc is None:
            self._warn(why)
            return [False] * len(indices)
        taken = []
        for source, index in zip(sources, indices):
            why = nvdec_refusal(index, pixel_format, channels,
                                lambda codec, depth: nvdec_caps(nvc, gpu_id, codec, depth))
            if not why and isinstance(source, str):
                why = self._refused.get(source, "")
            if why:
                self._warn(why)
            taken.append(not why)
        return taken

    def _decoder(self, nvc: Any, ws: Any, source: Any) -> Any:
        key = source if isinstance(source, str) else None
        if key is not None and key in self._decoders:
            self._decoders.move_to_end(key)
            return self._decoders[key]
        if not isinstance(source, str):
            data = np.ascontiguousarray(source).tobytes()
        elif objects.is_url(source):  # PyNvVideoCodec demuxes a path FFmpeg opens or bytes: the object's
            data = objects.read_object(self.label, source)
        else:
            data = source
        decoder = nvc.SimpleDecoder(data, gpu_id=ws.gpu.device_id, cuda_stream=ws.stream.ptr,
                                    use_device_memory=True, need_scanned_stream_metadata=True,
                                    decoder_cache_size=1, output_color_type=nvc.OutputColorType.NATIVE)
        if key is not None:
            self._decoders[key] = decoder
            while len(self._decoders) > KEPT_DECODERS:
                self._decoders.popitem(last=False)
        return decoder

    def _surfaces(self, nvc: Any, ws: Any, source: Any, index: VideoIndex, unique: list[int], what: str) -> tuple:
        """(decoder, {frame number: NV12 device array}) of ``unique`` (sorted frame numbers), or
        (None, why) where PyNvVideoCodec cannot decode them."""
        import cupy
        try:
            decoder = self._decoder(nvc, ws, source)
            count = len(decoder)
            if count != index.frames:
                return None, (f"PyNvVideoCodec counts {count} frames in {what}, the demuxer {index.frames}: "
                              "frame numbers would not agree")
            decoded, why = presented_frames(decoder, index, unique, what)
            if decoded is None:
                return None, why
            with ws.gpu:  # the consumer stream DLPack is told of: the pipeline's
                planes = [cupy.from_dlpack(frame) for frame in decoded]
        except Exception as e:  # noqa: BLE001 - PyNvVideoCodec raises its own exception types
            if isinstance(source, str):
                self._decoders.pop(source, None)
            return None, f"PyNvVideoCodec cannot decode {what}: {type(e).__name__}: {e}"
        for f, plane in zip(unique, planes):
            if not surface_layout(plane, index.height, index.width)[0]:
                return None, (f"PyNvVideoCodec gave frame {f} of {what} as {plane.dtype}{tuple(plane.shape)}, "
                              f"not NV12 or P016 of a {index.width}x{index.height} frame")
        return (decoder, decoded), dict(zip(unique, planes))

    def decode_batch(self, ws: Any, sources: list, indices: list[VideoIndex], frames: list[np.ndarray],
                     shapes: np.ndarray, what: list[str], colour: np.ndarray, taken: list[bool]) -> tuple[Any, list]:
        """The FHWC uint8 batch on the device with ``frames[i]`` of each video i NVDEC takes (-1:
        ``colour``), and the videos left for the caller to fill (not taken, or refused by
        PyNvVideoCodec: those are warned about)."""
        nvc, _ = load_pynvvideocodec()
        while self._in_flight and self._in_flight[0][0].done:
            self._in_flight.popleft()
        out = ws.new_batch(shapes, np.uint8, "FHWC", None)
        src_addr, pitches, layouts, heights, widths, full, dst_addr, keep, left = [], [], [], [], [], [], [], [], []
        base = int(out._buf.data.ptr)
        for i, (source, index, wanted) in enumerate(zip(sources, indices, frames)):
            if not taken[i]:
                left.append(i)
                continue
            unique = sorted({int(f) for f in wanted if f >= 0})
            surfaces: dict = {}
            if unique:
                held, surfaces = self._surfaces(nvc, ws, source, index, unique, what[i])
                if held is None:
                    if isinstance(source, str):
                        self._refused[source] = surfaces
                    self._warn(surfaces)
                    left.append(i)
                    continue
                keep.append(held)
            frame_bytes = index.height * index.width * 3
            for k, f in enumerate(wanted):
                plane = surfaces.get(int(f))
                src_addr.append(0 if plane is None else int(plane.data.ptr))
                pitches.append(0 if plane is None else int(plane.strides[0]))
                layouts.append((0, 1) if plane is None else surface_layout(plane, index.height, index.width))
                dst_addr.append(base + int(out._offsets[i]) + k * frame_bytes)
                heights.append(index.height)
                widths.append(index.width)
                full.append(int(index.full_range))
        if src_addr:
            rows, sample_bytes = np.array(layouts, np.int64).T
            ws.kernels.nv12_to_rgb(np.array(src_addr, np.uint64), np.array(pitches), rows, sample_bytes,
                                   np.array(heights), np.array(widths), np.array(full), np.array(dst_addr, np.uint64),
                                   colour)
        event = ws.gpu.record()
        self._in_flight.append((event, keep))  # decoders and surfaces live until the conversion has run
        return out, left
