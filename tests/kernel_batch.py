"""Packs lists of numpy samples into the (buffer, shapes, offsets) form the native kernels take."""
import numpy as np

from penstock import _engine

POOL = _engine.ThreadPool(2)
DTYPE_CODES = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1, np.dtype(np.int16): 5,
               np.dtype(np.int32): 6, np.dtype(np.float32): 9}


def pack(samples):
    """Returns (flat buffer, shapes [N, ndim], offsets [N])."""
    shapes = np.array([s.shape for s in samples], dtype=np.int64)
    sizes = [s.size for s in samples]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat = np.concatenate([s.ravel() for s in samples]) if samples else np.zeros(0)
    return np.ascontiguousarray(flat), shapes, offsets


def empty_like_shapes(shapes, dtype):
    """An output buffer for samples of the given shapes."""
    sizes = np.prod(shapes, axis=1)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.zeros(int(sizes.sum()), dtype=dtype), np.ascontiguousarray(shapes, dtype=np.int64), offsets


def unpack(flat, shapes, offsets):
    return [flat[o:o + int(np.prod(s))].reshape(s) for s, o in zip(shapes, offsets)]


def round_sat(x, dtype):
    """DALI's float -> output rule: round half away from zero, saturate."""
    if np.dtype(dtype).kind == "f":
        return x.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)
