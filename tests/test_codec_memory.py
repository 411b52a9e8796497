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
    c = memory.allocate(2100, STREAM)  # a's block (3,072 bytes, the size class of 3,000), its work done
    assert c == a and memory.counts() == {"blocks": 2, "bytes": 6144, "reused": 1}
    memory.give_back(b, STREAM)
    memory.give_back(c, STREAM)
    driver.pass_every_event()
    assert memory.allocate(100_000, STREAM) not in (a, b)  # far larger than either: a block of its own
    assert memory.allocate(1500, STREAM) in (a, b)  # half a block's size or more: served by one
    big = memory.allocate(5 << 20, STREAM)
    assert memory.counts()["bytes"] == 6144 + 106496 + (5 << 20)  # size classes of 3,000, 100,000, 5 MiB
    memory.give_back(big, STREAM)
    driver.pass_every_event()
    assert memory.allocate(11 << 20, STREAM) != big  # more than twice as large: not served by it
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

OUT_OF_MEMORY = r"""
import ctypes
from penstock import _engine
driver = ctypes.CDLL("libcuda.so.1")
driver.set_memory_limit(ctypes.c_size_t(3 << 20))
memory = _engine.CodecMemory("device", 0)
kept = [memory.allocate(1 << 20, 5) for _ in range(2)]
for block in kept:
    memory.give_back(block, 5)
in_use = memory.allocate(1 << 20, 5)  # its work not yet run: a third block, 3 MiB in all
memory.give_back(in_use, 5)
frees = driver.driver_frees()
driver.pass_every_event()
big = memory.allocate(2 << 20, 5)  # no room: the free blocks no work uses go back first
assert big != 0 and driver.driver_frees() == frees + 3
assert memory.counts()["blocks"] == 1 and memory.counts()["bytes"] == 2 << 20
try:
    memory.allocate(2 << 20, 5)  # still no room, nothing free to give back
except RuntimeError as e:
    assert "status 2" in str(e), e
else:
    raise AssertionError("an allocation past the driver's memory succeeded")
print("ok")
"""


def test_a_block_is_reused_once_the_work_queued_before_its_release_has_run(tmp_path):
    assert run_on_fake_driver(tmp_path, REUSE) == "ok"


def test_out_of_memory_the_free_blocks_go_back_to_the_driver_first(tmp_path):
    assert run_on_fake_driver(tmp_path, OUT_OF_MEMORY) == "ok"


def test_a_kind_of_memory_is_device_or_pinned():
    with pytest.raises(ValueError, match="'device' or 'pinned', not 'managed'"):
        _engine.CodecMemory("managed", 0)
