"""penstock.plugin.numba on the CPU (tests/differential/test_numba.py compares values with DALI's):
the ops class, the driver looping over the batch in compiled code, and the declaration checks."""
import numpy as np
import pytest

pytest.importorskip("numba")
from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.plugin import numba as pnumba  # noqa: E402
from penstock.plugin.numba.experimental import NumbaFunction  # noqa: E402
from penstock.plugin.numba.fn import numba_function  # noqa: E402


def add_one(out, inp):
    for i in range(inp.shape[0]):
        out[i] = inp[i] + 1


DATA = [np.arange(n, dtype=np.int16) for n in (3, 0, 5)]
KW = dict(out_types=[types.INT16], in_types=[types.INT16], outs_ndim=[1], ins_ndim=[1])


def run(graph, data=DATA):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        return graph(fn.external_source(lambda: data, batch=True))
    return pipe().run()


def test_ops_class_and_fn_run_the_compiled_function():
    op = NumbaFunction(add_one, **KW)
    a, b = run(lambda x: (op(x), numba_function(x, run_fn=add_one, **KW)))
    for i, d in enumerate(DATA):
        np.testing.assert_array_equal(a.at(i), d + 1)
        np.testing.assert_array_equal(b.at(i), d + 1)
    assert a.dtype == types.INT16 and pnumba.fn.experimental.numba_function is numba_function


def test_inputs_must_match_the_declaration():
    with pytest.raises(RuntimeError, match=r"input 0 is INT32; in_types\[0\] says INT16"):
        run(lambda x: numba_function(x, run_fn=add_one, **KW), [d.astype(np.int32) for d in DATA])
    with pytest.raises(RuntimeError, match=r"input 0 has 2 dimensions; ins_ndim\[0\] says 1"):
        run(lambda x: numba_function(x, run_fn=add_one, **KW), [np.zeros((2, 2), np.int16)] * 3)


@pytest.mark.parametrize("kwargs, error", [
    (dict(out_types=[types.FLOAT], in_types=[types.INT16], outs_ndim=[1], ins_ndim=[1]),
     "without setup_fn, output i has input i's shape and type"),
    (dict(out_types=[types.INT16], in_types=[types.INT16], outs_ndim=[1, 2], ins_ndim=[1]), "output types .1. and "
     "output dimensions .2. differ"),
    (dict(KW, device="gpu", blocks=[1, 1], threads_per_block=[32, 1, 1]), "blocks as 3 positive numbers"),
    (dict(KW, device="gpu", blocks=[1, 1, 1], threads_per_block=[32, 1, 1], batch_processing=True),
     "batch_processing is not supported on the GPU"),
])
def test_declarations_are_checked(kwargs, error):
    with pytest.raises((ValueError, NotImplementedError), match=error):
        NumbaFunction(add_one, **kwargs)


def test_a_pipeline_must_be_current():
    with pytest.raises(RuntimeError, match="a pipeline must be current"):
        NumbaFunction(add_one, **KW)(None)
