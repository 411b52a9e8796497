"""The image operations of the automatic augmentations (uint8 HWC images), with the magnitude
ranges of the published AutoAugment/RandAugment policies. ``op.augmentation(...)`` derives a
variant with other settings."""
from __future__ import annotations

from typing import Any

from .. import fn, math, types
from .._graph import make_op
from ..data_node import DataNode
from ..operators import point_ops
from .core import augmentation

__all__ = ["shear_x", "shear_y", "translate_x", "translate_y", "translate_x_no_shape", "translate_y_no_shape",
           "rotate", "brightness", "contrast", "color", "sharpness", "posterize", "solarize", "solarize_add",
           "invert", "equalize", "auto_contrast", "identity"]


def _internal(schema: Any, data: DataNode, param: Any = None) -> DataNode:
    return make_op(schema, (data,), {} if param is None else {"param": param})[0]


def _warp(data: DataNode, matrix: DataNode, fill_value: float, interp_type: Any) -> DataNode:
    kwargs = {} if interp_type is None else {"interp_type": interp_type}
    return fn.warp_affine(data, matrix=matrix, fill_value=fill_value, inverse_map=False, **kwargs)


def _pair(first: DataNode, second: DataNode) -> DataNode:
    return fn.stack(first, second)


@augmentation(mag_range=(0, 0.3), randomly_negate=True)
def shear_x(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=_pair(shear, shear * 0)), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True)
def shear_y(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=_pair(shear * 0, shear)), fill_value, interp_type)


@augmentation(mag_range=(0, 1), randomly_negate=True)
def translate_x(data, rel_offset, shape, fill_value=128, interp_type=None):
    offset = rel_offset * fn.cast(shape[1], dtype=types.FLOAT)  # shape is HWC
    return _warp(data, fn.transforms.translation(offset=_pair(offset, offset * 0)), fill_value, interp_type)


@augmentation(mag_range=(0, 1), randomly_negate=True)
def translate_y(data, rel_offset, shape, fill_value=128, interp_type=None):
    offset = rel_offset * fn.cast(shape[0], dtype=types.FLOAT)
    return _warp(data, fn.transforms.translation(offset=_pair(offset * 0, offset)), fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, name="translate_x")
def translate_x_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=_pair(offset, offset * 0)), fill_value, interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, name="translate_y")
def translate_y_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=_pair(offset * 0, offset)), fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(data, angle, fill_value=128, interp_type=None, rotate_keep_size=True):
    kwargs = {} if interp_type is None else {"interp_type": interp_type}
    return fn.rotate(data, angle=angle, fill_value=fill_value, keep_size=rotate_keep_size, **kwargs)


def _one_plus(mag):
    return mag + 1.0


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=_one_plus)
def brightness(data, parameter):
    return fn.brightness(data, brightness=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=_one_plus)
def contrast(data, parameter):
    return _internal(point_ops.CONTRAST, data, parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=_one_plus)
def color(data, parameter):
    return fn.saturation(data, saturation=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=_one_plus)
def sharpness(data, parameter):
    return _internal(point_ops.SHARPNESS, data, parameter)


def _bits_kept(mag):
    """The magnitude is the bits kept (rounded), at least one."""
    return math.max(mag, 1.0)


@augmentation(mag_range=(0, 4), mag_to_param=_bits_kept)
def posterize(data, bits):
    """Keeps the ``bits`` most significant bits (rounded)."""
    return _internal(point_ops.POSTERIZE, data, bits)


@augmentation(mag_range=(256, 0))
def solarize(data, threshold):
    return _internal(point_ops.SOLARIZE, data, threshold)


@augmentation(mag_range=(0, 110))
def solarize_add(data, shift):
    return _internal(point_ops.SOLARIZE_ADD, data, shift)


@augmentation
def invert(data):
    return _internal(point_ops.INVERT, data)


@augmentation
def equalize(data):
    return fn.equalize(data)


@augmentation
def auto_contrast(data):
    return _internal(point_ops.AUTO_CONTRAST, data)


@augmentation
def identity(data):
    return data
