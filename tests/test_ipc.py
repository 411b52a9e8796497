"""_cuda._ipc.ExportedBuffers: a slot's buffer grows with its parts, its handle goes out once per
growth, and the outgrown buffer stays allocated until the slot's next use (the other process may
still have it mapped until then). CuPy's allocation and IPC calls stand in as a fake."""
import types
import weakref

from penstock._cuda._ipc import ExportedBuffers


class _Memory:
    def __init__(self, size):
        self.size = size
        self.ptr = id(self)


class _Context:
    def __init__(self, cp):
        self.cp = cp
        self.device = self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_slot_grows_with_its_parts_and_keeps_the_outgrown_buffer_until_its_next_use():
    runtime = types.SimpleNamespace(ipcGetMemHandle=lambda ptr: b"handle-%d" % ptr)
    buffers = ExportedBuffers(_Context(types.SimpleNamespace(cuda=types.SimpleNamespace(Memory=_Memory,
                                                                                        runtime=runtime))))
    first, handle = buffers.ensure(0, 800)
    assert first.size == 900 and handle == b"handle-%d" % first.ptr  # an eighth more, for parts a little larger
    same, handle = buffers.ensure(0, 900)
    assert same is first and handle is None
    other, handle = buffers.ensure(1, 10)
    assert other is not first and handle is not None  # slots are apart
    gone = weakref.ref(first)
    grown, handle = buffers.ensure(0, 1000)
    assert grown.size == 1125 and handle == b"handle-%d" % grown.ptr
    del first, same
    assert gone() is not None  # mapped by the other process until the slot comes back
    buffers.ensure(0, 1000)
    assert gone() is None
