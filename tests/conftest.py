import faulthandler
import importlib
import os
import shutil
import subprocess
import sys
import sysconfig

# `make gpu-test` runs the suite in processes that imported first what users import first
# (torchvision, JAX, TensorFlow): their wheels bring libraries of their own into the process.
for _name in filter(None, os.environ.get("PENSTOCK_TEST_PRELOAD", "").split(",")):
    importlib.import_module(_name)

import numpy as np
import pytest

_CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
if _CORE not in sys.path:
    sys.path.insert(0, _CORE)

from penstock import fn, pipeline_def  # noqa: E402


_HANG_S = 600  # far beyond any one test: only a hang gets here


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test that hangs ends the run at once, printing every thread's stack, instead of running
    on into CI's time limit with nothing to show where it stopped."""
    faulthandler.dump_traceback_later(_HANG_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _const(d):
    return lambda: d


def run_graph(graph, inputs, batch_size=None, **pipe_kwargs):
    """Builds a pipeline whose external sources return ``inputs`` (one list of per-sample arrays
    per external source) and runs it once; returns the outputs as lists of numpy arrays."""
    bs = batch_size or len(inputs[0])

    @pipeline_def(batch_size=bs, num_threads=2, device_id=None, **pipe_kwargs)
    def pipe():
        srcs = [fn.external_source(source=_const(d), batch=True) for d in inputs]
        return graph(*srcs)

    p = pipe()
    outs = p.run()
    return [[out.at(i) for i in range(len(out))] for out in outs], outs


@pytest.fixture
def run1():
    """run1(graph, *arrays) -> (first output as list of numpy samples, TensorList)"""
    def _run(graph, *inputs, **kw):
        vals, outs = run_graph(graph, inputs, **kw)
        return vals[0], outs[0]
    return _run


@pytest.fixture(scope="session")
def shim(tmp_path_factory):
    """tests/gil_handbacks.c built: preloaded into a child Python (LD_PRELOAD), it counts the times the
    child gives the GIL away (PyEval_SaveThread), all of them and numpy's."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        pytest.skip("this Python links libpython statically: its PyEval_SaveThread cannot be interposed")
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    assert cc, "a C compiler is needed (the engine is built with one)"
    out = tmp_path_factory.mktemp("shim") / "gil_handbacks.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(out),
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "gil_handbacks.c"), "-ldl"], check=True)
    return str(out)
