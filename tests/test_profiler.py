"""penstock.profiler: per-operator time and bytes of the measured batches, the bottleneck sentence,
the timeline; readable operator names in executor_statistics."""
import json
import time

import numpy as np
import pytest

from penstock import fn, pipeline_def, profiler, types

SAMPLES = [np.full((48, 64, 3), v, np.uint8) for v in range(8)]


@pipeline_def(batch_size=8, num_threads=2, device_id=None)
def resize_pipeline():
    images = fn.external_source(source=lambda: SAMPLES, layout="HWC")
    small = fn.resize(images, resize_x=32, resize_y=16)
    return fn.resize(small, resize_x=8, resize_y=8), fn.cast(small, dtype=types.FLOAT)


def test_unnamed_operators_have_readable_names_in_statistics():
    pipe = resize_pipeline()
    pipe.run()
    assert sorted(pipe.executor_statistics()) == ["cast#1", "external_source#1", "resize#1", "resize#2"]


def test_profile_counts_the_measured_batches_only_with_their_bytes(tmp_path):
    result = profiler.profile(resize_pipeline, batches=6, warmup=3, trace=str(tmp_path / "t.json"))
    by_name = {op.name: op for op in result.operators}
    assert set(by_name) == {"cast#1", "external_source#1", "resize#1", "resize#2"}
    assert all(op.runs == 6 for op in result.operators)
    assert by_name["resize#1"].bytes_per_batch >= 8 * 16 * 32 * 3  # its output buffer, at least the samples
    assert by_name["cast#1"].bytes_per_batch >= 8 * 16 * 32 * 3 * 4
    assert sum(op.share for op in result.operators) == pytest.approx(1.0)
    assert [op.seconds for op in result.operators] == sorted((op.seconds for op in result.operators), reverse=True)
    assert result.batch_size == 8 and result.queue_depth == 2 and 0 <= result.wait_fraction <= 1
    assert result.gpu_utilisation is None and result.gpu_note == "no GPU operators"
    report = result.report()
    assert "resize#2" in report and f"Bottleneck: {result.bottleneck}" in report
    events = json.load(open(tmp_path / "t.json"))["traceEvents"]
    assert sorted({e["args"]["iteration"] for e in events if e["ph"] == "X" and e["name"] == "cast#1"}) == \
        list(range(3, 9))  # iterations 0-2 were the warm-up


def test_a_slow_python_operator_is_named_the_bottleneck_with_advice():
    def slow(x):
        time.sleep(0.02)
        return x

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, exec_pipelined=False, exec_async=False)
    def pipe():
        x = fn.external_source(source=lambda: SAMPLES[:2], layout="HWC")
        return fn.python_function(fn.resize(x, resize_x=8, resize_y=8), function=slow)

    result = profiler.profile(pipe, batches=3, warmup=1)
    assert result.operators[0].name == "python_function#1" and result.operators[0].share > 0.9
    assert result.bottleneck.startswith("python_function#1 is ") and "GIL" in result.bottleneck


def test_a_consumer_that_never_waits_is_named_the_bottleneck():
    result = profiler.ProfileResult(10, 8, 2, 1.0, [], wait_fraction=0.02, ready_when_asked=2.0, queue_depth=2,
                                    cpu_cores_busy=0.5, cpu_count=2, gpu_utilisation=None, gpu_note="", bottleneck="")
    assert profiler.bottleneck(result).startswith("the consumer: a batch was ready 98% of the time")


def test_load_target_takes_a_script_or_a_module(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text("def make():\n    return 42\n")
    assert profiler.load_target(f"{script}:make")() == 42
    assert profiler.load_target("tests.test_profiler:resize_pipeline") is not None
    with pytest.raises(ValueError, match="SCRIPT_OR_MODULE:PIPELINE_FN"):
        profiler.load_target("no_function_given")
