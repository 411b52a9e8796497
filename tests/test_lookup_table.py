"""lookup_table against numpy."""
import numpy as np
import pytest

from penstock import fn, types

from _util import run_es, samples


def test_keys_map_to_values_and_the_rest_to_default():
    data = [np.array([[0, 1, 5], [7, 2, 1]], np.uint8), np.array([300, 2], np.int32).astype(np.int32)]
    keys, values = [1, 2, 7], [10.5, -3.0, 0.25]
    out, = run_es(lambda x: fn.lookup_table(x, keys=keys, values=values, default_value=-1.0), data[:1])
    table = dict(zip(keys, values))
    want = np.vectorize(lambda v: table.get(int(v), -1.0))(data[0]).astype(np.float32)
    np.testing.assert_array_equal(out.at(0), want)
    out, = run_es(lambda x: fn.lookup_table(x, keys=keys, values=values, dtype=types.INT16), data[1:])
    assert out.at(0).dtype == np.int16
    np.testing.assert_array_equal(out.at(0), [0, -3])


def test_bad_tables_and_inputs():
    with pytest.raises(ValueError, match="keys"):
        run_es(lambda x: fn.lookup_table(x, keys=[1, 2], values=[1.0]), [np.zeros(1, np.int32)])
    with pytest.raises(ValueError, match="keys"):
        run_es(lambda x: fn.lookup_table(x, keys=[70000], values=[1.0]), [np.zeros(1, np.int32)])
    with pytest.raises(RuntimeError, match="integer"):
        run_es(lambda x: fn.lookup_table(x, keys=[1], values=[1.0]), [np.zeros(1, np.float32)])
