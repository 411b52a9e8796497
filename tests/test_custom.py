"""Custom operators: a plugin library built here with the system's C compiler against
csrc/include/penstock_plugin.h (examples/custom_operator/plugin_ops.c) and loaded with
plugin_manager.load_library, and operators declared in Python with C++ kernels compiled at first
use (examples/custom_operator/scale_shift.py). Both reach fn, ops, the dynamic mode and the stubs,
check their arguments and report kernel failures naming the operator and sample. The GPU kernel
runs emulated on the host here (test_custom_emulated.py) and on a GPU in test_custom_gpu.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import penstock
import penstock.custom as custom
import penstock.experimental.dynamic as ndd
from penstock import _stubs, fn, ops, pipeline_def, plugin_manager, sysconfig, types
from penstock._registry import schemas, withdraw

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "custom_operator")
sys.path.insert(0, EXAMPLE)
import scale_shift  # noqa: E402

COMPILER = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(COMPILER is None or shutil.which("c++") is None, reason="needs a C and C++ compiler")


def build(folder, source: str, name: str = "libplugin.so", defines: tuple = ()) -> str:
    target = os.path.join(str(folder), name)
    subprocess.run([COMPILER, "-O2", *defines, *sysconfig.get_compile_flags(), *sysconfig.get_link_flags(), source,
                    "-o", target], check=True)
    return target


def unload(path: str) -> None:
    """Withdraws a loaded library's operators (so other tests see the built-in registry)."""
    for name in plugin_manager._LOADED.pop(os.path.realpath(path), []):
        withdraw(name)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    path = build(tmp_path_factory.mktemp("plugin"), os.path.join(EXAMPLE, "plugin_ops.c"))
    plugin_manager.load_library(path)
    yield path
    unload(path)


@pytest.fixture
def declared():
    """Names of operators a test declares in Python, withdrawn after it."""
    names: list[str] = []
    yield names
    for name in names:
        if name in schemas():
            withdraw(name)


def run(build_graph, batch_size: int):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None)
    def pipe():
        return build_graph()
    return pipe().run()


rng = np.random.default_rng(7)
IMAGES = [rng.integers(0, 256, shape, dtype=np.uint8) for shape in ((5, 7), (3, 2), (4, 4))]


def source(data, layout="HW"):
    return fn.external_source(lambda: data, batch=True, layout=layout)


# ---- the plugin library --------------------------------------------------------------------------

def test_library_operators_reach_fn_ops_and_the_dynamic_mode(plugin):
    assert plugin_manager.loaded_libraries()[os.path.realpath(plugin)] == ["example.Threshold", "example.Histogram"]
    assert schemas()["example.Threshold"].origin == os.path.abspath(plugin)
    assert callable(fn.example.threshold) and callable(fn.example.histogram)
    assert issubclass(ops.example.Histogram, object) and "Counts of a uint8" in ops.example.Histogram.__doc__
    out = ndd.example.histogram(ndd.as_batch(IMAGES), bins=4)
    np.testing.assert_array_equal(np.asarray(out.tensors[1].cpu()), np.histogram(IMAGES[1], bins=4, range=(0, 256))[0])
    assert "bins (int, per-sample) = 256" in fn.example.histogram.__doc__


def test_threshold_matches_numpy_with_per_sample_thresholds(plugin):
    thresholds = [np.float32(t) for t in (10, 128, 250)]
    floats = [(x / 255).astype(np.float32) for x in IMAGES]

    def graph():
        t = fn.external_source(lambda: thresholds, batch=True)
        return (fn.example.threshold(source(IMAGES), threshold=t, values=[3, 9]),
                fn.example.threshold(source(floats), threshold=0.5, values=[-1.0, 2.5]))
    ints, reals = run(graph, 3)
    for i, (x, f) in enumerate(zip(IMAGES, floats)):
        np.testing.assert_array_equal(ints.at(i), np.where(x >= thresholds[i], 9, 3).astype(np.uint8))
        np.testing.assert_array_equal(reals.at(i), np.where(f >= 0.5, 2.5, -1.0).astype(np.float32))
    assert ints.layout() == "HW" and ints.dtype == types.UINT8 and reals.dtype == types.FLOAT


def test_histogram_setup_plans_the_output(plugin):
    bins = [np.int32(b) for b in (1, 16, 256)]

    def graph():
        return fn.example.histogram(source(IMAGES), bins=fn.external_source(lambda: bins, batch=True))
    counts, = run(graph, 3)
    assert counts.shape() == [(1,), (16,), (256,)] and counts.dtype == types.INT64 and counts.layout() == ""
    for i, x in enumerate(IMAGES):
        np.testing.assert_array_equal(counts.at(i), np.histogram(x, bins=int(bins[i]), range=(0, 256))[0])


def test_ops_api_runs_the_library_operator(plugin):
    histogram = ops.example.Histogram(bins=2)
    counts, = run(lambda: histogram(source(IMAGES)), 3)
    assert counts.at(0).tolist() == [int((IMAGES[0] < 128).sum()), int((IMAGES[0] >= 128).sum())]


def test_kernel_failures_name_operator_and_sample(plugin):
    with pytest.raises(RuntimeError, match=r"(?s)sample 0.*example.histogram.*setup failed: bins must be in \[1, 256\], "
                                           r"got 300"):
        run(lambda: fn.example.histogram(source(IMAGES), bins=300), 3)
    with pytest.raises(RuntimeError, match=r"(?s)example.threshold.*run failed: input type 6 is not uint8 or float"):
        run(lambda: fn.example.threshold(source([x.astype(np.int32) for x in IMAGES])), 3)
    with pytest.raises(RuntimeError, match=r"(?s)example.threshold.*values needs 2 numbers per sample, got 3"):
        run(lambda: fn.example.threshold(source(IMAGES), values=[1, 2, 3]), 3)


def test_arguments_are_checked_like_built_in_ones(plugin):
    with pytest.raises(KeyError, match="example.histogram: unknown argument 'bin'"):
        fn.example.histogram(source(IMAGES), bin=3)
    with pytest.raises(TypeError, match="argument 'bins' expects int"):
        run(lambda: fn.example.histogram(source(IMAGES), bins="many"), 3)


def test_stubs_describe_library_operators(plugin):
    generated = _stubs.generate()
    stub = generated[_stubs.stub_path("fn", "example")]
    assert "def histogram(" in stub and "bins: int | DataNode = 256" in stub


def test_loading_is_idempotent_and_refuses_other_libraries(plugin, tmp_path):
    plugin_manager.load_library(plugin)  # loaded before: nothing happens
    src = tmp_path / "other.c"
    src.write_text("int unrelated(void) { return 1; }\n")
    with pytest.raises(RuntimeError, match="is not a penstock operator plugin"):
        plugin_manager.load_library(build(tmp_path, str(src), "libother.so"))
    with pytest.raises(RuntimeError, match="no such file"):
        plugin_manager.load_library(str(tmp_path / "missing.so"))


def test_abi_version_mismatch_is_refused(tmp_path):
    src = tmp_path / "old.c"
    src.write_text('#include "penstock_plugin.h"\nint penstock_plugin_abi_version(void) { return 99; }\n'
                   "int penstock_plugin_operators(const penstock_operator** ops) { *ops = 0; return 0; }\n")
    with pytest.raises(RuntimeError, match="built for penstock's plugin ABI version 99"):
        plugin_manager.load_library(build(tmp_path, str(src), "libold.so"))


def test_load_directory_loads_each_library(tmp_path):
    src = tmp_path / "one.c"
    src.write_text('#include "penstock_plugin.h"\n'
                   "static int run(penstock_context* c, penstock_batch* o) {\n"
                   "  const penstock_batch* in = &c->inputs[0];\n"
                   "  for (int64_t s = 0; s < c->num_samples; ++s) {\n"
                   "    int64_t n = 1; for (int d = 0; d < in->ndim; ++d) n *= in->shapes[s * in->ndim + d];\n"
                   "    for (int64_t i = 0; i < n; ++i) ((uint8_t*)o[0].data)[o[0].offsets[s] + i] = 255 - "
                   "((const uint8_t*)in->data)[in->offsets[s] + i];\n  }\n  return 0;\n}\n"
                   "static const penstock_operator decl[] = {{\"DirInvert\", \"255 - x\", 1, 1, 1, 0, 0, 0, run}};\n"
                   "int penstock_plugin_abi_version(void) { return PENSTOCK_PLUGIN_ABI_VERSION; }\n"
                   "int penstock_plugin_operators(const penstock_operator** ops) { *ops = decl; return 1; }\n")
    folder = tmp_path / "plugins"
    folder.mkdir()
    path = build(folder, str(src), "libdir_invert.so")
    plugin_manager.load_directory(str(folder))
    try:
        out, = run(lambda: fn.dir_invert(source(IMAGES)), 3)
        np.testing.assert_array_equal(out.at(2), 255 - IMAGES[2])
    finally:
        unload(path)
    assert not hasattr(fn, "dir_invert") and "DirInvert" not in schemas()


def test_sysconfig_points_at_the_header():
    assert os.path.exists(os.path.join(sysconfig.get_include_dir(), "penstock_plugin.h"))
    assert f"-I{sysconfig.get_include_dir()}" in sysconfig.get_compile_flags()
    assert sysconfig.get_link_flags() == ["-shared"]


# ---- operators declared in Python ----------------------------------------------------------------

def test_python_operator_runs_its_cpp_kernel(declared):
    declared.append("example.ScaleShift")
    scale_shift_fn = scale_shift.declare()
    data = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, 3), (4,), (0,))]
    data = [d.reshape(-1, 1) if d.ndim == 1 else d for d in data]
    data[2] = np.zeros((0, 3), np.float32)
    scales = [np.float32(s) for s in (2.0, -0.5, 3.0)]

    def graph():
        s = fn.external_source(lambda: scales, batch=True)
        return scale_shift_fn(source(data, "AB"), scale=s, shift=0.25)
    out, = run(graph, 3)
    for i, d in enumerate(data):
        np.testing.assert_array_equal(out.at(i), d * scales[i] + np.float32(0.25))
    assert out.layout() == "AB" and fn.example.scale_shift is scale_shift_fn
    assert ops.example.ScaleShift(shift=1.0) is not None
    batch = ndd.example.scale_shift(ndd.as_batch([np.ones((2, 2), np.float32)]), scale=4.0)
    np.testing.assert_array_equal(np.asarray(batch.tensors[0].cpu()), np.full((2, 2), 4, np.float32))
    assert schemas()["example.ScaleShift"].devices == ("cpu", "gpu")


def test_python_operator_refuses_input_types_it_does_not_take(declared):
    declared.append("example.ScaleShift")
    scale_shift.declare()
    with pytest.raises(RuntimeError, match=r"(?s)example.scale_shift.*input 0 is UINT8; it takes FLOAT"):
        run(lambda: fn.example.scale_shift(source(IMAGES)), 3)


ROW_SUMS = r"""
extern "C" int sums(penstock_context* ctx, penstock_batch* out) {
  const penstock_batch& in = ctx->inputs[0];
  for (int64_t s = 0; s < ctx->num_samples; ++s) {
    const int64_t rows = in.shapes[s * 2], cols = in.shapes[s * 2 + 1];
    const uint8_t* x = static_cast<const uint8_t*>(in.data) + in.offsets[s];
    int32_t* y = static_cast<int32_t*>(out[0].data) + out[0].offsets[s];
    for (int64_t r = 0; r < rows; ++r) {
      int32_t sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += x[r * cols + c];
      y[r] = sum * int32_t(ctx->args[0].ints[s]) + int32_t(ctx->args[1].count ? ctx->args[1].ints[s] : 0);
    }
  }
  return 0;
}
"""


def test_shape_rules_types_and_optional_arguments(declared):
    declared.append("RowSums")
    row_sums = custom.operator(
        "RowSums", doc="per-row sums", cpu=ROW_SUMS, cpu_entry_name="sums",
        args=[custom.Argument("weight", "int", 1), custom.Argument("offset", "int", None)],
        outputs=[custom.Output(dtype=types.INT32, shape=lambda shapes, args: shapes[0][:, :1], layout="R")])
    out, = run(lambda: (row_sums(source(IMAGES), weight=2),), 3)
    with_offset, = run(lambda: (row_sums(source(IMAGES), offset=5),), 3)
    for i, x in enumerate(IMAGES):
        np.testing.assert_array_equal(out.at(i), 2 * x.sum(axis=1, dtype=np.int32))
        np.testing.assert_array_equal(with_offset.at(i), x.sum(axis=1, dtype=np.int32) + 5)
    assert out.dtype == types.INT32 and out.layout() == "R" and out.shape()[0] == (5,)


def test_compile_errors_and_redeclaring(declared):
    declared.append("Broken")
    custom.operator("Broken", cpu="extern \"C\" int run(penstock_context* c, penstock_batch* o) { return nope; }")
    with pytest.raises(RuntimeError, match=r"(?s)broken: compiling its C\+\+ kernel failed.*nope"):
        run(lambda: fn.broken(source(IMAGES)), 3)
    with pytest.raises(RuntimeError, match="operator Broken is already declared; replace=True"):
        custom.operator("Broken", cpu="")
    custom.operator("Broken", replace=True, cpu="""#include <cstdio>
        extern "C" int run(penstock_context* c, penstock_batch* o) {
          snprintf(c->error, c->error_size, "refused"); c->error_sample = 1; return 3; }""")
    with pytest.raises(RuntimeError, match=r"(?s)sample 1.*broken.*run failed: refused"):
        run(lambda: fn.broken(source(IMAGES)), 3)
    with pytest.raises(RuntimeError, match="operator Resize is already declared"):
        custom.operator("Resize", cpu="", replace=True)


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="give a CPU kernel"):
        custom.operator("Nothing")
    with pytest.raises(ValueError, match="has type 'complex'"):
        custom.operator("Bad", cpu="", args=[custom.Argument("x", "complex")])
    with pytest.raises(NotImplementedError, match=r"string arguments \['mode'\] cannot reach a GPU kernel"):
        custom.operator("Bad", gpu="", args=[custom.Argument("mode", "str", "a")])
    with pytest.raises(ValueError, match="every output needs a shape rule"):
        custom.operator("Bad", cpu="", inputs=0)
    assert "Bad" not in schemas() and "Nothing" not in schemas()


def test_compiled_kernels_are_cached_on_disk(tmp_path, monkeypatch):
    from penstock.operators import custom as impl
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))
    code = 'extern "C" int run(penstock_context*, penstock_batch*) { return 0; }'
    first = impl.compile_cpp(code, "cached")
    assert first.startswith(str(tmp_path)) and os.path.exists(first)
    stamp = os.path.getmtime(first)
    assert impl.compile_cpp(code, "cached") == first and os.path.getmtime(first) == stamp
    assert impl.compile_cpp(code + "\n", "cached") != first


def test_example_runs():
    done = subprocess.run([sys.executable, os.path.join(EXAMPLE, "run.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[cpu] histogram of sample 0 (8 bins)" in done.stdout and "[cpu] scale_shift of sample 0: min -0.500" in done.stdout
