import pytest

from penstock import fn, ops, pipeline_def, types


def _build(graph):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return graph()
    return p()


def test_unknown_argument_names_argument_and_operator():
    with pytest.raises(Exception) as e:
        _build(lambda: fn.random.uniform(rnage=[0, 1]))
    msg = str(e.value)
    assert "rnage" in msg and "uniform" in msg


def test_unknown_argument_ops_api():
    with pytest.raises(Exception) as e:
        ops.Cast(dtype=types.FLOAT, bogus_arg=3)
    assert "bogus_arg" in str(e.value) and "ast" in str(e.value).lower()


def test_wrong_type_names_expected_type():
    with pytest.raises(TypeError) as e:
        _build(lambda: fn.random.uniform(range="abc"))
    assert "float" in str(e.value)
    with pytest.raises(TypeError) as e:
        _build(lambda: fn.cast(types.Constant([1, 2]), dtype="not a type"))
    assert "DALIDataType" in str(e.value)


def test_missing_required_argument():
    with pytest.raises(Exception) as e:
        _build(lambda: fn.cast(types.Constant([1, 2])))
    assert "dtype" in str(e.value)


def test_fn_ops_names_exist():
    for f in ("cast", "reshape", "transpose", "cat", "stack", "copy", "external_source"):
        assert callable(getattr(fn, f))
    assert callable(fn.readers.file)
    assert callable(fn.random.uniform) and callable(fn.random.normal)
    assert callable(fn.random.coin_flip)
    for c in ("Cast", "Reshape", "Transpose", "Cat", "Stack", "Copy", "ExternalSource"):
        assert isinstance(getattr(ops, c), type)
    assert ops.readers.File is not None and ops.random.Uniform is not None


def test_legacy_aliases():
    assert ops.FileReader is not None
    assert ops.Uniform is not None
    assert ops.CoinFlip is not None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fn_and_ops_agree(tmp_path):
    for i in range(3):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
    files = [str(tmp_path / f"{i}.bin") for i in range(3)]

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        d1, l1 = fn.readers.file(files=files)
        d2, l2 = ops.readers.File(files=files)()
        d3, l3 = ops.FileReader(files=files)()
        c1 = fn.cast(l1, dtype=types.FLOAT)
        c2 = ops.Cast(dtype=types.FLOAT)(l2)
        return d1, d2, d3, l1, l2, l3, c1, c2

    outs = p().run()
    for i in range(3):
        assert outs[0].at(i).tolist() == outs[1].at(i).tolist() == outs[2].at(i).tolist() == [i]
        assert outs[3].at(i).tolist() == outs[4].at(i).tolist() == outs[5].at(i).tolist() == [i]
        assert outs[6].at(i).tolist() == outs[7].at(i).tolist() == [float(i)]


def test_ops_init_and_call_conflict():
    with pytest.raises(Exception):
        _build(lambda: ops.Cast(dtype=types.FLOAT)(types.Constant([1]), dtype=types.INT32))


def test_per_sample_arg_not_allowed():
    # 'dtype' of cast is not a tensor argument
    with pytest.raises(TypeError):
        _build(lambda: fn.cast(types.Constant([1]), dtype=fn.random.uniform()))


def test_input_count_validated():
    with pytest.raises(ValueError):
        _build(lambda: fn.cast(types.Constant([1]), types.Constant([2]), dtype=types.FLOAT))


def test_schema_names():
    from penstock import _registry
    s = _registry.get_schema("readers__File")
    assert s.fn_name == "readers.file"
    assert _registry.snake_case("BbFlip") == "bb_flip"
    assert _registry.snake_case("ImageDecoderRandomCrop") == "image_decoder_random_crop"


def test_every_declared_device_has_a_registered_kernel():
    from penstock._registry import _KERNELS, schemas
    missing = [(name, device) for name, schema in schemas().items() for device in schema.devices
               if (name, device) not in _KERNELS]
    assert missing == []


def test_argument_errors_are_catchable_as_dali_raises_them():
    """DALI raises RuntimeError from its backend (missing argument, bad value at build), ValueError
    from argument conversion and KeyError for an unknown argument; ours are all of those and keep
    the TypeError/ValueError Python code expects, naming operator, argument, expected and given."""
    import numpy as np
    from penstock import fn, pipeline_def

    def build(graph):
        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def p():
            return graph(fn.external_source(source=lambda: [np.zeros((2, 2, 3), np.uint8)], layout="HWC"))
        p().build()

    cases = [
        (lambda x: fn.resize(x, foo=1), (TypeError, KeyError, RuntimeError), ["resize", "foo"]),
        (lambda x: fn.resize(x, resize_x="abc"), (TypeError, ValueError, RuntimeError),
         ["resize", "resize_x", "float", "abc"]),
        (lambda x: fn.cast(x), (TypeError, RuntimeError), ["cast", "dtype", "missing"]),
        (lambda x: fn.resize(x, resize_x=2, mode="bogus"), (ValueError, RuntimeError), ["resize", "mode", "bogus"]),
    ]
    for graph, classes, words in cases:
        with pytest.raises(Exception) as e:
            build(graph)
        assert all(isinstance(e.value, c) for c in classes), (type(e.value).__mro__, classes)
        assert all(w in str(e.value) for w in words), str(e.value)
