"""penstock.plugin.jax.fn.jax_function on the CPU: whole batches as jax.Arrays, jitted and vmapped
functions, several outputs or none, layouts, and the errors of non-uniform batches and bad results."""
import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")
import jax.numpy as jnp  # noqa: E402

import penstock.plugin.jax as dax  # noqa: E402
from penstock import fn, pipeline_def, types  # noqa: E402

DATA = [np.arange(12, dtype=np.float32).reshape(3, 4) + 10 * i for i in range(3)]


def run(graph, data=DATA):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        return graph(fn.external_source(lambda: data, batch=True, layout="HW"))
    return pipe().run()


def test_a_jitted_vmapped_function_sees_the_batch():
    seen = []

    @dax.fn.jax_function
    @jax.jit
    @jax.vmap
    def flip(image):
        return image[:, ::-1]

    @dax.fn.jax_function
    def shapes(batch):
        seen.append((type(batch), batch.shape))
        return batch

    out, same = run(lambda x: (flip(x), shapes(x)))
    for i, d in enumerate(DATA):
        np.testing.assert_array_equal(out.at(i), d[:, ::-1])
        np.testing.assert_array_equal(same.at(i), d)
    assert out.layout() == "HW" and out.dtype == types.FLOAT
    assert issubclass(seen[0][0], jax.Array) and seen[0][1] == (3, 3, 4)


def test_several_outputs_layouts_and_none():
    calls = []

    @dax.fn.jax_function(num_outputs=2, output_layouts=["R", ""])
    def stats(x, y):
        return jnp.sum(x, axis=2), (y * 2).astype(jnp.int32)

    @dax.fn.jax_function(num_outputs=0)
    def observe(x):
        calls.append(float(jnp.max(x)))

    def graph(x):
        observe(x)
        return stats(x, x)
    sums, doubled = run(graph)
    np.testing.assert_array_equal(sums.at(2), DATA[2].sum(axis=1))
    assert sums.layout() == "R" and doubled.layout() == "HW" and doubled.dtype == types.INT32
    # once per iteration run so far: the pipeline may have prefetched the next one
    assert calls and set(calls) == {float(DATA[2].max())}


def test_batches_of_different_shapes_and_bad_results_are_errors():
    ragged = [np.zeros((2, 2), np.float32), np.zeros((3, 2), np.float32)]
    with pytest.raises(RuntimeError, match="one shape"):
        run(dax.fn.jax_function(lambda x: x), ragged)
    with pytest.raises(RuntimeError, match="outer dimension 3"):
        run(dax.fn.jax_function(lambda x: x[:2]))
    with pytest.raises(ValueError, match="device must be"):
        dax.fn.jax_function(lambda x: x, device="tpu")


def test_preserve_false_lets_an_unused_function_be_pruned():
    calls = []

    def record(x):
        calls.append(1)
        return x
    run(lambda x: (dax.fn.jax_function(record, preserve=False)(x), x)[1])
    assert calls == []
    run(lambda x: (dax.fn.jax_function(record)(x), x)[1])
    assert calls  # once per iteration run so far (the pipeline prefetches)
