"""The mixed decoders' nvImageCodec process (penstock._cuda._decode_process): a child that cannot
start is reported as a RuntimeError naming the reason, and leaves no process or descriptor behind.
Decoding through it is tested on the GPU (tests/test_gpu_operators.py, mixed decoders)."""
import os
import types

import pytest

from penstock._cuda import _decode_process


def test_a_decoder_process_that_cannot_start_is_a_runtime_error_and_leaves_nothing_behind():
    # no CuPy here, or (on a GPU machine) a device that does not exist: the child reports either
    ctx = types.SimpleNamespace(device_id=10**6, cp=None)
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(RuntimeError, match="the GPU decoder process could not start: "):
        _decode_process.DecodeProcess(ctx, "", 2, 0.65, True)
    assert len(os.listdir("/proc/self/fd")) == fds
    with open("/proc/self/task/%d/children" % os.getpid()) as f:
        assert f.read().split() == []
