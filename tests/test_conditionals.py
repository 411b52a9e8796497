"""Conditionals (enable_conditionals=True): per-sample if/elif/else, and/or/not, conversion rules."""
import pickle

import numpy as np
import pytest

from penstock import fn, pipeline_def, types
from penstock.pipeline import do_not_convert

BATCH = 8


def _values(n=BATCH, dtype=np.int32):
    return lambda: [np.array(i, dtype) for i in range(n)]


def _run(pipe):
    return [o.as_array() if o.is_dense_tensor() else [o.at(i) for i in range(len(o))] for o in pipe.run()]


def _cond_pipe(**kw):
    return pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, enable_conditionals=True, **kw)


def test_spec_example_conditional_expression_and_statement():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(4), batch=True)
        y = x * 10 if x > 1 else x - 100
        if x > 1:
            z = x * 10
        else:
            z = x - 100
        return y, z

    y, z = _run(pipe(batch_size=4))
    np.testing.assert_array_equal(y, [-100, -99, 20, 30])
    np.testing.assert_array_equal(z, [-100, -99, 20, 30])


def test_elif_nested_pass_and_variables_keeping_their_value():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(), batch=True)
        kept = x + 0
        if x < 2:
            a = x + 100
            kept = x * 0 - 1
        elif x < 5:
            if x == 3:
                a = x + 300
            else:
                a = x + 200
        else:
            pass_through = x  # branch-only variable that is never used afterwards
            a = x + 500
        if x == 7:
            pass
        else:
            kept = kept + 1000
        return a, kept

    a, kept = _run(pipe())
    x = np.arange(BATCH)
    ref_a = np.where(x < 2, x + 100, np.where(x < 5, np.where(x == 3, x + 300, x + 200), x + 500))
    ref_kept = np.where(x < 2, -1, x)
    ref_kept = np.where(x == 7, ref_kept, ref_kept + 1000)
    np.testing.assert_array_equal(a, ref_a)
    np.testing.assert_array_equal(kept, ref_kept)


def test_several_outputs_and_sample_order_with_variable_shapes():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=lambda: [np.full((i + 1,), i, np.float32) for i in range(BATCH)],
                               batch=True, layout="X")
        s = fn.shapes(x)[0]
        if s % 3 == 0:
            a, b = x * 2, x + 0.5
        else:
            a, b = x, x - 0.5
        return a, b

    pipe = pipe()
    a, b = pipe.run()
    for i in range(BATCH):
        base = np.full((i + 1,), i, np.float32)
        even = (i + 1) % 3 == 0
        np.testing.assert_array_equal(a.at(i), base * 2 if even else base)
        np.testing.assert_array_equal(b.at(i), base + 0.5 if even else base - 0.5)
    assert a.layout() == "X"


def test_logical_operators_short_circuit():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(4), batch=True)
        v = fn.external_source(source=lambda: [np.array([5, 6], np.int32)] * 4, batch=True)
        # v[x] is out of range for x >= 2: it must only run where x < 2
        both = (x < 2) and (v[x] > 5)
        either = (x >= 2) or (v[x] == 5)
        neither = not (x == 1)
        numeric_not = not x
        return both, either, neither, numeric_not

    both, either, neither, numeric_not = _run(pipe(batch_size=4))
    np.testing.assert_array_equal(both, [False, True, False, False])
    np.testing.assert_array_equal(either, [True, False, True, True])
    np.testing.assert_array_equal(neither, [True, False, True, True])
    np.testing.assert_array_equal(numeric_not, [True, False, False, False])
    assert both.dtype == np.bool_


def test_numeric_predicates_and_python_conditions():
    taken = []

    @_cond_pipe()
    def pipe(flag):
        x = fn.external_source(source=_values(4, np.float32), batch=True)
        if flag:  # a plain Python value: only this branch is traced
            taken.append("if")
            y = x + 1
        else:
            taken.append("else")
            y = x - 1
        z = 7 if flag else 8
        if x - 1.5:  # float predicate: non-zero is true
            w = x * 2
        else:
            w = x
        return y, w, z

    y, w, z = _run(pipe(True, batch_size=4))
    assert taken == ["if"]
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
    np.testing.assert_array_equal(w, [0, 2, 4, 6])
    np.testing.assert_array_equal(z, [7] * 4)


def test_python_values_merged_as_constants():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(4), batch=True)
        if x > 1:
            k = 10
        else:
            k = 20
        return x + k

    np.testing.assert_array_equal(_run(pipe(batch_size=4))[0], [20, 21, 12, 13])


def test_variable_defined_on_one_path_and_used_later_is_an_error():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(), batch=True)
        if x > 1:
            only_here = x + 1
        return only_here

    with pytest.raises(ValueError, match="'only_here' is assigned only in the `if` branch"):
        pipe()

    @_cond_pipe()
    def pipe2():
        x = fn.external_source(source=_values(), batch=True)
        if x > 1:
            y = x
        else:
            z = x
        return y + 1

    with pytest.raises(ValueError, match="'y' is assigned only"):
        pipe2()


def test_random_operators_in_branches_are_deterministic_and_per_branch():
    @_cond_pipe(seed=123)
    def pipe():
        x = fn.external_source(source=_values(), batch=True)
        if x % 2 == 0:
            r = fn.random.uniform(range=(10, 20))
        else:
            r = fn.random.uniform(range=(-20, -10)) + fn.cast(x, dtype=types.FLOAT) * 0
        return r

    p1, p2 = pipe(), pipe()
    r1 = np.concatenate([_run(p1)[0] for _ in range(2)])
    r2 = np.concatenate([_run(p2)[0] for _ in range(2)])
    np.testing.assert_array_equal(r1, r2)
    x = np.tile(np.arange(BATCH), 2)
    assert ((r1 >= 10) & (r1 < 20))[x % 2 == 0].all()
    assert ((r1 >= -20) & (r1 < -10))[x % 2 == 1].all()
    assert len(np.unique(r1)) == len(r1)


def test_rotate_a_quarter_of_images_matches_rotating_them_outside():
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (20 + i, 30, 3), dtype=np.uint8) for i in range(BATCH)]

    @_cond_pipe(seed=1)
    def conditional():
        img = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=types.BOOL)
        if do_rotate:
            angle = fn.random.uniform(range=(10, 30))
            result = fn.rotate(img, angle=angle, fill_value=0)
        else:
            angle = types.Constant(0.0)
            result = img
        return result, angle, do_rotate

    out, angles, flags = conditional().run()
    angles, flags = angles.as_array(), flags.as_array()

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)
    def plain():
        img = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        a = fn.external_source(source=lambda: list(angles.astype(np.float32)), batch=True)
        return fn.rotate(img, angle=a, fill_value=0)

    (ref,) = plain().run()
    assert 0 < flags.sum() < BATCH
    for i in range(BATCH):
        if flags[i]:
            assert 10 <= angles[i] < 30
            np.testing.assert_array_equal(out.at(i), ref.at(i))
        else:
            assert angles[i] == 0
            np.testing.assert_array_equal(out.at(i), images[i])


def test_predicate_must_be_scalar():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros(2, np.int32)] * BATCH, batch=True)
        if x:
            y = x + 1
        else:
            y = x
        return y

    with pytest.raises(RuntimeError, match="restricted to scalar"):
        pipe().run()

    @_cond_pipe()
    def logical():
        x = fn.external_source(source=_values(), batch=True)
        return x and (x > 1)  # `and` needs bool inputs

    with pytest.raises(RuntimeError, match="bool type"):
        logical().run()


def test_branches_must_agree_in_type():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(), batch=True)
        if x > 3:
            y = fn.cast(x, dtype=types.FLOAT)
        else:
            y = x
        return y

    with pytest.raises(RuntimeError, match="different types"):
        pipe().run()


def _module_level_helper(x):
    if x > 2:
        return_value = x + 1000
    else:
        return_value = x
    return return_value


@do_not_convert
def _unconverted_helper(x):
    if x > 2:
        return x
    return x


def _source(sample_info):
    return np.array(sample_info.idx_in_batch, np.int32)


def test_called_functions_are_converted_and_do_not_convert_opts_out():
    class Helper:
        def method(self, x):
            return x * 2 if x < 2 else x

    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(4), batch=True)
        return _module_level_helper(x), Helper().method(x)

    a, b = _run(pipe(batch_size=4))
    np.testing.assert_array_equal(a, [0, 1, 2, 1003])
    np.testing.assert_array_equal(b, [0, 2, 2, 3])

    @_cond_pipe()
    def opted_out():
        x = fn.external_source(source=_values(4), batch=True)
        return _unconverted_helper(x)

    with pytest.raises(TypeError, match="enable_conditionals=True"):
        opted_out(batch_size=4)


def test_callbacks_are_not_converted_and_stay_picklable():
    @_cond_pipe()
    def pipe():
        def local_source(sample_info):  # defined inside: passed on as written, not converted
            return np.array(sample_info.idx_in_batch if sample_info.idx_in_batch else 5, np.int32)
        x = fn.external_source(source=_source, batch=False)
        y = fn.external_source(source=local_source, batch=False)
        assert "_ps_rt" not in local_source.__code__.co_names
        return x + 1 if x > 0 else x, y

    p = pipe(batch_size=4)
    es = [n for n in p._nodes if n.schema.fn_name == "external_source"]
    assert es[0].py_object is _source
    assert pickle.loads(pickle.dumps(_source)) is _source
    x, y = _run(p)
    np.testing.assert_array_equal(x, [0, 2, 3, 4])
    np.testing.assert_array_equal(y, [5, 1, 2, 3])


def test_enable_conditionals_at_call_time_and_bool_outside():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=_values(4), batch=True)
        return x + 1 if x > 1 else x

    with pytest.raises(TypeError, match="enable_conditionals=True"):
        pipe()
    np.testing.assert_array_equal(_run(pipe(enable_conditionals=True))[0], [0, 1, 3, 4])


def test_serialized_conditional_pipeline_runs_the_same():
    from penstock import Pipeline

    @_cond_pipe(seed=5)
    def pipe():
        x = fn.random.uniform(range=(0, 4))
        if x > 2:
            y = fn.random.uniform(range=(10, 20))
        else:
            y = x * 2
        return y

    original = pipe()
    restored = Pipeline.deserialize(original.serialize())
    a, b = _run(original)[0], _run(restored)[0]
    np.testing.assert_array_equal(a, b)
    assert ((a >= 10) | (a < 4)).all() and (a >= 10).any()


def test_nested_functions_with_closures_are_converted_when_called():
    calls = []

    @_cond_pipe()
    def pipe():
        count = 0
        x = fn.external_source(source=_values(4), batch=True)

        def bump(v):
            nonlocal count
            count += 1
            if v > 1:
                out = v + 1
            else:
                out = v
            return out

        y = bump(bump(x))
        calls.append(count)
        return y

    np.testing.assert_array_equal(_run(pipe(batch_size=4))[0], [0, 1, 4, 5])
    assert calls == [2]


def test_branch_that_no_sample_reaches():
    @_cond_pipe()
    def pipe():
        x = fn.external_source(source=_values(4, np.float32), batch=True)
        if x > 100:  # never true: its operators get no samples and do not run
            m = fn.transforms.shear(shear=fn.stack(x, x))
            y = x + m[0, 1]
        else:
            y = x * 2
        return y

    np.testing.assert_array_equal(_run(pipe(batch_size=4))[0], [0, 2, 4, 6])


def test_constants_in_both_branches_fill_every_sample():
    @_cond_pipe()
    def pipe():
        pred = fn.external_source(lambda: [np.array(i % 3 == 0) for i in range(BATCH)])
        if pred:
            out = types.Constant(np.array([42]), device="cpu")
        else:
            out = types.Constant(np.array([0]), device="cpu")
        return out

    (out,) = _run(pipe())
    assert out.ravel().tolist() == [42 if i % 3 == 0 else 0 for i in range(BATCH)]


def test_the_conditional_operators_called_by_hand():
    # fn._conditional: what an `if` inserts, as DALI's tests call it; what reads a split side runs on its samples
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None)
    def pipe():
        value = fn.external_source(lambda: [np.array([i], np.int32) for i in range(BATCH)])
        pred = fn.external_source(lambda: [np.array(i % 2 == 0) for i in range(BATCH)])
        true, false = fn._conditional.split(value, predicate=pred)
        merged = fn._conditional.merge(true + 100, false, predicate=pred)
        return merged, fn._conditional.not_(pred), fn._conditional.validate_logical(
            pred, expression_name="and", expression_side="left")

    merged, negated, validated = _run(pipe())
    assert merged.ravel().tolist() == [i + 100 if i % 2 == 0 else i for i in range(BATCH)]
    assert negated.tolist() == [i % 2 == 1 for i in range(BATCH)]
    assert validated.tolist() == [i % 2 == 0 for i in range(BATCH)]
