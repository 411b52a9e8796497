"""penstock.pickling: functions a fresh interpreter cannot import travel by value."""
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

from penstock import pickling

SCALE = 3


def _load_elsewhere(data: bytes, arg) -> object:
    """Unpickles ``data`` in a fresh interpreter (as a spawned worker would) and calls it."""
    code = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); "
            f"sys.stdout.write(repr(f({arg!r})))")
    res = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    return eval(res.stdout.decode())


def test_lambda_with_closure_and_global_module():
    offset = 10
    f = lambda x: int(np.sum(np.arange(x))) + offset * SCALE  # noqa: E731
    with pytest.raises(Exception):
        pickle.dumps(f)
    assert _load_elsewhere(pickling.dumps(f), 5) == 10 + 30


def test_recursive_local_function_and_defaults():
    def fact(n, *, one=1):
        return one if n <= 1 else n * fact(n - 1)
    g = pickling.loads(pickling.dumps(fact))
    assert g(5) == 120 and g.__kwdefaults__ == {"one": 1} and g.__qualname__ == fact.__qualname__
    assert _load_elsewhere(pickling.dumps(fact), 6) == 720


def test_mutually_recursive_locals_share_state():
    def even(n):
        return True if n == 0 else odd(n - 1)

    def odd(n):
        return False if n == 0 else even(n - 1)
    assert _load_elsewhere(pickling.dumps(even), 7) is False


def test_functions_nested_in_objects():
    def scale(x):
        return x * 2
    obj = {"fns": [scale, lambda x: x + 1], "arr": np.arange(3)}
    back = pickling.loads(pickling.dumps(obj))
    assert back["fns"][0](4) == 8 and back["fns"][1](4) == 5
    np.testing.assert_array_equal(back["arr"], np.arange(3))


def _module_function_source():
    mod = types.ModuleType("penstock_test_tmp_mod")
    exec("FACTOR = 7\ndef f(x):\n    return x * FACTOR\n", mod.__dict__)
    return mod


@pytest.mark.parametrize("mark", ["function", "module"])
def test_pickle_by_value_for_global_functions(mark):
    mod = _module_function_source()
    sys.modules[mod.__name__] = mod
    try:
        plain = pickling.dumps(mod.f)  # importable here: by reference, fails in a fresh interpreter
        pickling.pickle_by_value(mod.f if mark == "function" else mod)
        data = pickling.dumps(mod.f)
    finally:
        del sys.modules[mod.__name__]
        pickling._by_value_modules.discard(mod.__name__)
    assert len(data) > len(plain)
    assert _load_elsewhere(data, 6) == 42


def test_global_function_importable_stays_by_reference():
    data = pickling.dumps(np.mean)
    assert pickle.loads(data) is np.mean
    assert pickling.loads(pickling.dumps(_load_elsewhere)) is _load_elsewhere


def test_pickle_by_value_rejects_other_objects():
    with pytest.raises(TypeError, match="pickle_by_value"):
        pickling.pickle_by_value(42)


def test_decorator_returns_function():
    @pickling.pickle_by_value
    def h(x):
        return x
    assert h(3) == 3
