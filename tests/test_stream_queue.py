"""Kernel parameters as the engine's launcher lays them out (the launch itself runs on a GPU:
tests/test_gpu_operators.py compares every GPU operator launched this way with the CPU's)."""
import struct

import numpy as np
import pytest

from penstock._cuda._stream_queue import pack_parameters


class _DeviceArray:
    """What the packer reads of a device array: its address."""

    class _Data:
        ptr = 0x7F00_0000_1000

    data = _Data()


def test_each_parameter_has_its_own_type_and_alignment():
    params, offsets = pack_parameters([_DeviceArray(), np.int32(-7), np.float32(1.5), np.int64(3), np.uint8(9),
                                       np.float64(0.25)])
    assert offsets == [0, 8, 12, 16, 24, 32]
    assert struct.unpack_from("<Q", params, 0)[0] == 0x7F00_0000_1000
    assert struct.unpack_from("<i", params, 8)[0] == -7
    assert struct.unpack_from("<f", params, 12)[0] == 1.5
    assert struct.unpack_from("<q", params, 16)[0] == 3
    assert params[24] == 9
    assert struct.unpack_from("<d", params, 32)[0] == 0.25


def test_python_scalars_are_passed_as_cupy_passes_them():
    """int as 64 bits (either sign), float as double, bool as one byte."""
    params, offsets = pack_parameters([True, -2, 2 ** 63 + 5, 0.5])
    assert offsets == [0, 8, 16, 24]
    assert params[0] == 1
    assert struct.unpack_from("<q", params, 8)[0] == -2
    assert struct.unpack_from("<Q", params, 16)[0] == 2 ** 63 + 5
    assert struct.unpack_from("<d", params, 24)[0] == 0.5


def test_anything_else_is_refused_by_name():
    with pytest.raises(TypeError, match="not list"):
        pack_parameters([[1, 2]])
