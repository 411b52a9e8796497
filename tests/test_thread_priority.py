"""Native threads of a lowered CPU priority (engine/thread_priority.h): the mixed decoder's host side
takes the cores a training loop leaves. Linux gives each thread a niceness of its own, read here from
/proc."""
import os
import sys
import time

import pytest

from penstock import _engine
from penstock.operators import _image_decode_mixed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads have priorities of their own on Linux")


def _threads_named(name: str) -> dict[str, int]:
    """This process's threads named ``name``: their ids and niceness."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        comm, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if comm == name:
            found[tid] = int(fields[16])  # the stat's 19th field
    return found


def _niceness_by_name(name: str, count: int) -> list[int]:
    """The niceness of each of this process's threads named ``name``, once ``count`` of them run
    (the constructors return once their threads run, named just after)."""
    deadline = time.monotonic() + 10
    while True:
        found = sorted(_threads_named(name).values())
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


def test_a_pools_workers_run_that_much_lower_and_the_caller_keeps_its_priority():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    pool = _engine.ThreadPool(4, "pst-nice-pool", niceness=5)
    assert _niceness_by_name("pst-nice-pool", 3) == [min(19, own + 5)] * 3
    assert os.getpriority(os.PRIO_PROCESS, 0) == own
    del pool


def test_a_pool_of_no_niceness_runs_at_the_process_priority_and_the_scale_ends_at_19():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    plain, lowest = _engine.ThreadPool(3, "pst-plain-pool"), _engine.ThreadPool(3, "pst-low-pool", niceness=40)
    assert _niceness_by_name("pst-plain-pool", 2) == [own] * 2
    assert _niceness_by_name("pst-low-pool", 2) == [19] * 2
    del plain, lowest


def test_a_background_thread_runs_that_much_lower():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    background = _engine.Background("pst-nice-bg", niceness=3)
    assert _niceness_by_name("pst-nice-bg", 1) == [min(19, own + 3)]
    background.close()


def test_the_mixed_decoders_host_side_niceness_comes_from_its_variable(monkeypatch):
    monkeypatch.delenv(_image_decode_mixed.NICENESS_ENV, raising=False)
    assert _image_decode_mixed.host_niceness() == 0
    monkeypatch.setenv(_image_decode_mixed.NICENESS_ENV, "10")
    assert _image_decode_mixed.host_niceness() == 10
    for bad in ("-1", "low"):
        monkeypatch.setenv(_image_decode_mixed.NICENESS_ENV, bad)
        with pytest.raises(ValueError, match=f"{_image_decode_mixed.NICENESS_ENV}='{bad}': expected a niceness"):
            _image_decode_mixed.host_niceness()


class _Op:
    """What the mixed decoder reads of its operator when made."""
    args = {"cache_size": 0}
    label = "decoders.image"


@pytest.mark.parametrize("niceness", [0, 4])
def test_the_mixed_decoders_host_threads_run_at_the_niceness_its_variable_gives(monkeypatch, niceness):
    own = os.getpriority(os.PRIO_PROCESS, 0)
    monkeypatch.setenv(_image_decode_mixed.NICENESS_ENV, str(niceness))
    before = {name: set(_threads_named(name)) for name in ("penstock-host", "penstock-check")}
    op = _Op()
    decoder = _image_decode_mixed.MixedDecoder(op)
    deadline = time.monotonic() + 10
    for name, earlier in before.items():  # (other tests' decoders may still have threads of these names)
        while not (new := {tid: n for tid, n in _threads_named(name).items() if tid not in earlier}):
            assert time.monotonic() < deadline, f"no new {name} thread"
            time.sleep(0.01)
        assert list(new.values()) == [own + niceness], name
    decoder._host.close()
    decoder._checks.close()
    decoder._jobs.close()
    decoder._jobs.join()
