"""The memory the GPU decoders' codecs allocate from (csrc/codec/codec_memory.cpp), against a stand-in
for the CUDA driver: a block given back is reused only once the work queued on its stream until then
has run, and no allocation or release frees memory to the driver (cudaFree waits for all the GPU's
queued work: beside a training model, a step of it). The decoders' use of it runs on the GPU
(tests/test_gpu_operators.py)."""
import pytest

from penstock import _engine

from _fake_cuda_driver import run_on_fake_driver

REUSE = r"""
import ctypes
from penstock import _engine
driver = ctypes.CDLL("libcuda.so.1")  # the fake, as the engine loaded it
driver.last_recorded_on.restype = ctypes.c_size_t
STREAM = 0x77

for kind in ("device", "pinned"):
    memory = _engine.CodecMemory(kind, 0)
    before, frees = driver.driver_allocations(), driver.driver_frees()
    a = memory.allocate(3000, STREAM)
    assert a != 0 and memory.allocate(0) == 0
    memory.give_back(a, STREAM)
    assert driver.last_recorded_on() == STREAM  # the block's last use: the stream's work until now
    b = memory.allocate(3000, STREAM)  # that work has not run: another block
    assert b != a and driver.driver_allocations() == before + 2
    driver.pass_every_event()
    c = memory.allocate(2100, STREAM)  # 3000 and 2100 round to the same 4 KiB block: a's, its work done
    assert c == a and memory.counts() == {"blocks": 2, "bytes": 8192, "reused": 1}
    memory.give_back(b, STREAM)
    memory.give_back(c, STREAM)
    driver.pass_every_event()
    assert memory.allocate(100_000, STREAM) not in (a, b)  # far larger than either: a block of its own
    assert memory.allocate(1500, STREAM) in (a, b)  # half a block's size or more: served by one
    big = memory.allocate(5 << 20, STREAM)  # past 1 MiB, blocks are multiples of 2 MiB
    assert memory.counts()["bytes"] == 8192 + 131072 + (6 << 20)
    memory.give_back(big, STREAM)
    driver.pass_every_event()
    assert memory.allocate(9 << 20, STREAM) != big  # twice as large: not served by it
    assert driver.driver_frees() == frees  # nothing went back to the driver while in use
    blocks = memory.counts()["blocks"]
    del memory  # every block goes back to the driver with it
    assert driver.driver_frees() == frees + blocks
    try:
        _engine.CodecMemory(kind, 0).give_back(a, STREAM)  # not one of its blocks
    except RuntimeError:
        pass
    else:
        raise AssertionError("giving back a block of another's was accepted")
print("ok")
"""


def test_a_block_is_reused_once_the_work_queued_before_its_release_has_run(tmp_path):
    assert run_on_fake_driver(tmp_path, REUSE) == "ok"


def test_a_kind_of_memory_is_device_or_pinned():
    with pytest.raises(ValueError, match="'device' or 'pinned', not 'managed'"):
        _engine.CodecMemory("managed", 0)
