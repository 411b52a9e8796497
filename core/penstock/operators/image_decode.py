"""Image decoders: ``decoders.image``, ``image_random_crop``, ``image_crop``, ``image_slice`` and
``peek_image_shape``.

JPEG, PNG, BMP and PNM are decoded natively (``_engine.decode_images``: one call per batch,
region-of-interest decoding for the crop variants). TIFF, WebP, JPEG 2000 and compressed BMP
are flagged by the kernel and decoded here through Pillow (an optional dependency). Output is
HWC uint8 (or float ``v / 255``, or another integer type's range: _scaled) in the requested
``output_type``, rotated to the EXIF display orientation unless ``adjust_orientation=False``;
crop windows are in display coordinates.

Beyond DALI, two guards against files that would give wrong data or exhaust memory:

* ``accept_corrupt_jpeg=False`` (default): a JPEG in which libjpeg-turbo finds corrupt data it
  can decode around (a scan cut short, a bad Huffman code, a missing restart marker, bytes left
  over) fails as its sample's error, so ``on_error`` decides: decoded, part of it would be made
  up (grey rows, smeared blocks). The crop decoders read the file past the window to its end
  marker (entropy decoding only), so they refuse what ``decoders.image`` refuses wherever the
  window lies: a scan that flipped bytes put out of step shows only at its end. The engine
  remembers the files read through by a hash of their bytes, so a file's later crops (later
  epochs) stop below the window. DALI's CPU decoder
  decodes such files, printing libjpeg's warning; ``accept_corrupt_jpeg=True`` does the same
  (without the print, and crops stop decoding below the window). A file that simply
  ends too early fails either way, as in DALI. On the mixed backend it holds for every JPEG:
  nvImageCodec's GPU decoders decode such a scan without a word (hardware engines and CUDA
  decoder alike, on an H200), so the host reads the files they decode through beside them, once
  per file (by the same hash), and a corrupt one fails its batch as on the CPU.
* The pipeline's ``max_image_pixels``: an image whose header claims more pixels fails before
  anything is decoded (decompression bombs), naming the file and its size. Formats decoded
  through Pillow are also subject to Pillow's own ``Image.MAX_IMAGE_PIXELS``.
"""
from __future__ import annotations

import io

import numpy as np

from .. import _engine
from .._on_error import ON_ERROR_ARG
from .._operator import Operator, SampleError, Workspace
from .._registry import Arg, ArgType, ArgumentValueError, OpSchema, register
from ..types import DALIDataType, DALIImageType, to_numpy_type
from ..tensors import TensorListCPU
from .._batch import contiguous, empty_batch
from .crop import CROP_ARGS, crop_window_sizes
from .properties import check_shape_type
from .slice import WINDOW_ARGS, check_slice_args, slice_window

_MIXED_ONLY = "only affects the mixed (GPU) backend; no effect on the CPU"
_RESERVE = "mixed backend: reserved up front in the memory pool (bytes); no effect on the CPU"

_DECODER_ARGS = [
    Arg("output_type", ArgType.IMAGE_TYPE, DALIImageType.RGB,
        "colour format of the output: RGB, BGR, GRAY (BT.601 luma; a colour JPEG's is its stored Y), "
        "YCbCr (BT.601 limited range) "
        "or ANY_DATA (the channels as stored)"),
    Arg("dtype", ArgType.DTYPE, DALIDataType.UINT8,
        "output type: UINT8; FLOAT (values / 255); INT8, UINT16, INT16, UINT32 or INT32 (0..255 scaled "
        "to 0..the type's maximum; CPU only)"),
    Arg("adjust_orientation", ArgType.BOOL, True, "rotate/flip to the EXIF display orientation"),
    Arg("use_fast_idct", ArgType.BOOL, False, "JPEG: faster, less exact integer IDCT"),
    Arg("jpeg_fancy_upsampling", ArgType.BOOL, False,
        "make the mixed backend upsample chroma like the CPU one (the CPU always does)"),
    Arg("hw_decoder_load", ArgType.FLOAT, 0.65,
        "mixed backend: share of each batch's JPEGs for the GPU's hardware JPEG decoder; nvImageCodec's "
        "CUDA decoder takes the rest. The default leaves the SMs to the model: the hardware decoder takes "
        "the JPEGs alone, nvImageCodec adapting its share (the CUDA decoder on a GPU without one), and the "
        "host decodes a share of the JPEGs whose windows are small (random crops), sized from both sides' "
        "measured rates, and of whole images too when the GPU side falls far behind; any other value is "
        "fixed, with no host share"),
    Arg("hybrid_huffman_threshold", ArgType.INT, 1000000,
        "mixed backend: JPEGs of more pixels than this have their Huffman codes decoded by nvJPEG's hybrid "
        "decoder, smaller ones on the host (an unsigned 32-bit number: -1 is the largest); no effect on the CPU"),
    Arg("preallocate_width_hint", ArgType.INT, 0,
        "mixed backend: expected image width; a batch of such images is reserved in the memory pool"),
    Arg("preallocate_height_hint", ArgType.INT, 0,
        "mixed backend: expected image height; a batch of such images is reserved in the memory pool"),
    Arg("device_memory_padding", ArgType.INT, 16 << 20, "device memory " + _RESERVE),
    Arg("host_memory_padding", ArgType.INT, 8 << 20, "pinned host memory " + _RESERVE),
    Arg("device_memory_padding_jpeg2k", ArgType.INT, 0, "device memory " + _RESERVE),
    Arg("host_memory_padding_jpeg2k", ArgType.INT, 0, "pinned host memory " + _RESERVE),
    Arg("affine", ArgType.BOOL, True, _MIXED_ONLY + " (thread affinity)"),
    Arg("accept_corrupt_jpeg", ArgType.BOOL, False,
        "beyond DALI: decode JPEGs in which libjpeg-turbo finds corrupt data (a scan cut short, bad Huffman "
        "codes, missing restart markers), filling in what it cannot decode, as DALI does; by default such a "
        "file is an error of its sample, which on_error handles"),
    ON_ERROR_ARG,
]

# The decoded-image cache: an argument of decoders.image only (DALI's crop variants do not have it).
_CACHE_ARGS = [
    Arg("cache_size", ArgType.INT, 0, "decoded-image cache (MB): not supported on the mixed backend "
        "(NotImplementedError); no effect on the CPU"),
    Arg("cache_type", ArgType.STR, "", _MIXED_ONLY + " (decoded-image cache)"),
    Arg("cache_threshold", ArgType.INT, 0, _MIXED_ONLY + " (decoded-image cache)"),
    Arg("cache_debug", ArgType.BOOL, False, _MIXED_ONLY + " (decoded-image cache)"),
    Arg("cache_batch_copy", ArgType.BOOL, True, _MIXED_ONLY + " (decoded-image cache)"),
]

# The crop decoder takes crop's window arguments (decoding never pads outside the image); the depth ones
# as DALI's does: crop_d needs crop_h and crop_w, and neither changes a 2-D image's window.
_CROP_ARGS = [arg for arg in CROP_ARGS if arg.name in ("crop", "crop_h", "crop_w", "crop_d", "crop_pos_x",
                                                       "crop_pos_y", "crop_pos_z", "rounding")]

_RANDOM_CROP_ARGS = [
    Arg("random_area", ArgType.FLOAT_LIST, (0.08, 1.0),
        "range [min, max] of the window's area fraction; one value v means [v, v]"),
    Arg("random_aspect_ratio", ArgType.FLOAT_LIST, (0.75, 4 / 3),
        "range [min, max] of the window's w/h; one value v means [v, v]"),
    Arg("num_attempts", ArgType.INT, 10,
        "draws before falling back to a clamped whole image (0 or less: the fallback at once)"),
]


IMAGE = OpSchema("decoders.Image", "Decodes images (JPEG, PNG, BMP, PNM, TIFF, WebP, JPEG 2000) to HWC.",
                 args=_DECODER_ARGS + _CACHE_ARGS, devices=("cpu", "mixed"), legacy_names=("ImageDecoder",),
    moved_from=("experimental.decoders",), aliases_hidden=False)
IMAGE_RANDOM_CROP = OpSchema(
    "decoders.ImageRandomCrop", "Decodes a random window (area and aspect ratio ranges) of each image.",
    args=_DECODER_ARGS + _RANDOM_CROP_ARGS, devices=("cpu", "mixed"), is_random=True,
    legacy_names=("ImageDecoderRandomCrop",),
    moved_from=("experimental.decoders",), aliases_hidden=False)
IMAGE_CROP = OpSchema("decoders.ImageCrop", "Decodes a fixed-size window of each image.",
                      args=_DECODER_ARGS + _CROP_ARGS, devices=("cpu", "mixed"),
                      legacy_names=("ImageDecoderCrop",),
    moved_from=("experimental.decoders",), aliases_hidden=False)
IMAGE_SLICE = OpSchema(
    "decoders.ImageSlice", "Decodes a window given by anchor/shape inputs or start/end arguments.",
    args=_DECODER_ARGS + WINDOW_ARGS, min_inputs=1, max_inputs=3, devices=("cpu", "mixed"),
    legacy_names=("ImageDecoderSlice",),
    moved_from=("experimental.decoders",), aliases_hidden=False)
PEEK_IMAGE_SHAPE = OpSchema(
    "PeekImageShape", "The (H, W, C) shape an image decodes to, from its header only.",
    args=[Arg("dtype", ArgType.DTYPE, DALIDataType.INT64, "output type"),
          Arg("adjust_orientation", ArgType.BOOL, True, "report the EXIF display orientation"),
          Arg("image_type", ArgType.IMAGE_TYPE, DALIImageType.RGB, "colour format that gives C")],
    moved_from=("experimental",), aliases_hidden=False)


# ---- Pillow fallback --------------------------------------------------------------------------

def _pillow():
    try:
        from PIL import Image, ImageOps
    except ImportError:
        return None
    return Image, ImageOps


_FALLBACK_FORMATS = ((b"II*\0", "TIFF"), (b"MM\0*", "TIFF"), (b"RIFF", "WebP"), (b"BM", "BMP"),
                     (b"\0\0\0\x0cjP  ", "JPEG 2000"), (b"\xff\x4f\xff\x51", "JPEG 2000"))


def _format_name(blob: bytes) -> str:
    return next((name for magic, name in _FALLBACK_FORMATS if blob.startswith(magic)), "image")


def _pillow_open(op: Operator, blob: bytes, i: int, adjust: bool, max_pixels: int | None = None):
    """The decoded Pillow image of a fallback sample, in display orientation when adjust; an image
    of more than ``max_pixels`` pixels fails before it is decoded."""
    mods = _pillow()
    if mods is None:
        raise SampleError(i, f"decoding {_format_name(blob)} images needs Pillow, which is not installed "
                             "(pip install pillow)")
    Image, ImageOps = mods
    try:
        img = Image.open(io.BytesIO(blob))
        if max_pixels is not None and img.width * img.height > max_pixels:
            raise SampleError(i, f"{_format_name(blob)} image of {img.height}x{img.width} = {img.width * img.height} "
                                 f"pixels is over the pipeline's limit of max_image_pixels={max_pixels} (a "
                                 "decompression bomb, or larger images than expected: raise the limit, or set it "
                                 "to None)")
        img.load()
        return ImageOps.exif_transpose(img) if adjust else img
    except SampleError:
        raise
    except Exception as exc:  # Pillow raises many types for corrupt files
        raise SampleError(i, f"invalid {_format_name(blob)} image: {exc}") from None


_MODE_CHANNELS = {"I;16": 1, "L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


def _stored_mode(img) -> str:
    """Which of _MODE_CHANNELS a Pillow image decodes to (the kernel's ANY_DATA rules)."""
    mode = img.mode
    if mode.startswith("I;16"):
        return "I;16"
    if mode in ("1", "L", "I", "F"):
        return "L"
    if mode in ("LA", "La"):
        return "LA"
    if mode in ("RGBA", "RGBa", "PA") or (mode == "P" and "transparency" in img.info):
        return "RGBA"
    return "RGB"


def _stored_pixels(img) -> np.ndarray:
    """HWC uint8 with the stored channels; 16-bit grey keeps its high byte."""
    mode = _stored_mode(img)
    if mode == "I;16":
        return (np.asarray(img, np.uint16) >> 8).astype(np.uint8)[..., None]
    arr = np.asarray(img.convert(mode))
    return arr.reshape(arr.shape[0], arr.shape[1], -1)


def _convert_type(px: np.ndarray, output_type: int) -> np.ndarray:
    """The kernel's colour conversions (image_decode_finish.cpp), for Pillow-decoded pixels."""
    if output_type == DALIImageType.ANY_DATA:
        return px
    rgb = px[..., :3] if px.shape[2] >= 3 else np.repeat(px[..., :1], 3, axis=2)
    if output_type == DALIImageType.RGB:
        return np.ascontiguousarray(rgb)
    if output_type == DALIImageType.BGR:
        return np.ascontiguousarray(rgb[..., ::-1])
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    if output_type == DALIImageType.GRAY:
        if px.shape[2] <= 2:
            return np.ascontiguousarray(px[..., :1])
        return ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16).astype(np.uint8)[..., None]
    m = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]]) / 255
    fixed = lambda v: np.trunc(np.asarray(v) * (1 << 20) + np.where(np.asarray(v) < 0, -0.5, 0.5)).astype(np.int64)
    acc = rgb.astype(np.int64) @ fixed(m).T + fixed([16.5, 128.5, 128.5])
    return (acc >> 20).astype(np.uint8)


def _channels(output_type: int, stored: int) -> int:
    return stored if output_type == DALIImageType.ANY_DATA else 1 if output_type == DALIImageType.GRAY else 3


# ---- the decoders -------------------------------------------------------------------------------

# How many times the resize must still shrink a DCT-scaled decode (see _dct_targets): with 6,
# decode+resize stays within 1 level of DALI's unfused result on photo-like JPEGs of 333x500 to
# 1024x768 resized to 256..64 (2 allows 7 levels, 4 allows 2).
_DCT_MARGIN = 6

# The integer output types besides UINT8: 0..255 maps onto 0..the type's maximum.
_SCALED_INTEGERS = (DALIDataType.INT8, DALIDataType.UINT16, DALIDataType.INT16, DALIDataType.UINT32,
                    DALIDataType.INT32)
_OUTPUT_DTYPES = (DALIDataType.UINT8, DALIDataType.FLOAT) + _SCALED_INTEGERS


def _scaled(buf: np.ndarray, dtype: DALIDataType) -> np.ndarray:
    """Decoded uint8 values in an integer type: v * (1/255) * the type's maximum, rounded to nearest
    (ties to even) and saturated. The arithmetic is float32's, as DALI's is: UINT32 maps 1 to
    16843010, not 0xFFFFFFFF / 255 = 16843009."""
    out_type = to_numpy_type(dtype)
    unit = np.arange(256, dtype=np.float32) * np.float32(1 / 255)
    levels = np.rint(unit * np.float32(np.iinfo(out_type).max)).astype(np.float64)
    return np.minimum(levels, np.iinfo(out_type).max).astype(out_type)[buf]


class _DecoderBase(Operator):
    """Decodes a batch; the crop variants choose a window per sample from the display shapes."""
    crops = False  # subclasses that implement windows()
    pairs_iterations = True
    fills_later = True  # (device="mixed": _image_decode_mixed)

    def __init__(self, node, pipeline) -> None:
        super().__init__(node, pipeline)
        self.max_pixels: int | None = pipeline.max_image_pixels

    def setup(self) -> None:
        dtype = self.args["dtype"]
        if dtype not in _OUTPUT_DTYPES:
            raise ValueError(f"{self.label}: dtype {dtype.name} is not supported "
                             f"({', '.join(t.name for t in _OUTPUT_DTYPES)})")
        if self.device == "mixed" and dtype in _SCALED_INTEGERS:
            raise NotImplementedError(f"{self.label}: dtype {dtype.name} is not supported on the mixed "
                                      "backend (UINT8 or FLOAT)")

    def windows(self, ws, shapes: np.ndarray) -> np.ndarray:
        """[N, 4] (y, x, h, w) windows in display coordinates, from [N, 3] display shapes."""
        raise NotImplementedError

    def link(self, consumers) -> None:
        # Pixels bound only for a downscaling resize are decoded smaller in the DCT domain
        # (JPEG), so no work goes into pixels the resize would average away.
        from .resize import Resize
        users = consumers[0]
        self._resize = (users[0] if len(users) == 1 and isinstance(users[0], Resize)
                        and users[0].takes_prescaled_input() and self.args["dtype"] == DALIDataType.UINT8
                        else None)

    def _dct_targets(self, ws, regions: np.ndarray) -> np.ndarray:
        """Per sample the size to decode to: the region shrunk by the smallest of 1/8, 1/4, 1/2
        (the scales libjpeg-turbo's SIMD IDCT serves) that leaves the resize at least
        _DCT_MARGIN times to shrink. With less, the DCT's box-like scaling, not the resize's
        antialiasing filter, would shape the pixels, and they would stray from an unfused decode
        (up to 55 levels at 512 -> 256)."""
        plan_ws = Workspace([], {}, ws.batch_size, ws.iteration, ws.epoch, ws.pool, None, self._resize)
        out_sizes, _ = self._resize.plan(plan_ws, "HW", regions.astype(np.float64))
        scale = np.ones(len(regions))
        for s in (0.5, 0.25, 0.125):
            scale = np.where((np.floor(regions * s) >= _DCT_MARGIN * out_sizes).all(axis=1), s, scale)
        return np.ceil(regions * scale[:, None]).astype(np.int64)

    def run(self, ws):
        if ws.gpu is not None:
            return [self._run_mixed(ws)]
        src = _encoded(self, ws)
        output_type = int(self.args["output_type"])
        adjust = self.args["adjust_orientation"]
        fused = getattr(self, "_resize", None) is not None
        shapes = display_shapes(self, ws, src, adjust, max_pixels=self.max_pixels) if self.crops or fused else None
        crop = self.windows(ws, shapes) if self.crops else None
        if fused:
            regions = crop[:, 2:4] if crop is not None else shapes[:, :2]
            region_origin = crop[:, :2] if crop is not None else np.zeros_like(regions)
            target = self._dct_targets(ws, regions)
        else:
            target = None
        decoded = _engine.decode_images(ws.pool, src._buf, src._shapes, src._offsets, output_type, adjust,
                                        crop, target, self.args["use_fast_idct"], return_geometry=fused,
                                        max_pixels=self.max_pixels,
                                        accept_corrupt_jpeg=self.args["accept_corrupt_jpeg"])
        buf, shapes, offsets, fallback = decoded[:4]
        if fallback.any():
            buf, shapes, offsets = self._with_fallbacks(src, buf, shapes, offsets, fallback, crop)
        if self.args["dtype"] == DALIDataType.FLOAT:
            buf = np.divide(buf, np.float32(255), dtype=np.float32)
        elif self.args["dtype"] in _SCALED_INTEGERS:
            buf = _scaled(buf, self.args["dtype"])
        out = TensorListCPU._from_packed(buf, shapes, offsets, "HWC", None)
        if fused:
            geometry = decoded[4]
            geometry[fallback] = np.column_stack([region_origin[fallback], np.ones(int(fallback.sum()))])
            out._prescaled = (regions, region_origin, geometry)
        return [out]

    def _run_mixed(self, ws):
        """device='mixed': host and GPU decoders share the batch (see _image_decode_mixed)."""
        if getattr(self, "_mixed", None) is None:
            from ._image_decode_mixed import MixedDecoder
            self._mixed = MixedDecoder(self)
        src = _encoded(self, ws)
        shapes = display_shapes(self, ws, src, self.args["adjust_orientation"], int(self.args["output_type"]),
                                self.max_pixels)
        return self._mixed.decode(ws, src, shapes, self.windows(ws, shapes) if self.crops else None)

    def _with_fallbacks(self, src, buf, shapes, offsets, fallback, crop):
        return pillow_fallbacks(self, src, buf, shapes, offsets, fallback, crop, int(self.args["output_type"]),
                                self.args["adjust_orientation"], self.max_pixels)


def pillow_fallbacks(op: Operator, src, buf, shapes, offsets, fallback, crop, output_type: int, adjust: bool,
                     max_pixels: int | None):
    """Decodes the samples the kernel left to Pillow and repacks the batch."""
    samples = [buf[o:o + s.prod()].reshape(s) for o, s in zip(offsets, shapes)]
    for i in np.nonzero(fallback)[0]:
        px = _stored_pixels(_pillow_open(op, _blob(src, i), i, adjust, max_pixels))
        if crop is not None:
            y, x, h, w = crop[i]
            if y < 0 or x < 0 or h < 1 or w < 1 or y + h > px.shape[0] or x + w > px.shape[1]:
                raise SampleError(int(i), f"crop window (y={y}, x={x}, h={h}, w={w}) lies outside "
                                          f"the {px.shape[0]}x{px.shape[1]} image")
            px = px[y:y + h, x:x + w]
        samples[i] = _convert_type(px, output_type)
    shapes = np.array([s.shape for s in samples], np.int64).reshape(len(samples), 3)
    offsets = np.concatenate([[0], np.cumsum(shapes.prod(axis=1))[:-1]]).astype(np.int64)
    buf = np.empty(int(shapes.prod(axis=1).sum()), np.uint8)
    for o, s in zip(offsets, samples):
        buf[o:o + s.size] = s.reshape(-1)
    return buf, shapes, offsets


def decode_whole(op: Operator, pool, src, output_type: int, max_pixels: int | None):
    """Whole images (``src``: a batch of encoded files) decoded to HWC uint8 in their display orientation, as
    DALI's readers that decode what they read do: (buffer, shapes [N, 3], offsets)."""
    buf, shapes, offsets, fallback = _engine.decode_images(
        pool, src._buf, src._shapes, src._offsets, output_type, True, None, None, False, return_geometry=False,
        max_pixels=max_pixels, accept_corrupt_jpeg=True)[:4]
    if fallback.any():
        buf, shapes, offsets = pillow_fallbacks(op, src, buf, shapes, offsets, fallback, None, output_type, True,
                                                max_pixels)
    return buf, shapes, offsets


def _encoded(op: Operator, ws):
    src = contiguous(ws.inputs[0])
    if src._buf.dtype != np.uint8:
        raise TypeError(f"{op.label}: encoded images must be uint8 bytes, got {src._buf.dtype}")
    return src


def _blob(src, i: int) -> bytes:
    return src._sample_array(int(i)).tobytes()


def display_shapes(op: Operator, ws, src, adjust: bool, output_type: int = DALIImageType.ANY_DATA,
                   max_pixels: int | None = None) -> np.ndarray:
    """[N, 3] (H, W, C) as displayed; Pillow supplies the samples the kernel leaves to it. An image
    of more than ``max_pixels`` pixels is its sample's error."""
    shapes, fallback = _engine.peek_image_shapes(ws.pool, src._buf, src._shapes, src._offsets,
                                                 int(output_type), adjust, max_pixels)
    for i in np.nonzero(fallback)[0]:
        # the same path as decoding (Pillow's own handling of TIFF orientation included)
        img = _pillow_open(op, _blob(src, i), i, adjust, max_pixels)
        shapes[i] = (img.height, img.width, _channels(int(output_type), _MODE_CHANNELS[_stored_mode(img)]))
    return shapes


@register(IMAGE, device=("cpu", "mixed"))
class ImageDecoder(_DecoderBase):
    pass


def _round_half_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def random_crop_windows(rng: np.random.Generator, hw: np.ndarray, area: tuple, ratio: tuple,
                        attempts: int) -> np.ndarray:
    """The shared random-window algorithm (operators.md §2) for a batch: [N, 4] (y, x, h, w).
    ``hw``: [N, 2] image heights and widths, or [N, 3] (H, W, C) shapes. The engine draws from
    ``rng``'s bit generator as ``rng.uniform`` (every attempt's area, then every attempt's log
    aspect ratio) and ``rng.integers`` (the windows' y, then x) would, in one call without the GIL."""
    hw = np.asarray(hw, np.int64)
    hw = np.ascontiguousarray(hw if hw.ndim == 2 and hw.shape[1] >= 2 else hw.reshape(-1, 2))
    min_ratio, max_ratio = ratio
    bits = rng.bit_generator
    with bits.lock:
        return _engine.random_crop_windows(bits.capsule, hw, int(attempts), float(area[0]), float(area[1]),
                                           float(min_ratio), float(max_ratio), float(np.log(min_ratio)),
                                           float(np.log(max_ratio)))


@register(IMAGE_RANDOM_CROP, device=("cpu", "mixed"))
class ImageDecoderRandomCrop(_DecoderBase):
    crops = True

    def setup(self) -> None:
        super().setup()
        self._area = self._range("random_area", zero_allowed=True)
        self._ratio = self._range("random_aspect_ratio", zero_allowed=False)

    def _range(self, name: str, zero_allowed: bool) -> tuple:
        """[min, max] of a range argument; one value v is the range [v, v]."""
        values = self.args[name]
        if len(values) not in (1, 2):
            raise ValueError(f"{self.label}: '{name}' expects one value or [min, max], got {len(values)} values")
        low, high = values if len(values) == 2 else values * 2
        if not (0 <= low if zero_allowed else 0 < low) or low > high:
            bound = "0 <= min" if zero_allowed else "0 < min"
            raise ValueError(f"{self.label}: '{name}' must be [min, max] with {bound} <= max, got {list(values)}")
        return low, high

    def windows(self, ws, shapes):
        attempts = max(self.args["num_attempts"], 0)  # none: the clamped whole image at once
        parts = [random_crop_windows(rng, shapes[first:end], self._area, self._ratio, attempts)
                 for rng, first, end in ws.rngs()]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


@register(IMAGE_CROP, device=("cpu", "mixed"))
class ImageDecoderCrop(_DecoderBase):
    crops = True

    def setup(self) -> None:
        super().setup()
        if self.args["rounding"] not in ("round", "truncate"):
            raise ValueError(f"{self.label}: 'rounding' must be 'round' or 'truncate', got {self.args['rounding']!r}")
        if not any(map(self.given, ("crop", "crop_h", "crop_w"))):  # pairing: crop_window_sizes, at run time
            raise ValueError(f"{self.label}: give the window size as 'crop' or as 'crop_h' and 'crop_w'")

    def windows(self, ws, shapes):
        # fn.crop's rules: sizes read as integers, a size <= 0 keeps the whole extent
        given = crop_window_sizes(ws, {"H": 0, "W": 1})
        extent = shapes[:, :2].astype(np.int64)
        size = np.stack([extent[:, d] if given[a] is None else np.trunc(given[a]).astype(np.int64)
                         for d, a in enumerate("HW")], 1)
        size = np.where(size > 0, size, extent)
        pos = np.stack([ws.per_sample("crop_pos_y", np.float64), ws.per_sample("crop_pos_x", np.float64)], 1)
        free = shapes[:, :2] - size
        anchor = pos * free
        anchor = _round_half_away(anchor) if self.args["rounding"] == "round" else np.trunc(anchor)
        return np.concatenate([anchor.astype(np.int64), size], 1)


@register(IMAGE_SLICE, device=("cpu", "mixed"))
class ImageDecoderSlice(_DecoderBase):
    """fn.slice's window (slice.py) over the HWC output; the channels stay whole."""
    crops = True

    def setup(self) -> None:
        super().setup()
        check_slice_args(self)

    def windows(self, ws, shapes):
        anchors, sizes = slice_window(self, ws, shapes.astype(np.int64), "HWC", "HWC")
        if (anchors[:, 2] != 0).any() or (sizes[:, 2] != shapes[:, 2]).any():
            raise ArgumentValueError(f"{self.label}: only H and W can be windowed; the channels stay whole")
        return np.concatenate([anchors[:, :2], sizes[:, :2]], 1)


@register(PEEK_IMAGE_SHAPE)
class PeekImageShapeCPU(Operator):
    def setup(self) -> None:
        check_shape_type(self)

    def run(self, ws):
        src = _encoded(self, ws)
        shapes = display_shapes(self, ws, src, self.args["adjust_orientation"], int(self.args["image_type"]))
        out = empty_batch(np.full((len(src), 1), 3, np.int64), to_numpy_type(self.args["dtype"]))
        out._buf[...] = shapes.reshape(-1)
        return [out]
