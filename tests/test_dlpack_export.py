"""The engine's DLPack views (csrc/codec/dlpack_export.cpp), as a consumer sees them: the memory,
shape, strides and type it names, and its owner kept until the consumer is done. Host views here,
and the CUDA views' releases against a stand-in for the driver; the CUDA views' stream ordering is
tested with the GPU hand-off (tests/test_tensors_gpu.py)."""
import gc
import sys
import weakref

import numpy as np
import pytest

from penstock import _engine
from penstock.tensors._device import _contiguous_strides, _dlpack_type

from _fake_cuda_driver import run_on_fake_driver

KDLCPU = 1


class Owner:
    """Stands for a batch's buffer: something a view must keep alive."""

    def __init__(self, array: np.ndarray):
        self.array = array


class Lent:
    """A capsule presented through the DLPack protocol, as consumers ask for it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (KDLCPU, 0)


def view_of(owner: Owner, shape, strides, dtype=None) -> np.ndarray:
    dtype = owner.array.dtype if dtype is None else np.dtype(dtype)
    code, bits = _dlpack_type(dtype)
    return np.from_dlpack(Lent(_engine.dlpack_view(owner, owner.array.ctypes.data, shape, strides, code, bits,
                                                   KDLCPU, 0)))


def test_a_view_shares_the_memory_with_the_shape_and_type_it_names():
    owner = Owner(np.arange(24, dtype=np.float32))
    view = view_of(owner, (2, 3, 4), _contiguous_strides((2, 3, 4)))
    assert view.shape == (2, 3, 4) and view.dtype == np.float32
    np.testing.assert_array_equal(view, owner.array.reshape(2, 3, 4))
    owner.array[5] = -1
    assert view[0, 1, 1] == -1  # no copy


def test_strides_are_in_elements():
    owner = Owner(np.arange(6, dtype=np.int16))
    view = view_of(owner, (3, 2), (1, 3))  # the transpose of a [2, 3] matrix
    np.testing.assert_array_equal(view, np.arange(6, dtype=np.int16).reshape(2, 3).T)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float16, np.float64, np.bool_])
def test_every_element_type_crosses(dtype):
    owner = Owner((np.arange(8) % 3).astype(dtype))
    np.testing.assert_array_equal(view_of(owner, (8,), (1,)), owner.array)


def test_the_owner_lives_until_the_consumer_frees_the_view():
    owner = Owner(np.arange(10, dtype=np.uint8))
    gone = weakref.ref(owner)
    refs = sys.getrefcount(owner)
    view = view_of(owner, (10,), (1,))
    assert sys.getrefcount(owner) == refs + 1
    del owner
    gc.collect()
    assert gone() is not None and view.sum() == 45
    del view
    gc.collect()
    assert gone() is None


def test_a_capsule_no_consumer_took_lets_its_owner_go():
    owner = Owner(np.zeros(4, np.uint8))
    gone = weakref.ref(owner)
    capsule = _engine.dlpack_view(owner, owner.array.ctypes.data, (4,), (1,), *_dlpack_type(owner.array.dtype),
                                  KDLCPU, 0)
    del owner
    gc.collect()
    assert gone() is not None
    del capsule
    gc.collect()
    assert gone() is None


def test_torch_takes_the_view():
    torch = pytest.importorskip("torch")
    owner = Owner(np.arange(12, dtype=np.float32))
    t = torch.from_dlpack(Lent(_engine.dlpack_view(owner, owner.array.ctypes.data, (3, 4), (4, 1),
                                                   *_dlpack_type(owner.array.dtype), KDLCPU, 0)))
    assert t.shape == (3, 4) and t.dtype == torch.float32 and t[2, 3].item() == 11.0


def test_bad_requests_are_refused():
    owner = Owner(np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="one stride per dimension"):
        _engine.dlpack_view(owner, owner.array.ctypes.data, (2, 2), (1,), 1, 8, KDLCPU, 0)
    with pytest.raises(TypeError, match="DLPack has no type"):
        _dlpack_type(np.dtype("U4"))


def test_contiguous_strides():
    assert _contiguous_strides((4, 3, 2)) == (6, 2, 1)
    assert _contiguous_strides((0, 3)) == (3, 1) and _contiguous_strides(()) == ()


RELEASES = r"""
import ctypes, gc, weakref
import numpy as np
from penstock import _engine
driver = ctypes.CDLL("libcuda.so.1")  # the fake, as the engine loaded it
driver.last_recorded_on.restype = ctypes.c_size_t
PRODUCER, OTHER = 0x77, 0x55
KDLCUDA = 2

class Owner:
    pass

def lend(consumer):
    owner = Owner()
    buf = np.zeros(16, np.uint8)
    capsule = _engine.dlpack_view(owner, buf.ctypes.data, (16,), (1,), 1, 8, KDLCUDA, 0, consumer=consumer,
                                  producer=PRODUCER)
    return capsule, weakref.ref(owner)

# a consumer on the legacy default stream (1): it waits for the producer's stream
view, owner = lend(1)
assert driver.waits_on(0) == 1
del view  # freed: held until the consumer's work queued until now passes
gc.collect()
assert owner() is not None and driver.last_recorded_on() == 0
assert driver.waits_on(PRODUCER) == 0  # the producer's stream never waits for the consumer's
assert _engine.release_passed_owners() == 0 and owner() is not None
driver.pass_every_event()
assert _engine.release_passed_owners() == 1 and owner() is None

# a later release lets go of the earlier ones that passed
first, first_owner = lend(1)
del first
driver.pass_every_event()
second, second_owner = lend(1)
del second
assert first_owner() is None and second_owner() is not None
assert _engine.release_passed_owners(wait=True) == 1 and second_owner() is None

# a consumer on a stream of its own keeps its view alive while its work may read it: let go at once
view, owner = lend(OTHER)
del view
assert owner() is None and driver.waits_on(PRODUCER) == 0
print("ok")
"""


def test_a_default_streams_release_holds_the_memory_until_its_work_passed(tmp_path):
    """A view lent to a consumer on a default stream (a training loop's): when the consumer frees
    it, the producer's stream is not made to wait (which held the pipeline's later GPU work behind
    the model's queued steps); its owner (the memory, for the producer's pool) is kept until an
    event recorded on the consumer's stream at the release has passed, and let go by a later
    release or release_passed_owners. Checked against a recording stand-in for the CUDA driver."""
    assert run_on_fake_driver(tmp_path, RELEASES) == "ok"
