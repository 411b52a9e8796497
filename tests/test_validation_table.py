"""Argument validation over the whole registry, table-driven: for every registered operator and
every declared argument, a value of the wrong type, an out-of-range value and an unknown name give
an error when the graph is defined (before anything runs) that names the operator, the argument,
what was expected and what was given. Both entry points are checked: ``fn.*`` inside a pipeline
definition and the ``ops.*`` constructor."""
import numpy as np
import pytest

from penstock import Pipeline, fn, ops, tfrecord, types
from penstock._registry import ArgType, schemas

# a clearly wrong value per argument type (never convertible), and how it is shown in the error
WRONG_TYPE = {
    ArgType.INT: "seven",
    ArgType.FLOAT: "1.5x",
    ArgType.BOOL: "yes",
    ArgType.STR: 3.5,
    ArgType.LAYOUT: 3.5,
    ArgType.DTYPE: "not_a_dtype",
    ArgType.IMAGE_TYPE: "RGBX",
    ArgType.INTERP_TYPE: "bicubic-ish",
    ArgType.INT_LIST: ["a", "b"],
    ArgType.FLOAT_LIST: ["x", 1.0],
    ArgType.STR_LIST: [1, 2],
    ArgType.BOOL_LIST: ["maybe"],
    ArgType.CALLABLE: 42,
}
# values of the right kind that no argument of the type can hold
OUT_OF_RANGE = {
    ArgType.INT: 2 ** 70,            # arguments are 64-bit
    ArgType.BOOL: 2,
    ArgType.DTYPE: 9999,
    ArgType.IMAGE_TYPE: 99,
    ArgType.INTERP_TYPE: 99,
    ArgType.INT_LIST: [2 ** 70, 1],
    ArgType.BOOL_LIST: [3, 0],
}


def _public():
    return sorted((s for s in schemas().values() if not s.internal), key=lambda s: s.name)


def _cases(table):
    for s in _public():
        for arg in s.arguments.values():
            if arg.type in table:
                yield pytest.param(s, arg, table[arg.type], id=f"{s.fn_name}.{arg.name}")


def _fn_of(schema):
    f = fn
    for part in schema.fn_name.split("."):
        f = getattr(f, part)
    return f


def _ops_class(schema):
    mod = ops
    for part in [p for p in schema.module.split(".") if p]:
        mod = getattr(mod, part)
    return getattr(mod, schema.class_name)


# a valid value per type, given for required arguments so that only the one under test is wrong
VALID = {
    ArgType.INT: 1, ArgType.FLOAT: 1.0, ArgType.BOOL: False, ArgType.STR: "", ArgType.LAYOUT: "",
    ArgType.DTYPE: types.FLOAT, ArgType.IMAGE_TYPE: types.RGB, ArgType.INTERP_TYPE: types.INTERP_LINEAR,
    ArgType.INT_LIST: [1], ArgType.FLOAT_LIST: [1.0], ArgType.STR_LIST: [""], ArgType.BOOL_LIST: [False],
    ArgType.CALLABLE: lambda *samples: samples[0] if samples else None, ArgType.ANY: 1,
}


# required arguments whose type (ANY) says too little for a generic valid value
VALID_BY_ARGUMENT = {("readers.TFRecord", "features"): {"x": tfrecord.FixedLenFeature([], tfrecord.int64, 0)}}


def _with_required(schema, kwargs):
    required = {a.name: VALID_BY_ARGUMENT.get((schema.name, a.name), VALID[a.type])
                for a in schema.arguments.values() if a.required}
    if "cpu" not in schema.devices:  # GPU-only operators (readers.video): defined for their device
        required["device"] = schema.devices[0]
    return {**required, **kwargs}


def _define(schema, kwargs):
    """Calls fn.<op>(inputs..., **kwargs) while a pipeline is being defined (nothing runs)."""
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        n = max(schema.min_inputs, 0)
        inputs = [fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)] * 2) for _ in range(n)]
        _fn_of(schema)(*inputs, **_with_required(schema, kwargs))


def _construct(schema, kwargs):
    """The ops.* constructor with these arguments (it checks them before any call)."""
    return _ops_class(schema)(**_with_required(schema, kwargs))


def _shown(value) -> str:
    """How the error shows the given value: a list by its first wrong element."""
    return repr(value[0] if isinstance(value, list) else value)


def _check(exc_info, schema, arg, value, expected_type=True):
    text = str(exc_info.value)
    assert schema.fn_name in text, text
    assert f"'{arg.name}'" in text or f" {arg.name} " in text, text
    if getattr(schema, "fn_impl", None) is not None:
        return  # a custom front end (external_source) checks how its arguments combine first
    if expected_type:
        assert arg.type.value in text, text
    assert _shown(value) in text or str(value) in text, text


@pytest.mark.parametrize("schema, arg, value", list(_cases(WRONG_TYPE)))
def test_wrong_type_is_a_definition_error(schema, arg, value):
    with pytest.raises((TypeError, ValueError)) as info:
        _define(schema, {arg.name: value})
    _check(info, schema, arg, value)
    if schema.name != "ExternalSource":  # its ops class takes arguments at call
        with pytest.raises((TypeError, ValueError)) as info:
            _construct(schema, {arg.name: value})
        _check(info, schema, arg, value)


@pytest.mark.parametrize("schema, arg, value", list(_cases(OUT_OF_RANGE)))
def test_out_of_range_is_a_definition_error(schema, arg, value):
    with pytest.raises((TypeError, ValueError)) as info:
        _define(schema, {arg.name: value})
    _check(info, schema, arg, value, expected_type=False)
    if schema.name != "ExternalSource":
        with pytest.raises((TypeError, ValueError)) as info:
            _construct(schema, {arg.name: value})
        _check(info, schema, arg, value, expected_type=False)


@pytest.mark.parametrize("schema", _public(), ids=lambda s: s.fn_name)
def test_unknown_argument_is_a_definition_error(schema):
    with pytest.raises(TypeError) as info:
        _define(schema, {"no_such_argument": 1})
    text = str(info.value)
    assert schema.fn_name in text and "'no_such_argument'" in text and "Known arguments" in text
    if schema.name != "ExternalSource":
        with pytest.raises(TypeError, match=f"{schema.fn_name}: unknown argument 'no_such_argument'"):
            _construct(schema, {"no_such_argument": 1})


def test_error_shows_expected_and_given():
    with pytest.raises(TypeError, match=r"resize: argument 'resize_x' expects float: could not convert string to "
                                        r"float: '1.5x'"):  # a string is converted as DALI converts it
        _define(schemas()["Resize"], {"resize_x": "1.5x"})


def test_edge_values_of_the_right_type_pass():
    _define(schemas()["Resize"], {"resize_x": 1e9, "minibatch_size": 2 ** 63 - 1, "antialias": 1})


def _ranged():
    for s in _public():
        for arg in s.arguments.values():
            if arg.range is not None:
                lo, hi = arg.range
                step = 1 if arg.type is ArgType.INT else 0.5
                for bad in ([lo - step] if lo is not None else []) + ([hi + step] if hi is not None else []):
                    yield pytest.param(s, arg, bad, id=f"{s.fn_name}.{arg.name}={bad}")


@pytest.mark.parametrize("schema, arg, value", list(_ranged()))
def test_declared_range_is_checked_at_definition(schema, arg, value):
    with pytest.raises(ValueError) as info:
        _define(schema, {arg.name: value})
    _check(info, schema, arg, value)
    assert "in [" in str(info.value)  # the accepted range is shown


def test_declared_ranges_exist_and_bounds_pass():
    ranged = [(s, a) for s in _public() for a in s.arguments.values() if a.range is not None]
    assert len(ranged) >= 5
    for s, a in ranged:
        for bound in a.range:
            if bound is not None:
                _define(s, {a.name: bound})
