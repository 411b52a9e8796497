"""Python's switch interval while GPU pipelines run (penstock._switch_interval)."""
import sys

import pytest

from penstock import _switch_interval


@pytest.fixture
def python_default():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_shortened_while_a_pipeline_runs_and_restored_after_the_last(python_default, monkeypatch):
    monkeypatch.setenv(_switch_interval.ENV, "250")
    _switch_interval.acquire()
    _switch_interval.acquire()
    assert sys.getswitchinterval() == pytest.approx(250e-6)
    _switch_interval.release()
    assert sys.getswitchinterval() == pytest.approx(250e-6)  # one pipeline is left
    _switch_interval.release()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_never_lengthened_and_the_programs_own_setting_is_kept(python_default, monkeypatch):
    monkeypatch.setenv(_switch_interval.ENV, "250")
    sys.setswitchinterval(100e-6)
    _switch_interval.acquire()
    assert sys.getswitchinterval() == pytest.approx(100e-6)
    _switch_interval.release()
    assert sys.getswitchinterval() == pytest.approx(100e-6)
    sys.setswitchinterval(0.005)
    _switch_interval.acquire()
    sys.setswitchinterval(0.002)  # the program's own, meanwhile
    _switch_interval.release()
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_zero_leaves_pythons_alone(python_default, monkeypatch):
    monkeypatch.setenv(_switch_interval.ENV, "0")
    _switch_interval.acquire()
    assert sys.getswitchinterval() == pytest.approx(0.005)
    _switch_interval.release()


@pytest.mark.parametrize("value", ["fast", "-5"])
def test_a_bad_setting_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(_switch_interval.ENV, value)
    with pytest.raises(ValueError, match=_switch_interval.ENV):
        _switch_interval.acquire()


def test_an_executor_with_gpu_stages_holds_it_until_shut_down(python_default, monkeypatch):
    from penstock._executor import Executor
    monkeypatch.setenv(_switch_interval.ENV, "300")
    host_only = Executor([], [], None, exec_async=True, exec_pipelined=True)
    assert sys.getswitchinterval() == pytest.approx(0.005)
    gpu = Executor([], [], None, exec_async=True, exec_pipelined=True, device=object())  # a stand-in context
    assert sys.getswitchinterval() == pytest.approx(300e-6)
    gpu.shutdown()
    gpu.shutdown()  # once only
    assert sys.getswitchinterval() == pytest.approx(0.005)
    host_only.shutdown()
