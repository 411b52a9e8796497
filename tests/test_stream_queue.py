"""Kernel parameters as the engine's launcher lays them out (the launch itself runs on a GPU:
tests/test_gpu_operators.py compares every GPU operator launched this way with the CPU's), and the
copies of a staging block's ranges as the driver is asked for them (a stand-in driver here; on a GPU,
tests/test_gpu_operators.py::test_ranges_of_staging_are_copied_to_their_device_places_in_one_call),
and which threads let go of the GIL for the driver's calls."""
import struct
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from penstock import _consumer, _engine
from penstock._cuda._stream_queue import pack_parameters, record_event

from _fake_cuda_driver import run_on_fake_driver


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


RANGES = r"""
import ctypes
import numpy as np
from penstock import _engine
driver = ctypes.CDLL("libcuda.so.1")  # the fake, as the engine loaded it: device memory is the host's
staging = (np.arange(100) + 1).astype(np.uint8)
device = np.zeros(64, np.uint8)
offsets, sizes = np.array([0, 30, 90, 5]), np.array([20, 10, 0, 4])  # an empty range among them


def copy(stream=0x77):
    device[:] = 0
    dsts = np.uint64(device.ctypes.data) + np.array([40, 0, 10, 30], np.uint64)
    _engine.copy_ranges_to_device(dsts, staging.ctypes.data, staging.nbytes, offsets, sizes, stream)
    want = np.zeros(64, np.uint8)
    want[40:60], want[0:10], want[30:34] = staging[0:20], staging[30:40], staging[5:9]
    assert (device == want).all(), device
    return driver.batches_made(), driver.copies_made()


print(*copy(), end=" ")
print(*copy(stream=0), end=" ")  # the legacy default stream, which batched copies refuse
driver.fail_batches_with(801)  # CUDA_ERROR_NOT_SUPPORTED
print(*copy(), end=" ")
print(*copy())
"""


def test_a_blocks_ranges_are_one_batched_driver_call_and_each_a_call_without_it(tmp_path):
    (tmp_path / "batched").mkdir()
    (tmp_path / "older").mkdir()
    # batches made, copies made, after each copy: batched; on the legacy stream a call a range; a failed
    # batch's ranges a call each, and no batch asked for again
    assert run_on_fake_driver(tmp_path / "batched", RANGES) == "1 0 1 3 2 6 2 9"
    # a driver before CUDA 12.8: a call a non-empty range
    assert run_on_fake_driver(tmp_path / "older", RANGES, ("NO_BATCH_COPY",)) == "0 3 0 6 0 9 0 12"


def test_a_range_outside_the_block_is_refused_before_any_copy():
    device = np.zeros(8, np.uint8)
    with pytest.raises(ValueError, match="range 1 lies outside the staging"):
        _engine.copy_ranges_to_device(np.full(2, device.ctypes.data, np.uint64), 0x1000, 16, np.array([0, 12]),
                                      np.array([4, 8]), 0x77)
    assert not device.any()


GIL = r"""
import ctypes
from penstock import _engine
driver = ctypes.CDLL("libcuda.so.1")
event = ctypes.c_void_p()
driver.cuEventCreate(ctypes.byref(event), 0)
staging, device = ctypes.create_string_buffer(16), ctypes.create_string_buffer(16)
calls = (lambda release: _engine.record_event(event.value, 0x77, release),
         lambda release: _engine.wait_event(0x77, event.value, release),
         lambda release: _engine.copy_to_device(ctypes.addressof(device), b"0123", ctypes.addressof(staging), 0x77,
                                                0 if release else 1 << 20))
for call in calls:
    for release in (False, True):
        call(release)
        print(driver.gil_held_at_last_call(), end=" ")
print(device.raw[:4].decode())
"""


def test_the_driver_calls_hold_the_gil_unless_asked_to_let_go(tmp_path):
    assert run_on_fake_driver(tmp_path, GIL) == "1 0 1 0 1 0 0123"


def test_a_pipeline_thread_lets_go_of_the_gil_for_its_driver_calls_and_the_consumers_keeps_it(monkeypatch):
    """The consumer's thread would wait for the pipeline's Python to get the GIL back; a pipeline thread
    that held it while waiting for the driver's lock made the model's threads wait for both."""
    asked = []
    monkeypatch.setattr(_engine, "record_event", lambda event, stream, release: asked.append((event, stream, release)))
    monkeypatch.setattr(_consumer, "_consumer", threading.get_native_id())
    event, stream = SimpleNamespace(ptr=0x10), SimpleNamespace(ptr=0x20)
    record_event(event, stream)
    pipeline_thread = threading.Thread(target=record_event, args=(event, stream))
    pipeline_thread.start()
    pipeline_thread.join()
    assert asked == [(0x10, 0x20, False), (0x10, 0x20, True)]
