"""Pipeline semantics run as short scripts on penstock and DALI 2.4: each scenario drives a pipeline
(feeding, running, resetting, asking it questions) and records what every step gave: a value, or
the error it raised. DALI's test modules rely on these (``module::test`` in each scenario's doc).
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

import numpy as np

# the classes a raised error is compared by (the first of its MRO among these)
ERROR_CLASSES = (StopIteration, KeyError, IndexError, TypeError, ValueError, NotImplementedError, RuntimeError)


def observe(step: Callable[[], Any]) -> tuple:
    """('ok', value) or ('error', the names of ERROR_CLASSES that catch it, message) of one step;
    arrays become lists."""
    try:
        value = step()
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return ("error", [c.__name__ for c in type(e).__mro__ if c in ERROR_CLASSES] or ["Exception"], str(e))
    return ("ok", _plain(value))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return (str(value.dtype), value.tolist())
    if hasattr(value, "at"):  # a TensorList
        return [_plain(np.array(value.at(i))) for i in range(len(value))]
    if hasattr(type(value), "__members__"):  # an enum (DALIDataType ...): by name
        return value.name
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _batch(k: int) -> list:
    return [np.array([k, 10 * k], np.int64), np.array([k + 1, 10 * k + 1], np.int64)]


def feed_ahead_then_run(lib: Any) -> list:
    """Reference page 002: feed prefetch_queue_depth (2) batches ahead, then run() twice; the third
    run() has nothing fed: that iteration fails, and only when its outputs are asked for."""
    @lib.pipeline_def
    def pipe():
        return lib.fn.external_source(name="my_inp")

    p = pipe(batch_size=2, num_threads=1, device_id=None)
    steps = [observe(lambda: p.input_feed_count("my_inp"))]
    for k in range(2):
        p.feed_input("my_inp", _batch(k))
    for _ in range(3):
        steps += [observe(lambda: p.run()[0]), observe(lambda: p.input_feed_count("my_inp"))]
    return steps


def feed_each_run_at_depth_one(lib: Any) -> list:
    """With prefetch_queue_depth=1 a batch fed after the runs before it is the next run's."""
    @lib.pipeline_def
    def pipe():
        return lib.fn.external_source(name="my_inp")

    p = pipe(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)
    steps = []
    for k in range(3):
        p.feed_input("my_inp", _batch(k))
        steps += [observe(lambda: p.input_feed_count("my_inp")), observe(lambda: p.run()[0])]
    return steps


def declared_output_types(lib: Any) -> list:
    """output_dtype()/output_ndim(): the constructor's declarations per output, before a build too."""
    types = lib.types

    @lib.pipeline_def
    def pipe():
        return lib.fn.external_source(name="a", dtype=types.INT64, ndim=1), lib.fn.external_source(name="b")

    steps = []
    for kwargs in ({}, {"output_dtype": types.INT64, "output_ndim": 1},
                   {"output_dtype": [types.INT64, None], "output_ndim": [1, None]}):
        p = pipe(batch_size=2, num_threads=1, device_id=None, **kwargs)
        steps += [observe(p.output_dtype), observe(p.output_ndim)]
        p.build()
        steps += [observe(p.output_dtype), observe(p.output_ndim)]
    return steps


def feed_a_pruned_source(lib: Any) -> list:
    """test_external_source_numpy::test_external_source_fail_missing_output: iter_setup feeds a
    source that is no output (pruned): KeyError."""
    class ExternalSourcePipeline(lib.Pipeline):
        def __init__(self):
            super().__init__(3, 1, None)
            self.input = lib.ops.ExternalSource()
            self.input_2 = lib.ops.ExternalSource()

        def define_graph(self):
            self.batch = self.input()
            self.batch_2 = self.input_2()
            return [self.batch]

        def iter_setup(self):
            batch = np.zeros([3, 4, 5])
            self.feed_input(self.batch, batch)
            self.feed_input(self.batch_2, batch)

    pipe = ExternalSourcePipeline()
    return [observe(pipe.run), observe(lambda: pipe.input_feed_count("no_such_input"))]


def cycle_a_generator(lib: Any) -> list:
    """test_external_source_numpy::test_external_source_generator_cycle_error."""
    def gen():
        yield [np.zeros(2, np.float32)]

    with lib.Pipeline(1, 1, None):
        return [observe(lambda: lib.fn.external_source(gen(), cycle=False) is not None),
                observe(lambda: lib.fn.external_source(gen(), cycle=True))]


def more_shards_than_samples(lib: Any) -> list:
    """test_reader_file::test_invalid_number_of_shards."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "a"))
        for i in range(3):
            with open(os.path.join(root, "a", f"{i}.jpg"), "wb") as f:
                f.write(b"x")

        @lib.pipeline_def(batch_size=1, device_id=None, num_threads=1)
        def pipe():
            files, labels = lib.fn.readers.file(file_root=root, shard_id=0, num_shards=9999)
            return files, labels

        return [observe(pipe().build)]


def do_not_convert_a_definition(lib: Any) -> list:
    """test_pipeline_decorator::test_pipeline_def_with_do_not_convert: either order is refused."""
    from importlib import import_module
    do_not_convert = import_module(f"{lib.__name__}.pipeline").do_not_convert

    def both_orders():
        def definition():
            return 42
        yield lambda: lib.pipeline_def(do_not_convert(definition))
        yield lambda: do_not_convert(lib.pipeline_def(definition))

    return [observe(step) for step in both_orders()]


def cycle_raise_two_sources(lib: Any) -> list:
    """test_external_source_numpy::test_external_source_collection_cycling_raise: a list and a
    generator function, both cycle="raise": each epoch ends with a bare StopIteration, and reset()
    rewinds each source where it is."""
    batches = [[np.array([1.5, 2.5], np.float32)], [np.array([-1, 3.5, 4.5], np.float32)]]

    def batch_gen():
        yield from batches

    pipe = lib.Pipeline(1, 1, None, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(lib.fn.external_source(batches, cycle="raise"),
                         lib.fn.external_source(batch_gen, cycle="raise"))
    steps = []
    for _ in range(3):
        steps += [observe(pipe.run) for _ in batches]
        steps += [observe(pipe.run), observe(pipe.reset)]
    return steps


def python_function_of_a_constant(lib: Any) -> list:
    """test_python_function::test_delete_pipe_while_function_running: constants as inputs."""
    steps = []
    for value in (lib.types.Constant(0), 5, np.array([1, 2], np.int16), [1.5, 2.5]):
        with lib.Pipeline(batch_size=1, num_threads=1, device_id=None) as pipe:
            pipe.set_outputs(lib.fn.python_function(value, function=lambda x: x))
            steps.append(observe(lambda: pipe.run()[0]))
        del pipe
    return steps


def explicit_conditional_operators(lib: Any) -> list:
    """test_dali_cpu_only::test_conditional: fn._conditional's split, merge, not_ and validate_logical."""
    @lib.pipeline_def
    def pipe():
        value = lib.types.Constant(np.array([42]), device="cpu")
        pred = lib.fn.external_source(lambda: [np.array(v) for v in (True, False, True, True, False)])
        validated = lib.fn._conditional.validate_logical(pred, expression_name="or", expression_side="right")
        true, false = lib.fn._conditional.split(value, predicate=pred)
        true = true + 10
        merged = lib.fn._conditional.merge(true, false, predicate=pred)
        return merged, lib.fn._conditional.not_(pred), validated

    p = pipe(batch_size=5, num_threads=1, device_id=None)
    return [observe(p.run)]


def conditional_on_constants(lib: Any) -> list:
    """test_dali_cpu_only::test_conditional: a data-dependent `if` on constants, constants in its branches."""
    types = lib.types

    @lib.pipeline_def(enable_conditionals=True)
    def pipe():
        true = types.Constant(np.array(True), device="cpu")
        false = types.Constant(np.array(False), device="cpu")
        if true and true or not false:
            output = types.Constant(np.array([42]), device="cpu")
        else:
            output = types.Constant(np.array([0]), device="cpu")
        return output

    return [observe(pipe(batch_size=5, num_threads=1, device_id=None).run)]


def _one_op(lib: Any, make: Callable, data: list, layout: str | None = None) -> Callable:
    """A step running ``make(lib, source)`` once on ``data`` (a batch)."""
    def step():
        with lib.Pipeline(batch_size=len(data), num_threads=1, device_id=None) as pipe:
            src = lib.fn.external_source(lambda: data, layout=layout)
            pipe.set_outputs(make(lib, src))
            return pipe.run()[0]
    return step


def reshape_trailing_wildcard(lib: Any) -> list:
    """test_reshape::test_trailing_wildcard: one more rel_shape entry than input dims, a trailing -1,
    adds an inferred innermost dim; a wildcard elsewhere or another extra entry is refused."""
    data = [np.arange(24, dtype=np.uint8).reshape(4, 6), np.arange(12, dtype=np.uint8).reshape(2, 6)]
    return [observe(_one_op(lib, lambda lib, x, rel=rel: lib.fn.reshape(x, rel_shape=rel), data))
            for rel in ([1, 1, -1], [0.5, 1, -1], [1, -1, 1], [1, 1, 2], [1, 1, 1, -1])]


def multi_paste_with_channels(lib: Any) -> list:
    """test_dali_cpu_only::test_multi_paste_cpu: output_size given as (H, W, C)."""
    data = [np.full((10, 20, 3), i + 1, np.uint8) for i in range(2)]
    return [observe(_one_op(lib, lambda lib, x, size=size: lib.fn.multi_paste(x, in_ids=np.array([0, 1]),
                                                                             output_size=size), data, "HWC"))
            for size in ([10, 20, 3], [12, 22, 3], [12, 22])]


def crop_transform_of_an_empty_box(lib: Any) -> list:
    """test_dali_cpu_only::test_affine_crop_cpu: a source box of zero extent gives infinite scales."""
    def step(**kwargs):
        with lib.Pipeline(batch_size=1, num_threads=1, device_id=None) as pipe:
            pipe.set_outputs(lib.fn.transforms.crop(**kwargs))
            return pipe.run()[0]
    return [observe(lambda: step(from_start=(0., 1.), from_end=(1., 1.), to_start=(0.2, 0.3), to_end=(0.8, 0.5))),
            observe(lambda: step(from_start=(1., 0.), from_end=(1., 1.)))]


def cast_to_a_type_name(lib: Any) -> list:
    """fn.cast(x, dtype="float") and other names or Python types: refused (DALI's "float" is 32-bit,
    numpy's 64-bit); DALI's types are taken."""
    data = [np.array([1.5, -2.0], np.float32)]
    return [observe(_one_op(lib, lambda lib, x, dtype=dtype: lib.fn.cast(x, dtype=dtype), data))
            for dtype in ("float", "float32", "int", float, lib.types.FLOAT64)]


def debug_mode_array_of_samples(lib: Any) -> list:
    """In debug mode an array given to an operator holds its samples along its first axis: 3 of them
    are more than a batch of 2 (DALI 2.4's debug mode runs no operator here without a CUDA driver,
    so only this refusal shows how it splits the array)."""
    from importlib import import_module
    experimental = import_module(f"{lib.__name__}.pipeline.experimental")

    @experimental.pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def pipe():
        return lib.fn.cast(np.zeros((3, 4, 3), np.uint8), dtype=lib.types.INT32)

    return [observe(pipe().run)]


SCENARIOS: dict[str, Callable[[Any], list]] = {f.__name__: f for f in (
    feed_ahead_then_run, feed_each_run_at_depth_one, declared_output_types, feed_a_pruned_source,
    cycle_a_generator, more_shards_than_samples, do_not_convert_a_definition, cycle_raise_two_sources,
    python_function_of_a_constant, explicit_conditional_operators, conditional_on_constants, reshape_trailing_wildcard,
    multi_paste_with_channels, crop_transform_of_an_empty_box, cast_to_a_type_name,
    debug_mode_array_of_samples)}

# scenarios whose errors must carry DALI's words (DALI's tests match them)
WORDS = {"feed_ahead_then_run", "feed_a_pruned_source", "cycle_a_generator", "more_shards_than_samples",
         "do_not_convert_a_definition"}


def run_dali_scenario(name: str) -> list:
    """``name`` on DALI (in the harness's worker process)."""
    import nvidia.dali as dali
    return SCENARIOS[name](dali)
