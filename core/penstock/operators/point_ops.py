"""Point operations on uint8 images: ``equalize`` (``experimental.equalize`` is its former name)
and the internal operators of the automatic augmentations (auto-contrast, contrast, posterize,
solarize, solarize-add, invert, sharpness).

Each point operation is a 256-entry lookup table per image plane and channel, computed for the
whole batch (by the engine where it depends on the parameter alone; from per-channel histograms
where it depends on the image) and applied in one kernel call. An image plane is a frame of a
sequence, or a channel of a channel-first image: the kernels see each as an (H, W, C) image of its
own, over the same buffers. On the GPU the tables that depend on the image are computed there from
histograms taken there (``GpuKernels.histogram_luts``, the same arithmetic), so the host never waits.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import _engine
from .._image_layout import input_layout
from .._operator import Operator
from .._registry import Arg, ArgType, OpSchema, register
from .._batch import contiguous

_V = np.arange(256, dtype=np.float64)


def _lut_u8(values: np.ndarray) -> np.ndarray:
    """Rounds half away from zero (values are >= 0 after clipping) and saturates to uint8."""
    return np.floor(np.clip(values, 0, 255) + 0.5).astype(np.uint8)


def _equalize(hist: np.ndarray, param: np.ndarray) -> np.ndarray:
    """DALI's equalize per channel (OpenCV's equalizeHist): the cumulative histogram less the lowest
    used value's count, scaled to [0, 255] and rounded half to even; a one-value channel is kept."""
    lo = np.argmax(hist > 0, axis=-1)
    lo_count = np.take_along_axis(hist, lo[..., None], axis=-1)
    cdf = np.cumsum(hist, axis=-1)
    denom = cdf[..., -1:] - lo_count
    lut = np.rint(np.clip((cdf - lo_count) * 255.0 / np.maximum(denom, 1), 0, 255))
    return np.where(denom == 0, _V, lut).astype(np.uint8)


def _auto_contrast(hist: np.ndarray, param: np.ndarray) -> np.ndarray:
    """Stretches each channel so that its darkest value becomes 0 and its brightest 255."""
    used = hist > 0
    lo = np.argmax(used, axis=-1)[..., None].astype(np.float64)
    hi = (255 - np.argmax(used[..., ::-1], axis=-1))[..., None].astype(np.float64)
    scale = 255.0 / np.maximum(hi - lo, 1)
    return np.where(hi > lo, _lut_u8((_V - lo) * scale), _V.astype(np.uint8))


def _grey_weights(channels: int) -> np.ndarray:
    """Contrast's grey level: the channel means weighted as PIL's RGB -> L conversion (or evenly)."""
    return np.array([0.299, 0.587, 0.114]) if channels == 3 else np.full(channels, 1 / channels)


def _contrast(hist: np.ndarray, param: np.ndarray) -> np.ndarray:
    """PIL's ImageEnhance.Contrast: blends with the mean grey level of the image."""
    counts = np.maximum(hist.sum(axis=-1), 1)
    means = (hist * _V).sum(axis=-1) / counts                  # [N, C]
    grey = np.floor(means @ _grey_weights(hist.shape[1]) + 0.5)[:, None, None]  # PIL: int(mean + 0.5)
    return _lut_u8(grey + param[:, None, None] * (_V - grey))


def _schema(name: str, doc: str, param_doc: str | None, internal: bool = True, **kw) -> OpSchema:
    args = [Arg("param", ArgType.FLOAT, 0.0, tensor=True, doc=param_doc)] if param_doc else []
    return OpSchema(name, doc, args=args, devices=("cpu", "gpu"), internal=internal, **kw)


_PLANE_LAYOUTS = ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW")


class _Planes:
    """The (H, W, C) image planes of a batch: frames, and the channels of channel-first images,
    each a plane; shapes [M, 3], offsets [M] (elements, in the batch's buffer) and ``out_offsets``
    (in ``out``'s, a batch of the same shapes), and for each plane its sample. Made by the engine with
    the GIL held (numpy's repeat and gathers give it away)."""

    def __init__(self, src, out, layout: str):
        axes = [layout.index(a) if a in layout else -1 for a in "FCHW"]
        self.sample, self.shapes, self.offsets, self.out_offsets = _engine.image_planes(
            src._shapes, src._offsets, np.ascontiguousarray(out._offsets, np.int64), *axes)
        # each sample is one plane (no frames, channels last): the planes' rows are the samples'
        self.per_sample = "F" not in layout and not ("C" in layout and layout.index("C") < layout.index("H"))


def _point_op(schema: OpSchema, hist_kind: str | None = None, hist_lut: Callable | None = None,
              kind: str | None = None) -> None:
    """A table from the image's histograms (``hist_kind``, its name in histogram_luts; ``hist_lut``
    makes it on the host), or from the parameter alone (``kind``, the engine's parameter_luts)."""
    @register(schema, device=("cpu", "gpu"))
    class PointOp(Operator):
        def run(self, ws):
            src = contiguous(ws.inputs[0])
            layout = input_layout(self, src) or {2: "HW", 3: "HWC"}.get(src.ndim(), "")
            if src._buf.dtype != np.uint8 or layout not in _PLANE_LAYOUTS:
                raise RuntimeError(f"{self.label}: expects uint8 images ({', '.join(_PLANE_LAYOUTS)}), got "
                                   f"{src.dtype.name} with layout '{layout}' ({src.ndim()} dimensions)")
            out = ws.new_batch(src._shapes, np.uint8, src._layout, src._source_info)
            planes = _Planes(src, out, layout)
            m = len(planes.sample)
            channels = int(planes.shapes[:, 2].max()) if m else 1
            param = ws.per_sample("param", np.float64) if "param" in schema.arguments else np.zeros(len(src))
            if not planes.per_sample:
                param = param[planes.sample]
            if kind is not None:
                luts = _engine.parameter_luts(kind, param, channels)  # uploaded with the lookup's descriptors
            elif ws.gpu is not None:
                luts = ws.kernels.histogram_luts(hist_kind, src._buf, planes.shapes, planes.offsets, channels, param,
                                                 _grey_weights(channels))
            else:
                hist = np.zeros((m, channels * 256), np.int64)
                _engine.channel_histograms(ws.pool, src._buf, planes.shapes, planes.offsets, channels, hist)
                luts = np.ascontiguousarray(np.broadcast_to(hist_lut(hist.reshape(m, channels, 256), param),
                                                            (m, channels, 256)))  # contrast's: one for all channels
            ws.kernels.apply_lut(ws.pool, src._buf, planes.shapes, planes.offsets, luts, out._buf, planes.out_offsets)
            return [out]

    PointOp.__name__ = PointOp.__qualname__ = schema.class_name


EQUALIZE = _schema("Equalize", "Histogram equalization of each channel of uint8 images (each frame of a sequence "
                   "on its own).", None, internal=False, input_layouts=_PLANE_LAYOUTS,
                   moved_from=("experimental",))
AUTO_CONTRAST = _schema("_auto_aug.AutoContrast", "Stretches each channel to the full [0, 255] range.", None)
CONTRAST = _schema("_auto_aug.Contrast", "Blends with the mean grey level (PIL's contrast enhancement).",
                   "blend factor: 0 = flat grey, 1 = unchanged")
POSTERIZE = _schema("_auto_aug.Posterize", "Keeps the `param` most significant bits.", "bits kept (0-8)")
SOLARIZE = _schema("_auto_aug.Solarize", "Inverts the values at or above a threshold.", "threshold")
SOLARIZE_ADD = _schema("_auto_aug.SolarizeAdd", "Adds `param` to values below 128 (saturating).", "shift")
INVERT = _schema("_auto_aug.Invert", "255 - value.", None)
SHARPNESS = _schema("_auto_aug.Sharpness", "Blends with a 3x3 smoothed image (PIL's sharpness enhancement).",
                    "blend factor: 0 = smoothed, 1 = unchanged")

for _s, _f, _h in ((EQUALIZE, _equalize, "equalize"), (AUTO_CONTRAST, _auto_contrast, "auto_contrast"),
                   (CONTRAST, _contrast, "contrast")):
    _point_op(_s, hist_kind=_h, hist_lut=_f)
for _s, _k in ((POSTERIZE, "posterize"), (SOLARIZE, "solarize"), (SOLARIZE_ADD, "solarize_add"), (INVERT, "invert")):
    _point_op(_s, kind=_k)


@register(SHARPNESS, device=("cpu", "gpu"))
class Sharpness(Operator):
    def run(self, ws):
        src = contiguous(ws.inputs[0])
        if src._buf.dtype != np.uint8 or src.ndim() != 3:
            raise ValueError(f"{self.label}: expects uint8 HWC images, got {src.dtype.name} with "
                             f"{src.ndim()} dimensions")
        factors = ws.per_sample("param", np.float32)
        out = ws.new_batch(src._shapes, np.uint8, src._layout, src._source_info)
        ws.kernels.sharpness(ws.pool, src._buf, src._shapes, src._offsets, factors, out._buf, out._offsets)
        return [out]
